"""Isolation: concurrent sagas never read or delete each other's records, and one saga is
driven by one process (and one thread) at a time.

- 1,000 sagas with random faults run on 16 threads over one SQLite checkpointer and one
  output folder; exactly the completed sagas' files remain, each holding its own saga's id.
- A saga's lease: ``recover`` skips a saga that a live process is running, and finishes it
  once that process is killed; a second thread cannot drive a saga the first one runs.
- An unsafe saga id is refused by every entry point before it can become part of a path.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from sagagraph import (
    Retry,
    new_saga_id,
    open_checkpointer,
    recover_sagas,
    resolve_saga,
    resume_saga,
    rollback_saga,
    run_saga,
    saga_status,
)
from sagagraph.agents.store import LEDGER_DIR, OutputStore
from sagagraph.errors import InvalidSagaIdError, SagaBusyError
from sagagraph.graph.leases import saga_lease
from sagagraph.graph.recover import recover_saga
from tests.support.services import fresh_postgres_database
from tests.support.toy_saga import (
    HOLDING,
    Journal,
    Plan,
    saga_app,
    step_names,
    stored_views,
    toy_saga,
)

REPO = Path(__file__).resolve().parents[2]
SAGAS = 1_000
THREADS = 16
STEPS = 3


def random_input(rng: random.Random) -> dict[str, Any]:
    """One saga's faults: a permanent failure, transient failures, flaky compensations."""
    names = step_names(STEPS)
    saga_input: dict[str, Any] = {
        "transient": {s: rng.choice([0, 0, 0, 1, 2, 3]) for s in names},
        "undo_transient": {s: rng.choice([0, 0, 1, 2]) for s in names},
    }
    if rng.random() < 0.3:
        saga_input["fail"] = rng.choice(names)
    return saga_input


@pytest.mark.slow
def test_a_thousand_concurrent_sagas_leave_exactly_the_completed_sagas_outputs(
    tmp_path: Path,
) -> None:
    rng = random.Random(6)
    journal = Journal(tmp_path / "journal.sqlite")
    outputs = tmp_path / "outputs"
    definition = toy_saga(
        STEPS,
        journal,
        Plan(),
        retry=Retry(max_attempts=3),
        compensation_retry=Retry(max_attempts=3),
        outputs=outputs,
    )
    inputs = {f"c{i:04d}": random_input(rng) for i in range(SAGAS)}
    with saga_app(definition, f"sqlite:///{tmp_path / 'sagas.sqlite'}") as app:

        def run(saga_id: str) -> dict[str, Any]:
            return run_saga(app, inputs[saga_id], saga_id=saga_id)

        with ThreadPoolExecutor(THREADS) as pool:
            views = dict(zip(inputs, pool.map(run, inputs), strict=True))
        listed = {v["saga_id"]: v["status"] for v in stored_views(app)}

    statuses = Counter(v["status"] for v in views.values())
    assert set(statuses) == {"completed", "rolled_back"}, statuses
    assert statuses["completed"] > 100 and statuses["rolled_back"] > 100, "both outcomes occur"
    assert listed == {saga_id: v["status"] for saga_id, v in views.items()}
    completed = sorted(s for s, v in views.items() if v["status"] == "completed")

    # Exactly the completed sagas' files remain, and each holds its own saga's id.
    left = sorted(
        p.relative_to(outputs).as_posix()
        for p in outputs.rglob("*")
        if p.is_file() and LEDGER_DIR not in p.parts
    )
    assert left == [f"{saga_id}/{s}.txt" for saga_id in completed for s in step_names(STEPS)]
    for saga_id in completed:
        for step in step_names(STEPS):
            assert (outputs / saga_id / f"{step}.txt").read_text() == f"{saga_id}\n"

    for saga_id, view in views.items():
        effects = journal.effects(saga_id)
        if view["status"] == "completed":
            assert effects == {s: ("done", 1, 0) for s in step_names(STEPS)}
        else:
            assert all(
                state == "undone" and undone == applied
                for state, applied, undone in effects.values()
            )
            assert view["compensated"] == sorted(effects, reverse=True)
        # Each saga's trail is its own: its steps only, never another saga's.
        assert {e["step"] for e in view["events"]} <= {*step_names(STEPS), "saga"}
        assert all(saga_id in (path or "") for path in view["outputs"].values())
    assert journal.saga_ids() == set(inputs)


# --- leases ---------------------------------------------------------------------------------


