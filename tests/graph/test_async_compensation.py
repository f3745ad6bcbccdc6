"""Compensation under ``ainvoke``: ``acompensate`` is awaited, and rollbacks match the sync path.

Also the shape of a rollback in checkpoints, under both paths: each compensation is its own
superstep (a crash mid-rollback resumes at the next one), and the last compensation finishes
the saga in its own superstep, with no extra checkpoint after it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from sagagraph import (
    SagaDefinition,
    StepContext,
    StepResult,
    build_saga_graph,
    run_saga,
    saga_config,
)
from sagagraph.checkpoints.async_factory import open_async_checkpointer
from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.graph.async_runner import aresume_saga, arun_saga
from sagagraph.saga.execution import UNFINISHED_COMPENSATED
from tests.support.toy_saga import (
    Crash,
    Journal,
    Plan,
    SimulatedCrash,
    comparable,
    run,
    toy_saga,
)


class Undoes:
    """A participant with sync and async compensations; it records which ran, and where."""

    def __init__(self, name: str, *, fail: bool = False) -> None:
        self.name = name
        self.fail = fail
        self.calls: list[tuple[str, str]] = []

    def execute(self, ctx: StepContext) -> StepResult:
        if self.fail:
            raise RuntimeError(f"{self.name}: refused")
        return StepResult(output=self.name)

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        self.calls.append(("compensate", threading.current_thread().name))

    async def acompensate(self, ctx: StepContext, result: StepResult | None) -> None:
        self.calls.append(("acompensate", threading.current_thread().name))


class SyncUndoes:
    """A participant with only the sync methods: its compensate must run on the step pool."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.threads: list[str] = []

    def execute(self, ctx: StepContext) -> StepResult:
        return StepResult(output=self.name)

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        self.threads.append(threading.current_thread().name)


async def arun_memory(definition: SagaDefinition, **kwargs: Any) -> dict[str, Any]:
    async with open_async_checkpointer("memory://") as checkpointer:
        app = build_saga_graph(definition).compile(checkpointer=checkpointer)
        return await arun_saga(app, {}, **kwargs)


# --- which compensation runs ------------------------------------------------------------------


def test_arun_saga_awaits_acompensate_on_the_event_loop() -> None:
    a, b, c = Undoes("a"), Undoes("b"), Undoes("c", fail=True)

    view = run(arun_memory(SagaDefinition.of("t", [a, b, c]), saga_id="undo"))

    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["c", "b", "a"]
    loop_thread = threading.main_thread().name
    assert [p.calls for p in (a, b, c)] == [[("acompensate", loop_thread)]] * 3


def test_run_saga_of_the_same_participants_uses_compensate() -> None:
    a, b = Undoes("a"), Undoes("b", fail=True)
    with open_checkpointer("memory://") as checkpointer:
        app = build_saga_graph(SagaDefinition.of("t", [a, b])).compile(checkpointer=checkpointer)
        view = run_saga(app, {}, saga_id="sync-undo")

    assert view["status"] == "rolled_back"
    assert [[name for name, _ in p.calls] for p in (a, b)] == [["compensate"], ["compensate"]]


def test_a_sync_only_compensation_runs_on_the_step_pool_under_ainvoke() -> None:
    a, b = SyncUndoes("a"), SyncUndoes("b")

    view = run(arun_memory(SagaDefinition.of("t", [a, b]), saga_id="pool", fail_at="b"))

    assert view["status"] == "rolled_back"
    threads = a.threads + b.threads
    assert len(threads) == 2
    assert all(t.startswith("sagagraph-step") for t in threads), threads


# --- the same view as the sync path -----------------------------------------------------------

