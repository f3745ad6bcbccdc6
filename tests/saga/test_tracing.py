"""OpenTelemetry spans of sagas, seen by the SDK's in-memory exporter.

A compensated saga has one span per attempt (execute and compensate, retries included), one per
route decision, all under its run's span, with the saga id, step and outcome as attributes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from sagagraph import (
    Retry,
    SagaDefinition,
    StepResult,
    arun_saga,
    build_blackboard_graph,
    build_saga_graph,
    participant,
    run_saga,
)
from sagagraph.graph.routing import RouterOptions
from sagagraph.saga import tracing
from sagagraph.saga.tracing import continued_from, trace_carrier
from tests.support.openai_server import ScriptedOpenAIServer
from tests.support.otel import recorded_spans
from tests.support.toy_saga import Journal, Plan, TransientError, saga_app, toy_saga


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal.sqlite")


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def attempt_spans(spans: Sequence[ReadableSpan]) -> list[tuple[str, str, int, str]]:
    return [
        (a[tracing.STEP], a[tracing.ACTION], a[tracing.ATTEMPT], a[tracing.OUTCOME])
        for a in map(attrs, spans)
        if a.get(tracing.ACTION) in ("execute", "compensate")
    ]


def attempt_events(view: dict[str, Any]) -> list[tuple[str, str, int, str]]:
    return [
        (e["step"], e["action"], e["attempt"], e["outcome"])
        for e in view["events"]
        if e["action"] in ("execute", "compensate")
    ]


def route_spans(spans: Sequence[ReadableSpan]) -> list[dict[str, Any]]:
    return [attrs(s) for s in spans if s.name == tracing.ROUTE_SPAN]


def test_a_compensated_saga_has_one_span_per_attempt_compensation_and_route(
    journal: Journal,
) -> None:
    # s2 fails once then commits (two attempts), s3 fails for good: s3, s2, s1 compensated.
    plan = Plan(transient_failures={"s2": 1}, failing={"s3"})
    retry = Retry(max_attempts=2, retry_on=(TransientError,))
    with recorded_spans() as exporter, saga_app(toy_saga(3, journal, plan, retry=retry)) as app:
        view = run_saga(app, {}, saga_id="traced")
        spans = exporter.get_finished_spans()
    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["s3", "s2", "s1"]

    assert attempt_spans(spans) == attempt_events(view)
    assert attempt_spans(spans) == [
        ("s1", "execute", 1, "ok"),
        ("s2", "execute", 1, "retry"),
        ("s2", "execute", 2, "ok"),
        ("s3", "execute", 1, "error"),
        ("s3", "compensate", 1, "ok"),
        ("s2", "compensate", 1, "ok"),
        ("s1", "compensate", 1, "ok"),
    ]
    routes = route_spans(spans)
    assert [(r[tracing.DECIDED_BY], r[tracing.STEP]) for r in routes] == [
        ("s1", "s2"),
        ("s2", "s3"),
        ("s3", "compensate"),
    ]
    assert {r[tracing.ROUTER] for r in routes} == {"deterministic"}

    (run,) = [s for s in spans if s.name == "saga run"]
    assert attrs(run)[tracing.OUTCOME] == "rolled_back"
    assert all(attrs(s)[tracing.SAGA_ID] == "traced" for s in spans)
    # Every attempt and decision is a child of the run's span, in its trace.
    assert run.context is not None
    children = [s for s in spans if s is not run]
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in children)
    failed = [s for s in spans if attrs(s).get(tracing.OUTCOME) == "error"]
    assert [attrs(s)[tracing.STEP] for s in failed] == ["s3"]
    assert failed[0].status.status_code.name == "ERROR"


def test_fail_at_is_an_attempt_with_its_own_span(journal: Journal) -> None:
    with recorded_spans() as exporter, saga_app(toy_saga(2, journal)) as app:
        view = run_saga(app, {}, fail_at="s2")
        spans = exporter.get_finished_spans()
    assert attempt_spans(spans) == attempt_events(view)
    assert ("s2", "execute", 1, "error") in attempt_spans(spans)


def test_the_async_runner_makes_the_same_spans(journal: Journal) -> None:
    plan = Plan(failing={"s2"})
    app = build_saga_graph(toy_saga(2, journal, plan)).compile(checkpointer=InMemorySaver())
    with recorded_spans() as exporter:
        view = asyncio.run(arun_saga(app, {}, saga_id="async-traced"))
        spans = exporter.get_finished_spans()
    assert attempt_spans(spans) == attempt_events(view)
    assert len(route_spans(spans)) == 2  # s1 -> s2, s2 -> compensate
    (run,) = [s for s in spans if s.name == "saga run"]
    assert run.context is not None
    assert all(s.parent and s.parent.span_id == run.context.span_id for s in spans if s != run)


def test_the_blackboard_controller_traces_each_decision(journal: Journal) -> None:
    app = build_blackboard_graph(toy_saga(2, journal)).compile(checkpointer=InMemorySaver())
    with recorded_spans() as exporter:
        view = run_saga(app, {}, saga_id="board")
        spans = exporter.get_finished_spans()
    routes = route_spans(spans)
    decisions = [e for e in view["events"] if e["action"] == "route"]
    assert [r[tracing.STEP] for r in routes] == [e["step"] for e in decisions]
    assert {(r[tracing.ROUTER], r[tracing.DECIDED_BY]) for r in routes} == {
        ("blackboard", "controller")
    }
    assert attempt_spans(spans) == attempt_events(view)


def test_the_llm_router_traces_each_decision_around_its_model_call(journal: Journal) -> None:
    from langchain_openai import ChatOpenAI

    from tests.graph.test_llm_router import ScriptedRouter

    with ScriptedOpenAIServer(ScriptedRouter(script=["publish"])) as server:
        model = ChatOpenAI(
            model="gpt-test", base_url=server.base_url, api_key="sk-test", max_retries=0
        )
        graph = build_saga_graph(
            toy_saga(2, journal), "llm", router_model=model, router_options=RouterOptions()
        )
        app = graph.compile(checkpointer=InMemorySaver())
        with recorded_spans() as exporter:
            view = run_saga(app, {}, saga_id="routed")
            spans = exporter.get_finished_spans()
    assert view["status"] == "completed"
    routes = route_spans(spans)
    # s1, s2, finish: three decisions; the first rejected "publish" before accepting s1.
    assert [(r[tracing.ROUTER], r[tracing.STEP], r[tracing.OUTCOME]) for r in routes] == [
        ("llm", "s1", "ok"),
        ("llm", "s2", "ok"),
        ("llm", "finish", "ok"),
    ]
    rejected = [e for e in view["events"] if e["outcome"] == "rejected"]
    assert len(rejected) == 1


def test_a_carrier_continues_the_trace_in_another_context() -> None:
    with recorded_spans() as exporter:
        assert trace_carrier() == {}  # nothing traced: nothing to carry
        with tracing.saga_span("carried", "run") as span:
            carrier = trace_carrier()
        with continued_from(carrier), tracing.saga_span("carried", "event"):
            pass
        spans = exporter.get_finished_spans()
    assert set(carrier) == {"traceparent"}
    first, second = spans
    assert second.parent is not None and first.context is not None
    assert second.parent.span_id == first.context.span_id
    assert (
        second.context is not None and second.context.trace_id == span.get_span_context().trace_id
    )


def test_parallel_branches_trace_each_routing_edge(journal: Journal) -> None:
    from dataclasses import replace

    from sagagraph import SagaDefinition

    chain = toy_saga(3, journal)
    s1, s2, s3 = chain.steps
    # s2 and s3 both need only s1: they run side by side, and each edge is a decision.
    parallel = SagaDefinition("fan", (s1, replace(s2, after=("s1",)), replace(s3, after=("s1",))))
    app = build_saga_graph(parallel).compile(checkpointer=InMemorySaver())
    with recorded_spans() as exporter:
        view = run_saga(app, {}, saga_id="fan")
        spans = exporter.get_finished_spans()
    assert view["status"] == "completed"
    routes = sorted((r[tracing.DECIDED_BY], r[tracing.STEP]) for r in route_spans(spans))
    assert routes == [("s1", "s2,s3"), ("s2", "finish"), ("s3", "finish")]
    assert sorted(attempt_spans(spans)) == sorted(attempt_events(view))


def test_a_failed_step_span_records_its_exception_and_a_rolled_back_saga_span_is_an_error(
    journal: Journal,
) -> None:
    # s2 raises PermanentError("s2: refused sk-...") for good: s1 is compensated, the saga
    # rolls back. The failed attempt's span says what was raised, with the secret hidden.
    plan = Plan(failing={"s2"})
    with recorded_spans() as exporter, saga_app(toy_saga(2, journal, plan)) as app:
        view = run_saga(app, {}, saga_id="explained")
        spans = exporter.get_finished_spans()
    assert view["status"] == "rolled_back"
    failed = [s for s in spans if attrs(s).get(tracing.OUTCOME) == "error"]
    assert [attrs(s)[tracing.STEP] for s in failed] == ["s2"]
    (span,) = failed
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "PermanentError: s2: refused"
    (event,) = [e for e in span.events if e.name == "exception"]
    assert dict(event.attributes or {}) == {
        "exception.type": "PermanentError",
        "exception.message": "s2: refused",
    }
    (run,) = [s for s in spans if s.name == f"{tracing.SAGA_SPAN} run"]
    assert attrs(run)[tracing.OUTCOME] == "rolled_back"
    assert run.status.status_code is StatusCode.ERROR
    assert run.status.description == "rolled_back"


def test_a_completed_saga_span_is_ok_and_its_steps_carry_no_exception(journal: Journal) -> None:
    with recorded_spans() as exporter, saga_app(toy_saga(2, journal, Plan())) as app:
        view = run_saga(app, {}, saga_id="fine")
        spans = exporter.get_finished_spans()
    assert view["status"] == "completed"
    assert all(s.status.status_code is not StatusCode.ERROR for s in spans)
    assert not [e for s in spans for e in s.events if e.name == "exception"]


def test_the_exception_message_on_a_span_is_redacted() -> None:
    secret = "sk-" + "a1b2c3d4e5" * 4

    def leaky(ctx: Any) -> StepResult:
        raise RuntimeError(f"provider refused key {secret}")

    saga = SagaDefinition.of("leaky", [participant("call", leaky, None)])
    app = build_saga_graph(saga).compile(checkpointer=InMemorySaver())
    with recorded_spans() as exporter:
        view = run_saga(app, {}, saga_id="secretive")
        spans = exporter.get_finished_spans()
    assert view["status"] == "rolled_back"
    (event,) = [e for s in spans for e in s.events if e.name == "exception"]
    assert dict(event.attributes or {})["exception.type"] == "RuntimeError"
    assert secret not in str(dict(event.attributes or {}))
    assert all(secret not in (s.status.description or "") for s in spans)