def own_database(backend: str, tmp_path: Path) -> AbstractContextManager[str]:
    """A checkpointer no other test writes to: ``recover_sagas`` scans every saga in it."""
    if backend == "sqlite":
        return nullcontext(f"sqlite:///{tmp_path / 'sagas.sqlite'}")
    return fresh_postgres_database()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_recover_skips_a_saga_a_live_process_holds_and_finishes_it_once_that_process_dies(
    tmp_path: Path, backend: str
) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    saga_id = new_saga_id("held")
    with own_database(backend, tmp_path) as db:
        holder = subprocess.Popen(
            [
                *(sys.executable, "-m", "tests.support.crash_worker", "run", "--db", db),
                *("--journal", str(journal.path), "--steps", "3", "--saga-id", saga_id),
                *("--crash", "s2:execute:after:hold"),
            ],
            cwd=REPO,
            env=os.environ | {"PYTHONPATH": str(REPO)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline().strip() == HOLDING, holder.stderr
            with saga_app(toy_saga(3, journal), db) as app:
                # The holder is alive, inside s2: recover must not run the saga a second time.
                [skipped] = recover_sagas(app)
                with pytest.raises(SagaBusyError, match="in use by another process"):
                    resume_saga(app, saga_id)
                holder.send_signal(signal.SIGKILL)
                assert holder.wait(30) == -signal.SIGKILL
                # The kernel (SQLite) or the server (PostgreSQL) dropped the dead process's lease.
                [recovered] = recover_sagas(app)
        finally:
            holder.kill()
            holder.communicate(timeout=30)

    assert skipped["status"] == "running"
    assert "in use by another process" in skipped["recover_skipped"]
    assert recovered["status"] == "completed"
    assert journal.calls(saga_id) == ["s1", "s2", "s2", "s3"]
    assert journal.effects(saga_id) == {s: ("done", 1, 0) for s in step_names(3)}


def test_a_second_thread_cannot_drive_a_saga_the_first_one_is_running(
    tmp_path: Path, checkpointer_url: str
) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    release = threading.Event()
    definition = toy_saga(3, journal, Plan(hang={"s2": release}))
    saga_id = new_saga_id("busy")
    with saga_app(definition, checkpointer_url) as app:
        first = ThreadPoolExecutor(1)
        running = first.submit(run_saga, app, {}, saga_id=saga_id)
        try:
            for _ in range(200):  # until the first thread is inside s2
                if journal.calls(saga_id) == ["s1", "s2"]:
                    break
                threading.Event().wait(0.05)
            with pytest.raises(SagaBusyError, match="in use by this process"):
                resume_saga(app, saga_id)
            assert recover_sagas(app)[0]["recover_skipped"]
        finally:
            release.set()
            view = running.result(30)
            first.shutdown()
        assert saga_status(app, saga_id)["status"] == "completed"
    assert view["status"] == "completed"
    assert journal.calls(saga_id) == ["s1", "s2", "s3"]


def test_two_savers_on_one_sqlite_file_share_its_leases(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    with open_checkpointer(url) as one, open_checkpointer(url) as two:
        with saga_lease(one, "shared"):
            with pytest.raises(SagaBusyError), saga_lease(two, "shared"):
                pass
            with saga_lease(two, "other"):
                pass
        with saga_lease(two, "shared"):
            pass  # released when the first block ended


# --- saga ids never become a path they should not -------------------------------------------


@pytest.mark.parametrize(
    "bad_id",
    [
        "../escape",
        "a/b",
        "/abs",
        "..",
        ".hidden",
        "nul\x00byte",
        "tab\there",
        "x" * 129,
        "trailing-newline\n",
    ],
)
def test_an_unsafe_saga_id_is_refused_by_every_entry_point_before_any_path_exists(
    tmp_path: Path, bad_id: str
) -> None:
    outputs = tmp_path / "outputs"
    journal = Journal(tmp_path / "journal.sqlite")
    with saga_app(toy_saga(2, journal, outputs=outputs)) as app:

        def take_lease() -> None:
            with saga_lease(app.checkpointer, bad_id):
                pass

        entry_points: list[Callable[[], object]] = [
            lambda: run_saga(app, {}, saga_id=bad_id),
            lambda: resume_saga(app, bad_id),
            lambda: resolve_saga(app, bad_id, "retry"),
            lambda: rollback_saga(app, bad_id),
            lambda: recover_saga(app, bad_id),
            lambda: saga_status(app, bad_id),
            take_lease,
            lambda: OutputStore(outputs).write(f"{bad_id}:s1", "s1.txt", "x"),
            lambda: OutputStore(outputs).compensate(f"{bad_id}:s1"),
        ]
        for call in entry_points:
            with pytest.raises(InvalidSagaIdError) as refused:
                call()
            assert "\n" not in str(refused.value)
        assert stored_views(app) == []
    assert not outputs.exists()
    assert journal.saga_ids() == set()


def test_a_saver_that_names_a_lease_file_gets_file_leases(tmp_path: Path) -> None:
    """How a saver that is not a SqliteSaver (an async one) joins the SQLite kind of lease."""
    one, two = InMemorySaver(), InMemorySaver()
    for saver in (one, two):
        saver.lease_file = str(tmp_path / "sagas.sqlite.leases")  # type: ignore[attr-defined]
    with saga_lease(one, "shared"), pytest.raises(SagaBusyError), saga_lease(two, "shared"):
        pass
    assert (tmp_path / "sagas.sqlite.leases").exists()
