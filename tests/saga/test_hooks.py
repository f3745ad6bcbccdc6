"""One hook interface observes every run: runs, attempts, routes, escalations, approvals,
operators and events, sync and async, isolated, and as LangChain custom events."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver

from sagagraph import (
    Retry,
    SagaHooks,
    arun_saga,
    build_blackboard_graph,
    build_saga_graph,
    resolve_saga,
    rollback_saga,
    run_saga,
)
from sagagraph.choreography.runner import run_choreographed_saga
from sagagraph.graph.recover import approve_tool_call, reject_tool_call
from sagagraph.saga.hooks import RouteDecision, combine_hooks
from sagagraph.saga.view import Event, FailureRecord
from tests.support.choreo_buses import fresh_bus
from tests.support.choreo_saga import file_saga
from tests.support.gated_saga import definition as gated_definition
from tests.support.gated_saga import responder
from tests.support.openai_server import ScriptedOpenAIServer
from tests.support.toy_saga import Crash, Journal, Plan, SimulatedCrash, saga_app, toy_saga


class Recorder(SagaHooks):
    """Every call, in order, as ``(method, saga_id, what)``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []

    def on_run_start(self, saga_id: str, operation: str) -> None:
        self.calls.append(("run_start", saga_id, operation))

    def on_run_end(self, saga_id: str, outcome: str) -> None:
        self.calls.append(("run_end", saga_id, outcome))

    def on_step_start(self, saga_id: str, step: str, action: str, attempt: int) -> None:
        self.calls.append(("step_start", saga_id, (step, action, attempt)))

    def on_step_end(self, saga_id: str, event: Event) -> None:
        self.calls.append(("step_end", saga_id, event))

    def on_route(self, saga_id: str, decision: RouteDecision) -> None:
        self.calls.append(("route", saga_id, decision))

    def on_escalation(self, saga_id: str, failure: FailureRecord) -> None:
        self.calls.append(("escalation", saga_id, failure))

    def on_approval(self, saga_id: str, approval: Any) -> None:
        self.calls.append(("approval", saga_id, approval))

    def on_operator(self, saga_id: str, event: Event) -> None:
        self.calls.append(("operator", saga_id, event))

    def on_event(self, saga_id: str, event: Event) -> None:
        self.calls.append(("event", saga_id, event))

    def of(self, kind: str) -> list[Any]:
        return [what for method, _, what in self.calls if method == kind]


class AsyncRecorder(Recorder):
    """Records which form was called: the async drivers await the ``aon_`` forms."""

    async def aon_step_start(self, saga_id: str, step: str, action: str, attempt: int) -> None:
        self.calls.append(("astep_start", saga_id, (step, action, attempt)))

    async def aon_event(self, saga_id: str, event: Event) -> None:
        await asyncio.sleep(0)
        self.calls.append(("aevent", saga_id, event))


class Broken(SagaHooks):
    """Every hook raises."""

    def _raise(self, *args: Any) -> None:
        raise RuntimeError("hook broke")

    on_run_start = on_run_end = on_step_start = on_step_end = on_route = _raise
    on_escalation = on_approval = on_operator = on_event = _raise


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal.sqlite")


def attempts(view: dict[str, Any]) -> list[Event]:
    return [e for e in view["events"] if e["action"] in ("execute", "compensate")]


def test_a_run_tells_its_start_attempts_routes_events_and_end(journal: Journal) -> None:
    recorder = Recorder()
    plan = Plan(transient_failures={"s2": 1}, failing={"s3"})
    retry = Retry(max_attempts=2)
    with saga_app(toy_saga(3, journal, plan, retry=retry)) as app:
        view = run_saga(app, {}, saga_id="told", hooks=recorder)
    assert view["status"] == "rolled_back"
    assert {saga_id for _, saga_id, _ in recorder.calls} == {"told"}
    assert recorder.calls[0] == ("run_start", "told", "run")
    assert recorder.calls[-1] == ("run_end", "told", "rolled_back")
    assert recorder.of("event") == view["events"], "every event once, in recorded order"
    assert recorder.of("step_end") == attempts(view)
    assert recorder.of("step_start") == [
        (e["step"], e["action"], e["attempt"]) for e in attempts(view)
    ]
    starts_and_ends = [m for m, _, _ in recorder.calls if m in ("step_start", "step_end")]
    assert starts_and_ends == ["step_start", "step_end"] * len(attempts(view))
    routes = [(d.router, d.decided_by, d.goto) for d in recorder.of("route")]
    assert routes == [
        ("deterministic", "s1", "s2"),
        ("deterministic", "s2", "s3"),
        ("deterministic", "s3", "compensate"),
    ]