FAILURES: dict[str, tuple[Plan, str | None, dict[str, Any]]] = {
    "fail-first": (Plan(), "s1", {}),
    "fail-middle": (Plan(), "s2", {}),
    "fail-last": (Plan(), "s3", {}),
    "undo-retried": (Plan(), "s3", {"undo_transient": {"s2": 2}}),
    "undo-gives-up": (Plan(), "s3", {"broken_undo": ["s2"]}),
    "halt-first": (Plan(halt_at="s1"), None, {}),
    "halt-middle": (Plan(halt_at="s2"), None, {}),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_failure_paths_give_the_same_view_under_invoke_and_ainvoke(
    tmp_path: Path, case: str
) -> None:
    plan, fail_at, saga_input = FAILURES[case]
    sync_journal = Journal(tmp_path / "sync.sqlite")
    async_journal = Journal(tmp_path / "async.sqlite")
    with open_checkpointer("memory://") as checkpointer:
        app = build_saga_graph(toy_saga(3, sync_journal, plan)).compile(checkpointer=checkpointer)
        expected = run_saga(app, saga_input, saga_id=case, fail_at=fail_at)

    async def arun() -> dict[str, Any]:
        async with open_async_checkpointer("memory://") as checkpointer:
            definition = toy_saga(3, async_journal, plan)
            app = build_saga_graph(definition).compile(checkpointer=checkpointer)
            return await arun_saga(app, saga_input, saga_id=case, fail_at=fail_at)

    view = run(arun())

    assert comparable(view) == comparable(expected)
    want = "compensation_failed" if case == "undo-gives-up" else "rolled_back"
    assert view["status"] == want
    assert async_journal.calls(case, "compensate") == sync_journal.calls(case, "compensate")
    assert async_journal.effects(case) == sync_journal.effects(case)


def test_a_step_that_failed_is_compensated_with_the_honest_detail() -> None:
    view = run(arun_memory(SagaDefinition.of("t", [Undoes("a"), Undoes("b", fail=True)])))

    undo_b = [e for e in view["events"] if e["step"] == "b" and e["action"] == "compensate"]
    assert [e["detail"] for e in undo_b] == [UNFINISHED_COMPENSATED]
    undo_a = [e for e in view["events"] if e["step"] == "a" and e["action"] == "compensate"]
    assert [e["detail"] for e in undo_a] == [""]


# --- checkpoints: one superstep per compensation, none after the last -------------------------


def _rollback_shape(snapshots: list[Any]) -> tuple[list[list[str]], dict[str, Any]]:
    """For each checkpoint waiting to compensate, oldest first: its ``compensated``; and the
    last checkpoint."""
    chronological = list(reversed(snapshots))
    waiting = [
        list(s.values.get("compensated") or []) for s in chronological if s.next == ("compensate",)
    ]
    last = chronological[-1]
    return waiting, {
        "next": last.next,
        "status": last.values["status"],
        "compensated": last.values["compensated"],
    }


WANT_WAITING = [[], ["s3"], ["s3", "s2"]]
"""Each compensation is a superstep of its own, checkpointed before the next one starts: the
failed step's (s3's) cleanup, then s2's; the last one (s1) is recorded by the checkpoint that
finishes the saga."""
WANT_LAST = {"next": (), "status": "rolled_back", "compensated": ["s3", "s2", "s1"]}


def test_each_compensation_is_a_checkpointed_superstep(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    with open_checkpointer(url) as checkpointer:
        app = build_saga_graph(toy_saga(3, journal)).compile(checkpointer=checkpointer)
        view = run_saga(app, {}, saga_id="sync", fail_at="s3")
        waiting, last = _rollback_shape(list(app.get_state_history(saga_config("sync"))))
    assert view["status"] == "rolled_back"
    assert waiting == WANT_WAITING, "each compensation is checkpointed on its own"
    assert last == WANT_LAST, "no checkpoint between the last compensation and the finish"
    assert view["events"][-1]["detail"] == "3 compensation(s) ran"

    async def arun() -> tuple[list[list[str]], dict[str, Any]]:
        async with open_async_checkpointer(url) as checkpointer:
            app = build_saga_graph(toy_saga(3, journal)).compile(checkpointer=checkpointer)
            await arun_saga(app, {}, saga_id="async", fail_at="s3")
            history = [s async for s in app.aget_state_history(saga_config("async"))]
            return _rollback_shape(history)

    assert run(arun()) == (WANT_WAITING, WANT_LAST)


def test_a_crash_in_the_last_compensation_resumes_it_under_ainvoke(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    plan = Plan(crash=Crash("s1", "compensate", "after"))

    async def crash_then_resume() -> tuple[dict[str, Any], dict[str, Any]]:
        async with open_async_checkpointer(url) as checkpointer:
            app = build_saga_graph(toy_saga(3, journal, plan)).compile(checkpointer=checkpointer)
            with pytest.raises(SimulatedCrash):
                await arun_saga(app, {}, saga_id="crash", fail_at="s3")
            stopped = await app.aget_state(saga_config("crash"))
            before = {
                "next": stopped.next,
                "status": stopped.values["status"],
                "compensated": stopped.values["compensated"],
            }
        async with open_async_checkpointer(url) as checkpointer:
            app = build_saga_graph(toy_saga(3, journal, plan)).compile(checkpointer=checkpointer)
            return before, await aresume_saga(app, "crash")

    before, view = run(crash_then_resume())

    assert before == {
        "next": ("compensate",),
        "status": "compensating",
        "compensated": ["s3", "s2"],  # each checkpointed on its own before s1's began
    }
    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["s3", "s2", "s1"]
    assert journal.calls("crash", "compensate") == ["s3", "s2", "s1", "s1"], "only s1 re-ran"
    assert journal.effects("crash")["s1"] == ("undone", 1, 1)
