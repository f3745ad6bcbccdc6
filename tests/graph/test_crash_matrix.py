"""The crash matrix: a real process killed at every boundary, then recovered by a new process.

Boundaries, for a three-step saga ``s1 -> s2 -> s3`` whose steps journal a keyed effect and
write ``<outputs>/<saga_id>/<step>.txt`` through the paper agents' OutputStore:

- forward: inside each step's execute, before and after its effect is committed;
- backward (the saga fails at ``s3``): inside each compensation, before and after its undo.

Each boundary is one process that dies there: ``os._exit`` at the ``before`` boundaries,
``SIGKILL`` at the ``after`` ones. The processes of one *fleet* (a checkpointer backend and a
recovery mode) are forked together by a warmed-up ``tests.support.crash_worker fleet``, so a case
costs milliseconds, and they share a database, as crashed production processes would. Then
ONE new process runs ``recover_sagas`` over it, forward or ``compensate=True``. Every case
must end all-or-nothing: completed with every effect and file once, or rolled back with every
effect undone once, in strictly reverse order, and no file left behind.
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

from sagagraph import new_saga_id, open_checkpointer, saga_config, unfinished_sagas
from sagagraph.agents.store import LEDGER_DIR
from tests.support.services import saga_database
from tests.support.toy_saga import CRASH_EXIT_CODE, Journal, saga_app, toy_saga

pytestmark = [pytest.mark.slow, pytest.mark.kill_fleet]

REPO = Path(__file__).resolve().parents[2]
STEPS = ("s1", "s2", "s3")


@dataclass(frozen=True)
class Boundary:
    """Where one worker dies: in ``step``'s ``action``, ``before`` or ``after`` its effect."""

    step: str
    action: str
    moment: str

    @property
    def saga_id(self) -> str:
        return f"{self.step}-{self.action}-{self.moment}"

    @property
    def sigkill(self) -> bool:
        return self.moment == "after"

    @property
    def crash_spec(self) -> str:
        return f"{self.step}:{self.action}:{self.moment}" + (":sigkill" if self.sigkill else "")

    @property
    def fail_at(self) -> str | None:
        """Backward boundaries need a saga that compensates: it fails at its last step."""
        return STEPS[-1] if self.action == "compensate" else None

    def __str__(self) -> str:
        return self.saga_id


BOUNDARIES = [Boundary(s, "execute", m) for s in STEPS for m in ("before", "after")] + [
    Boundary(s, "compensate", m) for s in reversed(STEPS) for m in ("before", "after")
]


