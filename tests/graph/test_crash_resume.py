"""A saga interrupted mid-step resumes by its id, elsewhere, without re-running committed steps.

In-process tests stop the graph with a ``BaseException`` (the engine compensates on
``Exception``, so only something like a kill or ``KeyboardInterrupt`` leaves a step unfinished).
Subprocess tests kill a real worker with ``os._exit`` and resume from a new worker, over SQLite
and PostgreSQL. Before resuming, each test checks that ``state.next`` names the interrupted node.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sagagraph import (
    InputError,
    new_saga_id,
    resolve_saga,
    resume_saga,
    run_saga,
    saga_config,
    saga_status,
)
from sagagraph.graph.recover import recover_sagas, rollback_saga
from tests.support.services import fresh_postgres_database
from tests.support.toy_saga import (
    CRASH_EXIT_CODE,
    Crash,
    Journal,
    Plan,
    SimulatedCrash,
    rebuilt,
    saga_app,
    toy_saga,
)

# Crashes a real subprocess and resumes from a new one.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal.sqlite")


@pytest.fixture
def own_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A checkpointer no other test writes to, for tests that scan every saga in it."""
    kind = request.param
    if kind == "memory":
        yield "memory://"
    elif kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'own.sqlite'}"
    else:
        with fresh_postgres_database() as url:
            yield url


# --- in-process: the graph stops on a BaseException ---------------------------------------------


@pytest.mark.parametrize("moment", ["before", "after"])
def test_a_step_interrupted_once_completes_when_resumed_from_a_new_app(
    journal: Journal, checkpointer_url: str, moment: str
) -> None:
    plan = Plan(crash=Crash("s2", "execute", moment))  # type: ignore[arg-type]
    definition = toy_saga(3, journal, plan)
    saga_id = new_saga_id("once")
    with saga_app(definition, checkpointer_url) as app:
        with pytest.raises(SimulatedCrash):
            run_saga(app, {}, saga_id=saga_id)
        state = app.get_state(saga_config(saga_id))
        assert state.next == ("s2",)
        assert list(state.values["results"]) == ["s1"]
        if checkpointer_url == "memory://":
            view = resume_saga(rebuilt(app, definition), saga_id)
    if checkpointer_url != "memory://":
        with saga_app(definition, checkpointer_url) as fresh:
            view = resume_saga(fresh, saga_id)

    assert view["status"] == "completed"
    assert view["completed"] == ["s1", "s2", "s3"]
    # s1 committed before the interruption and is not run again; s2 runs again (at least
    # once), and its keyed effect is applied once.
    assert journal.calls(saga_id) == ["s1", "s2", "s2", "s3"]
    assert journal.effects(saga_id) == {f"s{i}": ("done", 1, 0) for i in (1, 2, 3)}
    assert [e["step"] for e in view["events"] if e["action"] == "execute"] == ["s1", "s2", "s3"]


@pytest.mark.parametrize("own_database", ["memory", "sqlite", "postgres"], indirect=True)
def test_recover_resumes_unfinished_sagas_and_leaves_the_rest(
    journal: Journal, own_database: str
) -> None:
    plan = Plan(crash=Crash("s2", "execute", "after"), broken_compensations={"s1"})
    definition = toy_saga(3, journal, plan)
    crashed, stuck, done = (new_saga_id(p) for p in ("crashed", "stuck", "done"))
    with saga_app(definition, own_database) as app:
        with pytest.raises(SimulatedCrash):
            run_saga(app, {}, saga_id=crashed)
        run_saga(app, {"fail": "s2"}, saga_id=stuck)  # waits for an operator
        run_saga(app, {}, saga_id=done)
        views = {v["saga_id"]: v for v in recover_sagas(app)}
        stuck_view = saga_status(app, stuck)

    assert set(views) == {crashed}
    assert views[crashed]["status"] == "completed"
    assert stuck_view["waiting_for_operator"] is True
    assert journal.calls(done) == ["s1", "s2", "s3"]


def test_rollback_compensates_the_interrupted_step_first(journal: Journal) -> None:
    plan = Plan(crash=Crash("s3", "execute", "after"))
    definition = toy_saga(4, journal, plan)
    with saga_app(definition) as app:
        with pytest.raises(SimulatedCrash):
            run_saga(app, {}, saga_id="back")
        view = rollback_saga(app, "back", reason="operator: not today")
        with pytest.raises(InputError, match="already rolled_back"):
            rollback_saga(app, "back")

    assert view["status"] == "rolled_back"
    assert view["reason"] == "operator: not today"
    assert view["compensated"] == ["s3", "s2", "s1"]
    # s3 died after writing: compensated with result=None, it still undoes what its key wrote.
    assert journal.compensate_results("back") == {"s3": False, "s2": True, "s1": True}
    assert journal.effects("back")["s3"] == ("undone", 1, 1)
    assert "s4" not in journal.calls("back")
    rollback = [e for e in view["events"] if e["outcome"] == "rollback"]
    assert [(e["step"], e["action"]) for e in rollback] == [("s3", "resolve")]


