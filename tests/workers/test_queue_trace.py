"""A saga submitted to the work queue and run by a real Celery worker is one trace: the
worker's ``saga work`` span sits under the submitter's ``saga submit`` span, and the saga's
run, step and route spans under it (issue 31: spans propagated across worker messages).

Real RabbitMQ and PostgreSQL; the worker is Celery's embedded one (a thread of this process),
so the SDK's in-memory exporter sees the spans of both sides.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

from sagagraph.graph.runner import saga_status
from sagagraph.saga import tracing
from sagagraph.workers import SagaRequest, submit_sagas
from tests.support.otel import recorded_spans
from tests.support.queue_support import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.rabbitmq]

TRAVEL = "examples.travel_booking.worker:travel_saga"


def saga_spans(spans: Sequence[ReadableSpan], saga_id: str) -> list[ReadableSpan]:
    return [s for s in spans if (s.attributes or {}).get(tracing.SAGA_ID) == saga_id]


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def named(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    (found,) = [s for s in spans if s.name == name]
    return found


def test_a_queued_saga_run_by_a_worker_joins_the_submitters_trace(
    tmp_path: Path, postgres_url: str, queue: str
) -> None:
    from celery.contrib.testing.worker import start_worker

    from examples.travel_booking.run import FLIGHT, open_demo_stores
    from examples.travel_booking.worker import travel_saga
    from sagagraph import build_saga_graph, open_checkpointer
    from sagagraph.workers.celery_app import make_celery_app

    data = tmp_path / "travel"
    open_demo_stores(data)
    trip = {"traveller": "ada", "flight": FLIGHT, "hotel": "harbour-view", "nights": 3}
    trip["data"] = str(data)
    saga_id = f"traced-trip-{uuid.uuid4().hex[:8]}"
    celery = make_celery_app(queue, postgres_url, apps=[TRAVEL])

    with recorded_spans() as exporter, open_checkpointer(postgres_url) as checkpointer:
        graph = build_saga_graph(travel_saga(trip)).compile(checkpointer=checkpointer)
        tracer = trace.get_tracer("tests.queue_trace")
        with tracer.start_as_current_span("user request") as parent:
            (done,) = submit_sagas(
                [SagaRequest(trip, saga_id)], app=TRAVEL, queue=queue, db=postgres_url
            )
        assert done.saga_id == saga_id
        with start_worker(celery, pool="solo", perform_ping_check=False, shutdown_timeout=60):
            wait_for(
                lambda: saga_status(graph, saga_id)["status"] == "completed",
                timeout=120,
                what="the trip to complete on the worker",
            )
            # The task span ends just after the saga's last checkpoint is written.
            wait_for(
                lambda: any(s.name == "saga work" for s in exporter.get_finished_spans()),
                timeout=30,
                what="the worker's span",
            )
        spans = saga_spans(exporter.get_finished_spans(), saga_id)

    trace_id = parent.get_span_context().trace_id
    submit = named(spans, "saga submit")
    work = named(spans, "saga work")
    assert submit.parent is not None and submit.parent.span_id == parent.get_span_context().span_id
    # The worker's span continues the submission's, across the broker.
    assert work.context.trace_id == trace_id
    assert work.parent is not None and work.parent.is_remote
    assert work.parent.span_id == submit.context.span_id
    # The run and every step and route of it are in the same trace, under the worker's span.
    steps = [s for s in spans if s.name in tracing.ATTEMPT_SPANS.values()]
    executed = [(a[tracing.STEP], a[tracing.OUTCOME]) for a in map(attributes, steps)]
    assert executed == [("book_flight", "ok"), ("reserve_hotel", "ok"), ("charge_wallet", "ok")]
    assert all(s.context.trace_id == trace_id for s in spans)
    by_id: dict[int, ReadableSpan] = {s.context.span_id: s for s in spans}

    def under_work(span: ReadableSpan) -> bool:
        seen: Any = span
        while seen.parent is not None and seen.parent.span_id in by_id:
            seen = by_id[seen.parent.span_id]
            if seen is work:
                return True
        return False

    assert steps and all(under_work(s) for s in steps)
