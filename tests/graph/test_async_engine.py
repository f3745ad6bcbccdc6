"""The async path: ``arun_saga`` under ``ainvoke`` behaves as ``run_saga`` under ``invoke``.

Same views for success, failure with compensation and halt; async participants preferred;
async timeouts; the async checkpointers (group-commit SQLite, PostgreSQL pool, memory) and
their interplay with the sync ones; many sagas at once on one event loop.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from sagagraph import (
    ConfigurationError,
    InputError,
    Retry,
    SagaDefinition,
    SagaNotFoundError,
    Step,
    StepContext,
    StepResult,
    build_saga_graph,
    run_saga,
    saga_status,
)
from sagagraph.checkpoints.async_factory import open_async_checkpointer
from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.checkpoints.savers import SagaAsyncSqliteSaver
from sagagraph.graph.async_runner import aresume_saga, arun_saga, asaga_status
from sagagraph.saga.execution import acompensate_step, aexecute_step
from tests.support.toy_saga import (
    Crash,
    EventHooks,
    Journal,
    Plan,
    SimulatedCrash,
    comparable,
    run,
    toy_saga,
)


class AsyncStep:
    """A participant with async twins; it records which methods ran, and can sleep or fail."""

    def __init__(
        self, name: str, *, delay: float = 0.0, fail: bool = False, halt: bool = False
    ) -> None:
        self.name = name
        self.delay = delay
        self.fail = fail
        self.halt = halt
        self.calls: list[str] = []

    def execute(self, ctx: StepContext) -> StepResult:
        self.calls.append("execute")
        return StepResult(data={"by": "execute"}, output=self.name)

    async def aexecute(self, ctx: StepContext) -> StepResult:
        self.calls.append("aexecute")
        await asyncio.sleep(self.delay)
        if self.fail:
            raise RuntimeError(f"{self.name}: refused")
        if self.halt:
            return StepResult(data={"by": "aexecute"}, halt=True, reason="nothing to do")
        return StepResult(data={"by": "aexecute", "seen": sorted(ctx.results)}, output=self.name)

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        self.calls.append("compensate")

    async def acompensate(self, ctx: StepContext, result: StepResult | None) -> None:
        self.calls.append("acompensate")


def async_saga(*steps: AsyncStep, timeout: float | None = None) -> SagaDefinition:
    return SagaDefinition(
        "async_toy",
        tuple(Step(s, timeout=timeout, can_halt=s.halt) for s in steps),
    )


async def arun_on(url: str, definition: SagaDefinition, **kwargs: Any) -> dict[str, Any]:
    async with open_async_checkpointer(url) as checkpointer:
        app = build_saga_graph(definition).compile(checkpointer=checkpointer)
        return await arun_saga(app, {}, **kwargs)


# --- the same views as the sync path ---------------------------------------------------------

SCENARIOS: dict[str, tuple[Plan, str | None]] = {
    "success": (Plan(), None),
    "failure": (Plan(), "s3"),
    "halt": (Plan(halt_at="s2"), None),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_async_path_gives_the_views_of_the_sync_path(
    checkpointer_url: str, tmp_path: Path, scenario: str
) -> None:
    plan, fail_at = SCENARIOS[scenario]
    sync_journal = Journal(tmp_path / "sync.sqlite")
    async_journal = Journal(tmp_path / "async.sqlite")
    with open_checkpointer(checkpointer_url) as checkpointer:
        app = build_saga_graph(toy_saga(3, sync_journal, plan)).compile(checkpointer=checkpointer)
        expected = run_saga(app, {}, saga_id=f"sync-{scenario}", fail_at=fail_at)

    view = run(
        arun_on(
            checkpointer_url,
            toy_saga(3, async_journal, plan),
            saga_id=f"async-{scenario}",
            fail_at=fail_at,
        )
    )

    assert comparable(view) == comparable(expected)
    assert view["status"] == {"success": "completed"}.get(scenario, "rolled_back")
    assert async_journal.calls(f"async-{scenario}") == sync_journal.calls(f"sync-{scenario}")
    assert async_journal.calls(f"async-{scenario}", "compensate") == sync_journal.calls(
        f"sync-{scenario}", "compensate"
    )


def test_failure_compensates_in_reverse_order_under_ainvoke() -> None:
    steps = [AsyncStep("a"), AsyncStep("b"), AsyncStep("c", fail=True)]

    view = run(arun_on("memory://", async_saga(*steps), saga_id="f"))

    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["c", "b", "a"]
    assert view["failure"]["step"] == "c"
    assert "RuntimeError: c: refused" in view["failure"]["error"]


# --- participants: async twins first, sync ones on threads ----------------------------------


def test_aexecute_is_preferred_when_present() -> None:
    steps = [AsyncStep("a"), AsyncStep("b")]

    view = run(arun_on("memory://", async_saga(*steps), saga_id="pref"))

    assert view["status"] == "completed"
    assert [s.calls for s in steps] == [["aexecute"], ["aexecute"]]
    assert view["results"]["b"] == {"by": "aexecute", "seen": ["a"]}


def test_sync_invoke_of_the_same_graph_uses_execute() -> None:
    steps = [AsyncStep("a"), AsyncStep("b")]
    with open_checkpointer("memory://") as checkpointer:
        app = build_saga_graph(async_saga(*steps)).compile(checkpointer=checkpointer)
        view = run_saga(app, {}, saga_id="sync")

    assert view["status"] == "completed"
    assert [s.calls for s in steps] == [["execute"], ["execute"]]


def test_acompensate_is_preferred_when_present() -> None:
    step = Step(AsyncStep("a"))
    ctx = StepContext("s", "a", {}, {})

    outcome = run(acompensate_step(step, ctx, None))

    assert outcome.ok
    assert step.participant.calls == ["acompensate"]  # type: ignore[attr-defined]
    assert [(e["action"], e["outcome"]) for e in outcome.events] == [("compensate", "ok")]


def test_sync_participant_runs_off_the_event_loop_with_langgraph_context() -> None:
    seen: dict[str, Any] = {}

    class SyncStep:
        name = "a"

        def execute(self, ctx: StepContext) -> StepResult:
            from langgraph.config import get_config

            seen["thread"] = threading.current_thread().name
            seen["thread_id"] = get_config()["configurable"]["thread_id"]
            return StepResult()

        def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
            pass

    view = run(arun_on("memory://", SagaDefinition.of("t", [SyncStep()]), saga_id="ctx"))

    assert view["status"] == "completed"
    assert seen == {"thread": seen["thread"], "thread_id": "ctx"}
    assert seen["thread"].startswith("sagagraph-step")


# --- timeouts and retries ---------------------------------------------------------------------


def test_async_timeout_fails_the_step_and_compensates() -> None:
    steps = [AsyncStep("a"), AsyncStep("b", delay=30.0)]

    view = run(arun_on("memory://", async_saga(*steps, timeout=0.2), saga_id="slow"))

    assert view["status"] == "rolled_back"
    assert view["failure"]["error"].startswith("StepTimeoutError: step 'b' did not finish within")
    assert next(e["outcome"] for e in view["events"] if e["step"] == "b") == "timeout"
    assert view["compensated"] == ["b", "a"]


def test_a_timeout_error_raised_by_the_step_is_not_the_engine_timeout() -> None:
    class Raises(AsyncStep):
        async def aexecute(self, ctx: StepContext) -> StepResult:
            raise TimeoutError("upstream said so")

    outcome = run(aexecute_step(Step(Raises("a"), timeout=5.0), StepContext("s", "a", {}, {})))

    assert isinstance(outcome.error, TimeoutError)
    assert [e["outcome"] for e in outcome.events] == ["error"]


def test_async_retries_record_the_same_events_as_sync_ones() -> None:
    attempts: list[int] = []

    class Flaky(AsyncStep):
        async def aexecute(self, ctx: StepContext) -> StepResult:
            attempts.append(ctx.attempt)
            if ctx.attempt < 3:
                raise ConnectionError("busy")
            return StepResult(data={"attempt": ctx.attempt})

    step = Step(Flaky("a"), retry=Retry(max_attempts=3))
    slept: list[float] = []

    async def no_sleep(seconds: float) -> None:
        slept.append(seconds)

    outcome = run(aexecute_step(step, StepContext("s", "a", {}, {}), sleep=no_sleep))

    assert outcome.ok and outcome.attempts == 3 and attempts == [1, 2, 3]
    assert [e["outcome"] for e in outcome.events] == ["retry", "retry", "ok"]
    assert len(slept) == 2


def test_injected_failure_is_not_retried_and_never_calls_the_step() -> None:
    participant = AsyncStep("a")
    step = Step(participant, retry=Retry(max_attempts=3))

    outcome = run(aexecute_step(step, StepContext("s", "a", {}, {}), inject_failure=True))

    assert outcome.attempts == 1 and participant.calls == []
    assert "InjectedFailure" in outcome.events[0]["detail"]


def test_a_wrong_return_type_fails_the_step() -> None:
    class Wrong(AsyncStep):
        async def aexecute(self, ctx: StepContext) -> StepResult:
            return {"not": "a StepResult"}  # type: ignore[return-value]

    outcome = run(aexecute_step(Step(Wrong("a")), StepContext("s", "a", {}, {})))

    assert isinstance(outcome.error, TypeError)


# --- the async runner's contracts ----------------------------------------------------------


def test_arun_saga_refuses_an_existing_id_and_an_unknown_fail_at() -> None:
    async def scenario() -> None:
        async with open_async_checkpointer("memory://") as checkpointer:
            app = build_saga_graph(async_saga(AsyncStep("a"))).compile(checkpointer=checkpointer)
            await arun_saga(app, {}, saga_id="once")
            with pytest.raises(InputError, match="already exists"):
                await arun_saga(app, {}, saga_id="once")
            with pytest.raises(ConfigurationError, match="unknown step 'nope'"):
                await arun_saga(app, {}, saga_id="other", fail_at="nope")
            with pytest.raises(SagaNotFoundError):
                await asaga_status(app, "missing")

    run(scenario())


def test_the_hooks_on_event_sees_every_event_in_order() -> None:
    seen: list[tuple[str, str]] = []

    async def scenario() -> dict[str, Any]:
        async with open_async_checkpointer("memory://") as checkpointer:
            app = build_saga_graph(async_saga(AsyncStep("a"), AsyncStep("b"))).compile(
                checkpointer=checkpointer
            )
            return await arun_saga(
                app,
                {},
                saga_id="ev",
                hooks=EventHooks(lambda e: seen.append((e["step"], e["outcome"]))),
            )

    view = run(scenario())

    assert seen == [(e["step"], e["outcome"]) for e in view["events"]]


def test_aresume_continues_after_a_crash_without_rerunning_committed_steps(
    durable_checkpointer_url: str, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    plan = Plan(crash=Crash("s2", "execute", "after"))

    async def crash_then_resume() -> dict[str, Any]:
        async with open_async_checkpointer(durable_checkpointer_url) as checkpointer:
            app = build_saga_graph(toy_saga(3, journal, plan)).compile(checkpointer=checkpointer)
            with pytest.raises(SimulatedCrash):
                await arun_saga(app, {}, saga_id="crash")
        # A new checkpointer, as a new process would open.
        async with open_async_checkpointer(durable_checkpointer_url) as checkpointer:
            app = build_saga_graph(toy_saga(3, journal, plan)).compile(checkpointer=checkpointer)
            return await aresume_saga(app, "crash")

    view = run(crash_then_resume())

    assert view["status"] == "completed"
    assert journal.calls("crash") == ["s1", "s2", "s2", "s3"], "only the step in flight re-ran"
    assert journal.effects("crash")["s2"] == ("done", 1, 0)


# --- checkpointers ------------------------------------------------------------------------


def test_arun_saga_on_langgraphs_own_async_sqlite_saver(tmp_path: Path) -> None:
    async def scenario() -> dict[str, Any]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "s.sqlite")) as checkpointer:
            app = build_saga_graph(async_saga(AsyncStep("a"), AsyncStep("b"))).compile(
                checkpointer=checkpointer
            )
            return await arun_saga(app, {}, saga_id="stock")

    assert run(scenario())["completed"] == ["a", "b"]


def test_concurrent_sagas_are_readable_by_the_sync_checkpointer(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    n = 40

    async def scenario() -> list[dict[str, Any]]:
        async with open_async_checkpointer(url) as checkpointer:
            assert isinstance(checkpointer, SagaAsyncSqliteSaver)
            steps = [AsyncStep("a", delay=0.01), AsyncStep("b", delay=0.01), AsyncStep("c")]
            app = build_saga_graph(async_saga(*steps)).compile(checkpointer=checkpointer)
            views = await asyncio.gather(*(arun_saga(app, {}, saga_id=f"s{i}") for i in range(n)))
            return views

    views = run(scenario())

    assert [v["status"] for v in views] == ["completed"] * n
    with open_checkpointer(url) as checkpointer:
        app = build_saga_graph(async_saga(AsyncStep("a"), AsyncStep("b"), AsyncStep("c")))
        sync_view = saga_status(app.compile(checkpointer=checkpointer), "s7")
    assert comparable(sync_view) == comparable(
        {**views[7], "next": [], "waiting_for_operator": False}
    )


def test_a_sync_saga_can_be_resumed_by_the_async_runner(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    journal = Journal(tmp_path / "journal.sqlite")
    plan = Plan(crash=Crash("s1", "execute", "after"))
    with open_checkpointer(url) as checkpointer:
        app = build_saga_graph(toy_saga(2, journal, plan)).compile(checkpointer=checkpointer)
        with pytest.raises(SimulatedCrash):
            run_saga(app, {}, saga_id="mixed")

    async def resume() -> dict[str, Any]:
        async with open_async_checkpointer(url) as checkpointer:
            app = build_saga_graph(toy_saga(2, journal, plan)).compile(checkpointer=checkpointer)
            return await aresume_saga(app, "mixed")

    assert run(resume())["status"] == "completed"
    assert journal.calls("mixed") == ["s1", "s1", "s2"]


@pytest.mark.postgres
def test_concurrent_sagas_on_the_postgres_pool(postgres_url: str) -> None:
    async def scenario() -> list[dict[str, Any]]:
        async with open_async_checkpointer(postgres_url) as checkpointer:
            steps = [AsyncStep("a", delay=0.01), AsyncStep("b", fail=True)]
            app = build_saga_graph(async_saga(*steps)).compile(checkpointer=checkpointer)
            return await asyncio.gather(
                *(arun_saga(app, {}, saga_id=f"pg-async-{i}") for i in range(20))
            )

    views = run(scenario())

    assert {v["status"] for v in views} == {"rolled_back"}
    assert {tuple(v["compensated"]) for v in views} == {("b", "a")}


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sqlite:///{tmp}/missing/x.sqlite", "is missing"),
        ("sqlite:///{tmp}", "is a folder"),
        ("redis://localhost", "expected sqlite:///PATH"),
        ("postgresql://me:hunter2@127.0.0.1:1/db", "cannot connect"),
    ],
)
def test_unusable_urls_fail_with_one_line(tmp_path: Path, url: str, message: str) -> None:
    url = url.format(tmp=tmp_path)

    async def scenario() -> None:
        async with open_async_checkpointer(url):
            pass

    with pytest.raises(ConfigurationError, match=message) as raised:
        run(scenario())
    assert "hunter2" not in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_corrupt_sqlite_file_is_a_configuration_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.sqlite"
    path.write_bytes(b"this is not a database" * 100)

    async def scenario() -> None:
        async with open_async_checkpointer(f"sqlite:///{path}"):
            pass

    with pytest.raises(ConfigurationError, match="not a usable SQLite database"):
        run(scenario())


# --- many sagas on one loop -----------------------------------------------------------------


def test_hundreds_of_sagas_at_once_all_finish_with_their_own_results() -> None:
    n = 300
    steps = [AsyncStep("a", delay=0.05), AsyncStep("b", delay=0.05), AsyncStep("c", fail=False)]

    async def scenario() -> list[dict[str, Any]]:
        async with open_async_checkpointer("memory://") as checkpointer:
            app = build_saga_graph(async_saga(*steps)).compile(checkpointer=checkpointer)
            return await asyncio.gather(
                *(
                    arun_saga(app, {"n": i}, saga_id=f"m{i}", fail_at="c" if i % 3 == 0 else None)
                    for i in range(n)
                )
            )

    views = run(scenario())

    for i, view in enumerate(views):
        assert view["saga_id"] == f"m{i}"
        if i % 3 == 0:
            assert view["status"] == "rolled_back" and view["compensated"] == ["c", "b", "a"]
        else:
            assert view["status"] == "completed" and view["completed"] == ["a", "b", "c"]


def test_a_running_saga_cannot_be_driven_twice_at_once() -> None:
    async def scenario() -> None:
        started, gate = asyncio.Event(), asyncio.Event()

        class Waits(AsyncStep):
            async def aexecute(self, ctx: StepContext) -> StepResult:
                started.set()
                await asyncio.wait_for(gate.wait(), 10)
                return StepResult()

        async with open_async_checkpointer("memory://") as checkpointer:
            app = build_saga_graph(async_saga(Waits("a"))).compile(checkpointer=checkpointer)
            first = asyncio.create_task(arun_saga(app, {}, saga_id="busy"))
            await asyncio.wait_for(started.wait(), 10)
            with pytest.raises(InputError, match="in use"):
                await aresume_saga(app, "busy")
            gate.set()
            assert (await first)["status"] == "completed"

    run(scenario())