def test_the_async_runner_awaits_the_async_forms(journal: Journal) -> None:
    recorder = AsyncRecorder()
    app = build_saga_graph(toy_saga(2, journal, Plan(failing={"s2"}))).compile(
        checkpointer=InMemorySaver()
    )
    view = asyncio.run(arun_saga(app, {}, saga_id="atold", hooks=recorder))
    assert recorder.of("aevent") == view["events"]
    assert recorder.of("event") == []
    assert recorder.of("astep_start") == [
        ("s1", "execute", 1),
        ("s2", "execute", 1),
        ("s2", "compensate", 1),
        ("s1", "compensate", 1),
    ]
    assert recorder.of("step_end") == attempts(view)  # not overridden: the sync form runs
    assert recorder.calls[-1] == ("run_end", "atold", "rolled_back")


def test_a_hook_that_raises_is_logged_and_changes_nothing(
    journal: Journal, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="sagagraph")  # a CLI test may have raised it
    plan = Plan(failing={"s2"})
    with saga_app(toy_saga(2, journal, plan)) as app:
        calm = run_saga(app, {}, saga_id="calm")
        recorder = Recorder()
        broken = run_saga(app, {}, saga_id="broken", hooks=combine_hooks(Broken(), recorder))
    assert broken["status"] == calm["status"] == "rolled_back"
    assert [(e["step"], e["action"], e["outcome"]) for e in broken["events"]] == [
        (e["step"], e["action"], e["outcome"]) for e in calm["events"]
    ]
    assert recorder.of("event") == broken["events"], "the hooks after it are still told"
    failed = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("saga hook" in line and "hook broke" in line for line in failed)


def test_graph_hooks_and_run_hooks_both_hear_an_escalation_and_the_operator(
    journal: Journal,
) -> None:
    built, run = Recorder(), Recorder()
    plan = Plan(broken_compensations={"s1"})
    definition = toy_saga(2, journal, plan, compensation_retry=Retry(max_attempts=1))
    with saga_app(definition, hooks=built) as app:
        view = run_saga(app, {"fail": "s2"}, saga_id="stuck", hooks=run)
        assert view["status"] == "compensation_failed"
        plan.broken_compensations.clear()
        resolved = resolve_saga(app, "stuck", "retry", note="ops: fixed", hooks=run)
    assert resolved["status"] == "rolled_back"
    for recorder in (built, run):
        (failure,) = recorder.of("escalation")
        assert failure["step"] == "s1" and failure["phase"] == "compensate"
    (operator,) = run.of("operator")
    assert (operator["action"], operator["outcome"]) == ("resolve", "ok")
    assert "ops: fixed" in operator["detail"]
    assert run.of("run_start") == ["run", "resolve"]
    assert [e["action"] for e in built.of("event")] == [e["action"] for e in resolved["events"]]


def test_a_rollback_tells_the_operator_who_asked(journal: Journal) -> None:
    recorder = Recorder()
    plan = Plan(crash=Crash("s2", "execute", "before"))
    with saga_app(toy_saga(3, journal, plan)) as app:
        with pytest.raises(SimulatedCrash):
            run_saga(app, {}, saga_id="rb")
        view = rollback_saga(app, "rb", reason="wrong trip", by="ada", hooks=recorder)
    assert view["status"] == "rolled_back"
    (operator,) = recorder.of("operator")
    assert (operator["outcome"], operator["by"]) == ("rollback", "ada")
    assert ("run_start", "rb", "rollback") in recorder.calls