def worker(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m tests.support.crash_worker ARGS`` in a new interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "tests.support.crash_worker", *args],
        cwd=REPO,
        env=os.environ | {"PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )


@dataclass
class Fleet:
    """Sagas killed at every boundary in one database, then recovered by one new process."""

    backend: str
    mode: str
    db: str
    journal: Journal
    outputs: Path
    exits: dict[str, int]
    """Worker exit status by saga id (CRASH_EXIT_CODE, or -SIGKILL)."""
    stopped: dict[str, dict[str, Any]]
    """What the checkpointer held for each saga after its worker died."""
    recovered: dict[str, dict[str, Any]]
    """The view ``recover_sagas`` returned for each saga."""


def _stopped_states(db: str, journal: Journal) -> dict[str, dict[str, Any]]:
    states = {}
    with saga_app(toy_saga(len(STEPS), journal), db) as app:
        for boundary in BOUNDARIES:
            snap = app.get_state(saga_config(boundary.saga_id))
            states[boundary.saga_id] = {
                "next": list(snap.next),
                "status": snap.values.get("status") or "running",  # None before the first step
                "results": sorted(snap.values.get("results") or {}),
                "compensated": list(snap.values.get("compensated") or []),
            }
    return states


@pytest.fixture(
    scope="module",
    params=[
        ("sqlite", "forward"),
        ("sqlite", "compensate"),
        ("postgres", "forward"),
        ("postgres", "compensate"),
        ("sqlite+group", "forward"),
        ("sqlite+group", "compensate"),
        ("postgres+group", "forward"),
        ("postgres+group", "compensate"),
    ],
    ids=lambda p: "-".join(p),
)
def fleet(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    backend, mode = request.param
    root = tmp_path_factory.mktemp(f"fleet-{backend}-{mode}")
    with saga_database(backend, root) as db:
        journal = Journal(root / "journal.sqlite")
        outputs = root / "outputs"
        common = ["--db", db, "--journal", str(journal.path), "--outputs", str(outputs)]
        common += ["--steps", str(len(STEPS))]

        with open_checkpointer(db):
            # Creates the tables first: concurrent first-time setup() on a fresh PostgreSQL
            # database races (duplicate key in checkpoint_migrations), see the report.
            pass
        cases = [
            f"{b.saga_id}:{b.crash_spec}" + (f"@{b.fail_at}" if b.fail_at else "")
            for b in BOUNDARIES
        ]
        proc = worker("fleet", *common, *(f"--case={case}" for case in cases))
        assert proc.returncode == 0, proc.stderr
        exits = json.loads(proc.stdout)
        stopped = _stopped_states(db, journal)

        recover = ["recover", *common] + (["--compensate"] if mode == "compensate" else [])
        proc = worker(*recover)
        assert proc.returncode == 0, proc.stderr
        recovered = {view["saga_id"]: view for view in json.loads(proc.stdout)}
        yield Fleet(backend, mode, db, journal, outputs, exits, stopped, recovered)


# --- what each case must end as -------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    status: str
    compensated: list[str]
    executed: list[str]
    """Execute calls in order; the step that was running when the worker died runs twice."""
    committed: list[str]
    """Steps whose execute committed (one ``ok`` event each)."""
    undone: list[str]
    """Compensate calls in order; the one that was running when the worker died runs twice."""
    effects: dict[str, tuple[str, int, int]]
    files: set[str]


def _restart(order: list[str], step: str) -> int:
    """Where a rollback killed in ``step``'s compensation starts again, in ``order``.

    Each compensation is a checkpointed superstep of its own: killed in one, the rollback
    runs that one again (it is idempotent) and never one that was checkpointed before it.
    """
    return order.index(step)


def expected(boundary: Boundary, mode: str) -> Expected:
    k = STEPS.index(boundary.step)
    if boundary.action == "execute" and mode == "forward":
        return Expected(
            status="completed",
            compensated=[],
            executed=[*STEPS[: k + 1], *STEPS[k:]],
            committed=list(STEPS),
            undone=[],
            effects={s: ("done", 1, 0) for s in STEPS},
            files={f"{s}.txt" for s in STEPS},
        )
    if boundary.action == "execute":
        # Rolled back from where it stopped: the step in flight first, with result=None.
        started = list(STEPS[: k + 1])
        effects = {s: ("undone", 1, 1) for s in started}
        if boundary.moment == "before":
            effects[boundary.step] = ("undone", 0, 0)
        return Expected(
            status="rolled_back",
            compensated=started[::-1],
            executed=started,
            committed=started[:-1],
            undone=started[::-1],
            effects=effects,
            files=set(),
        )
    # Backward: s3 failed (injected, before its participant ran); s3, s2, s1 are undone.
    order = list(reversed(STEPS))
    restart = _restart(order, boundary.step)
    undone = order[: order.index(boundary.step) + 1] + order[restart:]
    return Expected(
        status="rolled_back",
        compensated=order,
        executed=list(STEPS[:-1]),
        committed=list(STEPS[:-1]),
        undone=undone,
        effects={**{s: ("undone", 1, 1) for s in STEPS[:-1]}, STEPS[-1]: ("undone", 0, 0)},
        files=set(),
    )


# --- the matrix -----------------------------------------------------------------------------


@pytest.mark.parametrize("boundary", BOUNDARIES, ids=str)
def test_the_worker_died_at_the_boundary_with_its_saga_unfinished(
    fleet: Fleet, boundary: Boundary
) -> None:
    died = -signal.SIGKILL if boundary.sigkill else CRASH_EXIT_CODE
    assert fleet.exits[boundary.saga_id] == died
    stopped = fleet.stopped[boundary.saga_id]
    k = STEPS.index(boundary.step)
    if boundary.action == "execute":
        # With durability="sync" the checkpoint names the step that was running, and only
        # the steps before it are committed.
        assert stopped["next"] == [boundary.step]
        assert stopped["results"] == list(STEPS[:k])
        assert stopped["status"] == "running"
    else:
        order = list(reversed(STEPS))
        assert stopped["next"] == ["compensate"]
        assert stopped["status"] == "compensating"
        # Each compensation is checkpointed on its own: the state holds those that ended.
        assert stopped["compensated"] == order[: _restart(order, boundary.step)]


@pytest.mark.parametrize("boundary", BOUNDARIES, ids=str)
def test_recovery_ends_all_or_nothing_with_each_effect_applied_once(
    fleet: Fleet, boundary: Boundary
) -> None:
    want = expected(boundary, fleet.mode)
    view = fleet.recovered[boundary.saga_id]
    saga_id = boundary.saga_id

    assert view["status"] == want.status, view.get("recover_error")
    assert view["compensated"] == want.compensated
    assert view["completed"] == (list(STEPS) if want.status == "completed" else [])
    assert fleet.journal.calls(saga_id, "execute") == want.executed
    assert fleet.journal.calls(saga_id, "compensate") == want.undone
    assert fleet.journal.effects(saga_id) == want.effects
    # The audit trail counts each commit and each compensation once, however often it ran.
    ok = [(e["step"], e["action"]) for e in view["events"] if e["outcome"] == "ok"]
    assert [s for s, a in ok if a == "execute"] == want.committed
    assert [s for s, a in ok if a == "compensate"] == want.compensated
    folder = fleet.outputs / saga_id
    files = {p.name for p in folder.iterdir()} if folder.exists() else set()
    assert files == want.files, "no orphan file, no missing file"
    if want.files:
        assert view["outputs"] == {s: str(folder / f"{s}.txt") for s in STEPS}


def test_nothing_but_the_completed_sagas_files_is_left_under_outputs(fleet: Fleet) -> None:
    left = sorted(
        p.relative_to(fleet.outputs).as_posix()
        for p in fleet.outputs.rglob("*")
        if p.is_file() and LEDGER_DIR not in p.parts
    )
    completed = sorted(b.saga_id for b in BOUNDARIES if expected(b, fleet.mode).files)
    assert left == [f"{saga_id}/{s}.txt" for saga_id in completed for s in STEPS]


def test_a_second_recovery_finds_nothing_left_to_do(fleet: Fleet) -> None:
    assert set(fleet.recovered) == {b.saga_id for b in BOUNDARIES}
    with saga_app(toy_saga(len(STEPS), fleet.journal), fleet.db) as app:
        assert unfinished_sagas(app) == []


# --- a crash during the recovery itself -------------------------------------------------------


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_recovery_killed_half_way_is_finished_by_the_next_one(
    tmp_path: Path, backend: str
) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    outputs = tmp_path / "outputs"
    forward, back = new_saga_id("forward"), new_saga_id("back")
    with saga_database(backend, tmp_path) as db:
        common = ["--db", db, "--journal", str(journal.path), "--outputs", str(outputs)]
        common += ["--steps", "3"]
        died = worker("run", *common, "--saga-id", forward, "--crash", "s1:execute:after")
        assert died.returncode == CRASH_EXIT_CODE, died.stderr
        died = worker(
            "run", *common, "--saga-id", back, "--fail-at", "s3",
            "--crash", "s3:compensate:after",
        )  # fmt: skip
        assert died.returncode == CRASH_EXIT_CODE, died.stderr

        # Sagas are recovered in id order: the first recovery redoes s3's cleanup of `back`
        # (its process died before that compensation's checkpoint), then dies after s2's
        # undo; the second redoes only s2's, finishes `back`, then `forward`, and no effect
        # is applied or undone twice.
        first = worker("recover", *common, "--crash", "s2:compensate:after:sigkill")
        assert first.returncode == -signal.SIGKILL, first.stderr
        second = worker("recover", *common)
        assert second.returncode == 0, second.stderr
        views = {v["saga_id"]: v for v in json.loads(second.stdout)}

    assert views[forward]["status"] == "completed"
    assert views[back]["status"] == "rolled_back"
    assert views[back]["compensated"] == ["s3", "s2", "s1"]
    assert journal.effects(forward) == {s: ("done", 1, 0) for s in STEPS}
    assert journal.effects(back) == {
        "s1": ("undone", 1, 1),
        "s2": ("undone", 1, 1),
        "s3": ("undone", 0, 0),
    }
    assert journal.calls(back, "compensate") == ["s3", "s3", "s2", "s2", "s1"]
    assert sorted(p.name for p in (outputs / forward).iterdir()) == ["s1.txt", "s2.txt", "s3.txt"]
    assert not (outputs / back).exists()
