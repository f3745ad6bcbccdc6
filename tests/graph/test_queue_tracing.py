"""Trace headers on work-queue messages: a worker's run of a saga joins its submitter's trace."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from sagagraph import run_saga
from sagagraph.graph.queue_tracing import carried_trace, submit_span, trace_headers, worker_span
from sagagraph.saga import tracing
from tests.support.otel import recorded_spans
from tests.support.toy_saga import Journal, saga_app, toy_saga


def test_a_worker_run_continues_the_submitters_trace(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    with recorded_spans() as exporter:
        with submit_span("q-1"):
            headers = trace_headers()
        # What arrives in the worker: the headers, beside what the broker adds (bytes too).
        arrived = {**headers, "x-delivery-count": 1, "tracestate": b""}
        with saga_app(toy_saga(2, journal)) as app, worker_span("q-1", arrived):
            run_saga(app, {}, saga_id="q-1")
        spans = exporter.get_finished_spans()
    assert set(headers) == {"traceparent"}
    submit, work = (next(s for s in spans if s.name == f"saga {op}") for op in ("submit", "work"))
    run = next(s for s in spans if s.name == "saga run")
    assert submit.context is not None and work.context is not None
    assert work.parent is not None and work.parent.span_id == submit.context.span_id
    assert run.parent is not None and run.parent.span_id == work.context.span_id
    assert {s.context.trace_id for s in spans if s.context} == {submit.context.trace_id}
    assert all(dict(s.attributes or {})[tracing.SAGA_ID] == "q-1" for s in spans)


def test_headers_come_from_a_mapping_or_a_celery_request_object() -> None:
    parent = "00-" + "a" * 32 + "-" + "b" * 16 + "-01"
    assert carried_trace({"traceparent": parent, "other": "x"}) == {"traceparent": parent}
    request = SimpleNamespace(traceparent=parent, tracestate="k=v", id="task-1")
    assert carried_trace(request) == {"traceparent": parent, "tracestate": "k=v"}
    assert carried_trace(None) == {}
    assert carried_trace({"traceparent": 12}) == {}


def test_nothing_traced_means_no_headers() -> None:
    assert trace_headers() == {}