def test_approvals_and_the_operators_answers_are_told(tmp_path: Path) -> None:
    recorder = Recorder()
    with ScriptedOpenAIServer(responder) as server:
        graph = build_saga_graph(gated_definition(tmp_path, server.base_url))
        app = graph.compile(checkpointer=InMemorySaver())
        view = run_saga(app, {"traveller": "ada"}, saga_id="gate", hooks=recorder)
        assert view["status"] == "waiting_for_operator"
        assert [a["tool"] for a in recorder.of("approval")] == [
            a["tool"] for a in view["approvals"]
        ]
        charge = next(a for a in view["approvals"] if a["tool"] == "charge_card")
        approve_tool_call(app, "gate", call=charge["call"], hooks=recorder)
        done = reject_tool_call(app, "gate", "no wires", hooks=recorder)
    assert done["status"] == "rolled_back"
    answers = [(e["outcome"], e["detail"]) for e in recorder.of("operator")]
    assert answers[0][0] == "ok" and "charge_card" in answers[0][1]
    assert answers[1][0] == "rejected" and "send_wire" in answers[1][1]
    assert "no wires" in answers[1][1]
    calls = [e for e in done["events"] if e["action"] in ("tool_call", "tool_undo")]
    assert calls, "the agent step's tool calls are events of the saga"
    assert [e for e in recorder.of("event") if e in calls] == calls, "each reached on_event"


class Custom(BaseCallbackHandler):
    """A LangChain callback handler that keeps the custom events it hears."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, Any]] = []

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.heard.append((name, data))


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_langchain_callbacks_in_config_hear_the_hooks_as_custom_events(
    journal: Journal, driver: str
) -> None:
    handler = Custom()
    app = build_saga_graph(toy_saga(2, journal)).compile(checkpointer=InMemorySaver())
    config: Any = {"callbacks": [handler]}
    if driver == "sync":
        view = run_saga(app, {}, saga_id="lc", config=config)
    else:
        view = asyncio.run(arun_saga(app, {}, saga_id="lc", config=config))
    assert view["status"] == "completed"
    names = [name for name, _ in handler.heard]
    assert names == [
        "sagagraph.step_start",
        "sagagraph.step_end",
        "sagagraph.route",
        "sagagraph.step_start",
        "sagagraph.step_end",
        "sagagraph.route",
    ]
    ends = [data for name, data in handler.heard if name == "sagagraph.step_end"]
    assert [(d["saga_id"], d["step"], d["outcome"]) for d in ends] == [
        ("lc", "s1", "ok"),
        ("lc", "s2", "ok"),
    ]


def test_the_blackboard_controller_tells_each_decision(journal: Journal) -> None:
    recorder = Recorder()
    app = build_blackboard_graph(toy_saga(2, journal)).compile(checkpointer=InMemorySaver())
    view = run_saga(app, {}, saga_id="board", hooks=recorder)
    decided = [(d.router, d.decided_by, d.goto) for d in recorder.of("route")]
    assert decided == [
        ("blackboard", "controller", "s1"),
        ("blackboard", "controller", "s2"),
        ("blackboard", "controller", "finish"),
    ]
    assert recorder.of("event") == view["events"]


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_choreographed_run_tells_its_events_in_log_order(backend: str, tmp_path: Path) -> None:
    recorder = Recorder()
    with fresh_bus(backend, tmp_path) as bus:
        view = run_choreographed_saga(
            file_saga(tmp_path / "files"), {}, "c-1", bus, fail_at="summarizer", timeout=60,
            hooks=recorder,
        )  # fmt: skip
    assert view["compensated"] == ["summarizer", "reviewer", "validator"]
    assert recorder.of("event") == view["events"]
    assert recorder.calls[0] == ("run_start", "c-1", "run")
    assert ("run_end", "c-1", "rolled_back") in recorder.calls
    assert sorted(e["step"] for e in recorder.of("step_end")) == sorted(
        e["step"] for e in attempts(view)
    )
