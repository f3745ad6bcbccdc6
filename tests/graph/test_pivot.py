"""Step kinds around the pivot: compensatable steps, the go/no-go pivot, retriable steps.

Before the pivot a failure compensates; past it the saga only goes forward (retries, then an
operator); a real process SIGKILLed on either side is recovered to that side, on SQLite and
PostgreSQL.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sagagraph import (
    ConfigurationError,
    InputError,
    SagaDefinition,
    Step,
    build_saga_graph,
    open_checkpointer,
    participant,
    recover_sagas,
    resolve_saga,
    rollback_saga,
    run_saga,
)
from sagagraph.saga.protocol import StepResult
from tests.cli.test_pivot_cli import cli
from tests.support.pivot_saga import Effect, Journal, pivot_saga

ROOT = Path(__file__).resolve().parents[2]


def _step(name: str, **kwargs: Any) -> Step:
    return Step(participant(name, lambda ctx: StepResult()), **kwargs)


def test_check_refuses_steps_on_the_wrong_side_of_the_pivot() -> None:
    late = SagaDefinition.of("late", [_step("a", kind="pivot"), _step("b")])
    with pytest.raises(ConfigurationError, match="compensatable step 'b' comes after the pivot"):
        late.check()
    early = SagaDefinition.of("early", [_step("a", kind="retriable"), _step("b", kind="pivot")])
    with pytest.raises(ConfigurationError, match="retriable step 'a' comes before the pivot"):
        early.check()
    two = SagaDefinition.of("two", [_step("a", kind="pivot"), _step("b", kind="pivot")])
    with pytest.raises(ConfigurationError, match="at most one pivot"):
        two.check()
    with pytest.raises(ConfigurationError, match="retriable step 'a' comes before the pivot"):
        SagaDefinition.of("none", [_step("a", kind="retriable")]).check()


@pytest.mark.parametrize("mode", ["choreography", "blackboard"])
def test_other_styles_refuse_a_pivot_with_one_line(mode: str) -> None:
    definition = SagaDefinition.of("p", [_step("a"), _step("b", kind="pivot")])
    with pytest.raises(ConfigurationError, match="needs orchestration, not") as raised:
        definition.check(mode=mode)
    assert "\n" not in str(raised.value)


def test_the_llm_router_parallel_and_optional_steps_refuse_a_pivot() -> None:
    """The pivot needs a chain under the deterministic router: a step past it must be the one
    that runs next, and none may be passed by."""
    chain = SagaDefinition.of("p", [_step("a"), _step("b", kind="pivot")])
    with pytest.raises(ConfigurationError, match="a pivot step needs router='deterministic'"):
        chain.check(router="llm")
    wider = [
        [
            _step("a"),
            _step("b", after=("a",)),
            _step("c", after=("a",)),
            _step("d", kind="pivot", after=("b", "c")),
        ],
        [_step("a"), _step("b", optional=True), _step("c", kind="pivot")],
    ]
    for steps in wider:
        with pytest.raises(ConfigurationError, match="a pivot step needs a chain"):
            SagaDefinition.of("p", steps).check()
    # A retriable step past the pivot may not halt the saga (it only goes forward).
    halting = [_step("a", kind="pivot"), _step("b", kind="retriable", can_halt=True)]
    with pytest.raises(ConfigurationError, match="after the pivot cannot halt the saga"):
        SagaDefinition.of("p", halting).check()


def _app(saver: Any, journal: Journal) -> Any:
    return build_saga_graph(pivot_saga(journal)).compile(checkpointer=saver)


def test_a_failure_before_the_pivot_compensates(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    with open_checkpointer(f"sqlite:///{tmp_path / 'sagas.sqlite'}") as saver:
        view = run_saga(_app(saver, journal), {}, saga_id="before", fail_at="charge")
    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["charge", "reserve"]
    assert (view["pivot"], view["past_pivot"]) == ("charge", False)
    assert journal.effects() == {"before:charge": "undone", "before:reserve": "undone"}


def test_a_failure_past_the_pivot_retries_and_never_compensates(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    with open_checkpointer(f"sqlite:///{tmp_path / 'sagas.sqlite'}") as saver:
        view = run_saga(_app(saver, journal), {"ship_failures": 2}, saga_id="after")
    assert view["status"] == "completed"
    assert view["past_pivot"] is True
    assert view["compensated"] == []
    ship = [e["outcome"] for e in view["events"] if e["step"] == "ship"]
    assert ship == ["retry", "retry", "ok"]
    assert [e["step"] for e in view["events"] if e["action"] == "pivot"] == ["charge"]


def test_a_retriable_step_that_keeps_failing_waits_for_an_operator(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    with open_checkpointer(f"sqlite:///{tmp_path / 'sagas.sqlite'}") as saver:
        app = _app(saver, journal)
        view = run_saga(app, {"ship_failures": 5}, saga_id="stuck")
        assert view["status"] == "waiting_for_operator"
        assert view["waiting_for_operator"] is True
        assert view["forward_failure"]["step"] == "ship"
        assert view["compensated"] == []
        with pytest.raises(InputError, match="past its pivot 'charge'; it can only go forward"):
            rollback_saga(app, "stuck")
        # The carrier is back (the 5th call works): the operator retries, the saga goes on.
        view = resolve_saga(app, "stuck", "retry")
    assert view["status"] == "completed"
    assert view["forward_failure"] is None
    assert journal.effects() == {
        "stuck:charge": "done",
        "stuck:notify": "done",
        "stuck:reserve": "done",
        "stuck:ship": "done",
    }


def test_an_operator_may_take_a_retriable_step_as_done_by_hand(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    with open_checkpointer(f"sqlite:///{tmp_path / 'sagas.sqlite'}") as saver:
        app = _app(saver, journal)
        run_saga(app, {"ship_failures": 99}, saga_id="byhand")
        view = resolve_saga(app, "byhand", "skip", note="ops: shipped by courier")
    assert view["status"] == "completed"
    assert view["completed"] == ["reserve", "charge", "ship", "notify"]
    assert view["results"]["ship"] == {"done_by_operator": "ops: shipped by courier"}


def _killed_run(db: str, journal: Path, saga_id: str, kill_at: str, *extra: str) -> int:
    worker = [sys.executable, "-m", "tests.support.pivot_saga", "run", "--db", db]
    args = ["--journal", str(journal), "--saga-id", saga_id, "--kill-at", kill_at, *extra]
    done = subprocess.run([*worker, *args], cwd=ROOT, capture_output=True, timeout=120)
    return done.returncode


@pytest.mark.parametrize(
    ("kill_at", "compensate", "status", "effects"),
    [
        ("charge", True, "rolled_back", {"reserve": "undone", "charge": "undone"}),
        ("charge", False, "completed", None),
        ("ship", True, "completed", None),
        ("notify", True, "completed", None),
    ],
)
def test_a_kill_on_either_side_recovers_to_that_side(
    durable_checkpointer_url: str,
    tmp_path: Path,
    kill_at: str,
    compensate: bool,
    status: str,
    effects: dict[str, str] | None,
) -> None:
    """SIGKILL in a step before the pivot (``charge`` runs but has not committed) and past it;
    ``recover --compensate`` rolls back the first and carries the others forward."""
    journal_path = tmp_path / "journal.sqlite"
    saga_id = f"kill-{kill_at}-{int(compensate)}-{tmp_path.name[-8:]}".replace("_", "-").lower()
    assert _killed_run(durable_checkpointer_url, journal_path, saga_id, kill_at) == -9
    journal = Journal(journal_path)
    with open_checkpointer(durable_checkpointer_url) as saver:
        views = recover_sagas(_app(saver, journal), compensate=compensate)
    view = next(v for v in views if v["saga_id"] == saga_id)
    assert view["status"] == status
    recorded = {k.split(":")[1]: v for k, v in journal.effects().items() if k.startswith(saga_id)}
    if effects is None:
        steps = ("reserve", "charge", "ship", "notify")
        assert recorded == dict.fromkeys(steps, "done")
        assert view["past_pivot"] is True and view["compensated"] == []
    else:
        assert recorded == effects
        assert view["past_pivot"] is False


@pytest.mark.parametrize(
    ("kill_at", "compensate", "status"),
    [("charge", True, "rolled_back"), ("ship", False, "completed")],
)
def test_a_lock_outlives_its_killed_process_until_recovery_ends_the_saga(
    durable_checkpointer_url: str, tmp_path: Path, kill_at: str, compensate: bool, status: str
) -> None:
    """A worker SIGKILLed while its saga holds ``stock:<item>``: the lock row is still in the
    store's table, another saga asking for the item is refused, and ``sagagraph status``
    shows it; the recovery that ends the saga (rolled back before the pivot, completed past
    it) releases it."""
    from sagagraph.graph.locking import held_locks

    tag = tmp_path.name[-8:].replace("_", "-").lower()
    saga_id, item = f"locked-{kill_at}-{tag}", f"desk-{kill_at}-{tag}"
    journal_path = tmp_path / "journal.sqlite"
    url = durable_checkpointer_url
    assert _killed_run(url, journal_path, saga_id, kill_at, "--item", item) == -9
    journal = Journal(journal_path)
    with open_checkpointer(url) as saver:
        kept = [(r["key"], r["saga_id"]) for r in held_locks(saver) if item in r["key"]]
        assert kept == [(f"stock:{item}", saga_id)]
        asking = {"item": item, "on_busy": "fail"}
        other = run_saga(_app(saver, journal), asking, saga_id=f"other-{saga_id}")
    assert other["status"] == "rolled_back"
    assert other["failure"]["error"].startswith(
        f"LockBusyError: lock 'stock:{item}': held by saga '{saga_id}'"
    )
    shown = cli(tmp_path, "status", saga_id, "--db", url)
    assert f"holds lock: stock:{item} (step reserve" in shown.stdout, shown.stderr
    with open_checkpointer(url) as saver:
        views = recover_sagas(_app(saver, journal), compensate=compensate)
        left = [r for r in held_locks(saver) if item in r["key"]]
    view = next(v for v in views if v["saga_id"] == saga_id)
    assert (view["status"], view["locks"]) == (status, [])
    assert left == []


def test_declared_locks_are_taken_before_the_step_and_a_busy_one_fails_fast(
    tmp_path: Path,
) -> None:
    """``Step(locks=..., on_busy="fail")``: the second saga for the same item fails at once
    (LockBusyError) and compensates, while the first, past its pivot, still holds the item."""
    journal = Journal(tmp_path / "journal.sqlite")
    definition = SagaDefinition.of(
        "pivot_order",
        [
            Step(Effect("reserve"), locks=("stock:{sku}",), on_busy="fail"),
            Step(Effect("charge"), kind="pivot"),
            Step(Effect("ship"), kind="retriable"),
        ],
        deps=journal,
    )
    with open_checkpointer(f"sqlite:///{tmp_path / 'sagas.sqlite'}") as saver:
        app = build_saga_graph(definition).compile(checkpointer=saver)
        first = run_saga(app, {"sku": "lamp", "ship_failures": 9}, saga_id="first")
        second = run_saga(app, {"sku": "lamp"}, saga_id="second")
    assert first["status"] == "waiting_for_operator"
    assert second["status"] == "rolled_back"
    assert second["failure"]["error"].startswith("LockBusyError: lock 'stock:lamp': held by")
    assert "second:reserve" not in {k for k, v in journal.effects().items() if v == "done"}


def test_recovery_releases_the_locks_of_sagas_that_ended(tmp_path: Path) -> None:
    """A lock row left by a saga that ended (or that the store never held) is swept."""
    from sagagraph.graph.locking import held_locks, lock_table_for

    journal = Journal(tmp_path / "journal.sqlite")
    with open_checkpointer(f"sqlite:///{tmp_path / 'sagas.sqlite'}") as saver:
        app = _app(saver, journal)
        run_saga(app, {"item": "lamp"}, saga_id="ended")
        stuck = run_saga(app, {"item": "desk", "ship_failures": 9}, saga_id="stuck")
        assert stuck["status"] == "waiting_for_operator"
        table = lock_table_for(saver)
        assert table.try_acquire("stock:lamp", "ended", "reserve") is None  # as if left behind
        assert table.try_acquire("stock:chair", "ghost", "reserve") is None
        recover_sagas(app)
        assert [(lock["key"], lock["saga_id"]) for lock in held_locks(saver)] == [
            ("stock:desk", "stuck")
        ]


def test_async_runs_keep_the_pivot_and_the_locks_in_the_store(tmp_path: Path) -> None:
    """Under ``ainvoke`` on the async SQLite saver: retries past the pivot, the lock taken in
    the store's table (another connection sees it) and released at the end."""
    import asyncio

    from sagagraph import arun_saga, open_async_checkpointer
    from sagagraph.checkpoints.locks import sqlite_lock_table

    journal = Journal(tmp_path / "journal.sqlite")
    db = tmp_path / "sagas.sqlite"
    seen: list[list[str]] = []

    class Watching(Effect):
        def execute(self, ctx: Any) -> StepResult:
            table = sqlite_lock_table(db)
            seen.append([lock["key"] for lock in table.held("async")])
            table.close()
            return super().execute(ctx)

    definition = SagaDefinition.of(
        "pivot_order",
        [
            Step(Effect("reserve")),
            Step(Effect("charge"), kind="pivot"),
            Step(Watching("ship"), kind="retriable", retry=pivot_saga(journal).steps[2].retry),
        ],
        deps=journal,
    )

    async def run() -> dict[str, Any]:
        async with open_async_checkpointer(f"sqlite:///{db}") as saver:
            app = build_saga_graph(definition).compile(checkpointer=saver)
            return await arun_saga(app, {"item": "lamp", "ship_failures": 1}, saga_id="async")

    view = asyncio.run(run())
    assert (view["status"], view["past_pivot"]) == ("completed", True)
    assert seen == [["stock:lamp"], ["stock:lamp"]]
    table = sqlite_lock_table(db)
    assert table.held() == []
    table.close()