def test_rollback_refuses_a_saga_waiting_for_an_operator(journal: Journal) -> None:
    plan = Plan(broken_compensations={"s1"})
    with saga_app(toy_saga(2, journal, plan)) as app:
        run_saga(app, {"fail": "s2"}, saga_id="wait")
        with pytest.raises(InputError, match="use resolve"):
            rollback_saga(app, "wait")
        plan.broken_compensations.clear()
        assert resolve_saga(app, "wait", "retry")["status"] == "rolled_back"


# --- subprocesses: a worker killed with os._exit, resumed by another ---------------------------


def worker(*args: str, expect: int = 0) -> Any:
    """Run ``tests.support.crash_worker`` in a new interpreter; return the JSON it prints."""
    env = os.environ | {"PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.support.crash_worker", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == expect, proc.stderr
    return json.loads(proc.stdout) if expect == 0 else None


@pytest.mark.parametrize("moment", ["before", "after"])
def test_a_killed_worker_resumes_in_a_new_process(
    tmp_path: Path, journal: Journal, durable_checkpointer_url: str, moment: str
) -> None:
    saga_id = new_saga_id("killed")
    common = ["--db", durable_checkpointer_url, "--journal", str(journal.path), "--steps", "4"]
    worker(
        "run", *common, "--saga-id", saga_id, "--crash", f"s3:execute:{moment}",
        expect=CRASH_EXIT_CODE,
    )  # fmt: skip

    with saga_app(toy_saga(4, journal), durable_checkpointer_url) as app:
        state = app.get_state(saga_config(saga_id))
    assert state.next == ("s3",)
    assert list(state.values["results"]) == ["s1", "s2"]
    assert state.values["status"] == "running"

    view = worker("resume", *common, "--saga-id", saga_id)

    assert view["status"] == "completed"
    assert view["completed"] == ["s1", "s2", "s3", "s4"]
    assert journal.calls(saga_id) == ["s1", "s2", "s3", "s3", "s4"]
    assert journal.effects(saga_id) == {f"s{i}": ("done", 1, 0) for i in range(1, 5)}


def test_a_worker_killed_while_compensating_finishes_the_rollback_in_a_new_process(
    journal: Journal, durable_checkpointer_url: str
) -> None:
    saga_id = new_saga_id("undo")
    common = ["--db", durable_checkpointer_url, "--journal", str(journal.path), "--steps", "4"]
    worker(
        "run", *common, "--saga-id", saga_id, "--fail-at", "s4",
        "--crash", "s2:compensate:after", expect=CRASH_EXIT_CODE,
    )  # fmt: skip

    with saga_app(toy_saga(4, journal), durable_checkpointer_url) as app:
        state = app.get_state(saga_config(saga_id))
    assert state.next == ("compensate",)
    assert state.values["status"] == "compensating"
    # Each compensation is checkpointed on its own: s4's cleanup and s3's undo are recorded.
    assert state.values["compensated"] == ["s4", "s3"]
    assert journal.effects(saga_id)["s2"] == ("undone", 1, 1), "killed after its undo"

    view = worker("resume", *common, "--saga-id", saga_id)

    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["s4", "s3", "s2", "s1"]
    assert journal.calls(saga_id, "compensate") == ["s4", "s3", "s2", "s2", "s1"]
    assert journal.effects(saga_id) == {
        "s1": ("undone", 1, 1),
        "s2": ("undone", 1, 1),
        "s3": ("undone", 1, 1),
        "s4": ("undone", 0, 0),
    }
    assert journal.calls(saga_id) == ["s1", "s2", "s3"]


@pytest.mark.parametrize("own_database", ["sqlite", "postgres"], indirect=True)
def test_recover_compensate_rolls_back_a_killed_worker_from_a_new_process(
    journal: Journal, own_database: str
) -> None:
    saga_id = new_saga_id("recover")
    common = ["--db", own_database, "--journal", str(journal.path), "--steps", "4"]
    worker(
        "run", *common, "--saga-id", saga_id, "--crash", "s3:execute:after",
        expect=CRASH_EXIT_CODE,
    )  # fmt: skip

    views = worker("recover", *common, "--compensate")

    assert [v["saga_id"] for v in views] == [saga_id]
    view = views[0]
    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["s3", "s2", "s1"]
    assert journal.effects(saga_id)["s3"] == ("undone", 1, 1)
    assert "s4" not in journal.calls(saga_id)
