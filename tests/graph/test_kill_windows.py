"""The kill-window suite: a paper saga killed from inside its checkpointer, then finished.

Each case is one process that dies right after the N-th ``put_writes`` (the step's writes are
stored, its checkpoint is not) or the N-th ``put`` (the checkpoint is written, the next step
has not begun), for every N of the success path and of the failure path
(``fail_at=summarizer``), by ``os._exit`` and by ``SIGKILL``. A fleet is one backend and one
driver (``invoke`` on the sync savers, ``ainvoke`` on the async ones); its cases are forked by
one warmed-up ``tests.support.kill_worker fleet`` and share a database.

Then, from NEW processes: the ``os._exit`` cases are resumed one by one by id (with the
fleet's driver), and one ``recover`` finishes whatever is left (the ``SIGKILL`` cases). In
the ``compensate`` fleets, ``recover --compensate`` rolls back every unfinished saga instead.
Every saga must end ``completed`` with its three files, or ``rolled_back`` with none.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.kill_saver import KILL_EXIT_CODE
from tests.support.services import saga_database

pytestmark = [pytest.mark.slow, pytest.mark.kill_fleet]

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "examples" / "papers" / "complete_paper.md"
FILES = {"validation.txt", "review.txt", "summary.txt"}


def worker(*args: str) -> Any:
    """``python -m tests.support.kill_worker ARGS`` in a new interpreter; its JSON output."""
    proc = subprocess.run(
        [sys.executable, "-m", "tests.support.kill_worker", *args],
        cwd=REPO,
        env=os.environ | {"PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@dataclass
class Fleet:
    finish: str
    outputs: Path
    counts: dict[str, dict[str, int]]
    exits: dict[str, int]
    resumed: dict[str, dict[str, Any]]
    """Views the resume process returned, by saga id (forward fleets' ``os._exit`` cases)."""
    recovered: dict[str, dict[str, Any]]
    final: dict[str, dict[str, Any]]
    """Every saga's view, read by one more new process at the end."""
    unfinished_after: list[dict[str, Any]]
    """What a second ``recover`` found to do (nothing)."""


FLEETS = [
    ("sqlite", "sync", "forward"),
    ("sqlite", "async", "forward"),
    ("postgres", "sync", "forward"),
    ("postgres", "async", "forward"),
    ("sqlite", "sync", "compensate"),
    ("postgres", "async", "compensate"),
    ("sqlite+group", "sync", "forward"),
    ("sqlite+group", "async", "forward"),
    ("sqlite+group", "async", "compensate"),
    ("postgres+group", "sync", "forward"),
    ("postgres+group", "async", "forward"),
    ("postgres+group", "async", "compensate"),
]


@pytest.fixture(scope="module", params=FLEETS, ids=lambda p: "-".join(p))
def fleet(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    backend, driver, finish = request.param
    root = tmp_path_factory.mktemp(f"kill-{backend}-{driver}-{finish}")
    outputs = root / "outputs"
    with saga_database(backend, root) as db:
        common = ["--db", db, "--outputs", str(outputs)]
        drive = ["--async"] if driver == "async" else []
        killed = worker("fleet", *common, *drive, "--paper", str(PAPER))
        exits: dict[str, int] = killed["exits"]
        resumed: dict[str, dict[str, Any]] = {}
        if finish == "forward":
            by_id = sorted(s for s in exits if s.endswith("-exit"))
            resumed = {v["saga_id"]: v for v in worker("resume", *by_id, *common, *drive)}
        compensate = ["--compensate"] if finish == "compensate" else []
        recovered = {v["saga_id"]: v for v in worker("recover", *common, *compensate)}
        again = worker("recover", *common)
        final = {v["saga_id"]: v for v in worker("status", *common)}
        yield Fleet(finish, outputs, killed["counts"], exits, resumed, recovered, final, again)


def _files(fleet: Fleet, saga_id: str) -> set[str]:
    folder = fleet.outputs / saga_id
    return {p.name for p in folder.iterdir()} if folder.exists() else set()


def test_every_call_of_both_paths_was_a_kill_window(fleet: Fleet) -> None:
    # The success path checkpoints its input and each of three steps (plus its end); the
    # failure path adds the failed step and two compensation supersteps (the failed step's
    # cleanup shares the first one's).
    assert fleet.counts["ok"]["put_writes"] >= 4 and fleet.counts["fail"]["put_writes"] >= 6
    for saga_id, status in fleet.exits.items():
        died = -signal.SIGKILL if saga_id.endswith("-sigkill") else KILL_EXIT_CODE
        assert status == died, saga_id
    expected = sum(2 * n for path in fleet.counts.values() for n in path.values())
    assert len(fleet.exits) == expected


def test_each_killed_saga_ends_all_or_nothing(fleet: Fleet) -> None:
    wrong = {}
    for saga_id in fleet.exits:
        view = fleet.final[saga_id]
        files = _files(fleet, saga_id)
        if view["status"] == "completed":
            ok = files == FILES and view["completed"] == ["validator", "reviewer", "summarizer"]
            ok = ok and all(Path(p).is_file() for p in view["outputs"].values())
        else:
            ok = view["status"] == "rolled_back" and not files and not view["outputs"]
        if not ok:
            wrong[saga_id] = (view["status"], sorted(files), view.get("recover_error"))
    assert wrong == {}


def test_the_failure_path_never_completes_and_forward_recovery_completes_the_success_path(
    fleet: Fleet,
) -> None:
    for saga_id in fleet.exits:
        status = fleet.final[saga_id]["status"]
        compensated = fleet.final[saga_id]["compensated"]
        if saga_id.startswith("fail-"):
            assert status == "rolled_back", saga_id
            # Undone newest first; rolled back early, only the steps that had begun.
            undo = ["summarizer", "reviewer", "validator"]
            assert compensated == undo[len(undo) - len(compensated) :], saga_id
            if fleet.finish == "forward":
                assert compensated == undo, saga_id
        elif fleet.finish == "forward":
            assert status == "completed", saga_id


def test_resume_alone_finishes_each_saga_it_is_given(fleet: Fleet) -> None:
    if fleet.finish != "forward":
        assert fleet.resumed == {}, "compensate fleets are finished by recover --compensate"
        return
    assert set(fleet.resumed) == {s for s in fleet.exits if s.endswith("-exit")}
    unfinished = {s: v["status"] for s, v in fleet.resumed.items() if v["next"]}
    assert unfinished == {}
    assert not set(fleet.resumed) & set(fleet.recovered), "recover found nothing resume left"


def test_recover_finishes_every_unfinished_saga_and_a_second_recover_finds_none(
    fleet: Fleet,
) -> None:
    assert all("recover_error" not in v for v in fleet.recovered.values())
    assert fleet.unfinished_after == []
    # Killed before any step began (right after the input checkpoint) is among them.
    assert "ok-put-1-sigkill" in fleet.recovered
