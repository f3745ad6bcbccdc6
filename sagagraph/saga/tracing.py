"""OpenTelemetry spans of sagas: each run of a saga, each attempt of a step, each attempt of a
compensation and each route decision, with the saga id, the step and the outcome as attributes.

Only ``opentelemetry-api`` is needed: until an application installs an SDK tracer provider
(the ``otel`` extra; the CLI does it from ``SAGAGRAPH_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_ENDPOINT``, see :mod:`sagagraph.telemetry`), no span is made at all.

The spans nest through OpenTelemetry's context, which lives in context variables: LangGraph
runs each node in a copy of the caller's context, so attempts sit under their saga's run
span, and a step's own instrumented calls (a model client's) under its attempt.

Across processes the context travels as a carrier (a ``dict`` of W3C ``traceparent`` and
``tracestate``): :func:`trace_carrier` writes the current one, :func:`continued_from` makes
one current again. Choreography events carry one in their signed ``trace`` field; work-queue
messages carry one beside the saga id (:mod:`sagagraph.graph.queue_tracing`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.constants import END
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import INVALID_SPAN, Span, Status, StatusCode

from sagagraph.saga.guard import FINISH
from sagagraph.saga.view import Event

TRACER_NAME = "sagagraph"
"""The instrumentation scope of every span sagagraph makes."""

SAGA_ID = "sagagraph.saga_id"
"""Attribute: the saga's id (on every span)."""
STEP = "sagagraph.step"
"""Attribute: the step an attempt ran, or that a route decision chose."""
ACTION = "sagagraph.action"
"""Attribute: ``execute`` or ``compensate`` (attempts), ``route`` (decisions)."""
ATTEMPT = "sagagraph.attempt"
"""Attribute: the attempt number, from 1."""
OUTCOME = "sagagraph.outcome"
"""Attribute: the attempt's event outcome (``ok``, ``retry``, ``error``, ``timeout``,
``halted``), the route decision (``ok``, ``rejected``, ``error``) or the saga's status at the
end of a run."""
ROUTER = "sagagraph.router"
"""Attribute of a route decision: ``deterministic``, ``llm`` or ``blackboard``."""
DECIDED_BY = "sagagraph.decided_by"
"""Attribute of a route decision: the node that decided (a step, ``supervisor``,
``controller``)."""
OPERATION = "sagagraph.operation"
"""Attribute of a saga span: ``run``, ``resume``, ``resolve``, ``rollback``, or a
choreography event's handling."""

SAGA_SPAN = "saga"
"""Name of the span of one run of a saga (``saga run``, ``saga resume``...)."""
ATTEMPT_SPANS = {"execute": "saga.step.execute", "compensate": "saga.step.compensate"}
"""Names of attempt spans, by action."""
ROUTE_SPAN = "saga.route"
"""Name of the span of one route decision."""

_FAILED = frozenset({"error", "timeout", "rejected", "dead_letter"})
"""Outcomes that mark a span's status as an error."""


_tracer: tuple[object, trace.Tracer] | None = None
"""The tracer of the provider installed last, with that provider."""


def tracer() -> trace.Tracer | None:
    """sagagraph's tracer from the SDK tracer provider installed now, None while none is.

    Without one, every span would be a no-op that still costs its context switches (tens of
    microseconds an attempt): the spans are then not made at all.
    """
    global _tracer
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    if _tracer is None or _tracer[0] is not provider:
        _tracer = (provider, provider.get_tracer(TRACER_NAME))
    return _tracer[1]


def _ended_with(span: Span, outcome: str) -> None:
    if not span.is_recording():
        return
    span.set_attribute(OUTCOME, outcome)
    if outcome in _FAILED:
        span.set_status(Status(StatusCode.ERROR, outcome))


@contextmanager
def saga_span(saga_id: str, operation: str) -> Iterator[Span]:
    """The span of one run of a saga (``operation``: run, resume...), current while it runs.

    The caller sets the outcome with :func:`saga_outcome` once it knows how the run ended.
    """
    active = tracer()
    if active is None:
        yield INVALID_SPAN
        return
    with active.start_as_current_span(
        f"{SAGA_SPAN} {operation}",
        attributes={SAGA_ID: saga_id, OPERATION: operation},
        record_exception=True,
    ) as span:
        yield span


def saga_outcome(span: Span, values: Mapping[str, Any] | None) -> None:
    """Record how a run ended on its span: the saga's status, or ``paused`` when it stopped
    before an end (waiting for an operator, or interrupted)."""
    status = values.get("status") if values is not None else None
    _ended_with(span, str(status) if status else "paused")


class AttemptSpan:
    """The span of one attempt of a step's execute or compensate, current while it runs.

    Used as ``with AttemptSpan(saga_id, step, action, attempt, events):``; when the block ends,
    the outcome is the last event in ``events`` (the attempt loop appends the attempt's event
    there before the block ends). A block left by an exception (a kill, ``interrupt()``)
    records no outcome: the step did not finish.
    """

    __slots__ = ("_events", "_manager", "_span")

    def __init__(
        self, saga_id: str, step: str, action: str, attempt: int, events: Sequence[Event]
    ) -> None:
        self._events = events
        active = tracer()
        self._manager = (
            None
            if active is None
            else active.start_as_current_span(
                ATTEMPT_SPANS.get(action, f"saga.step.{action}"),
                attributes={SAGA_ID: saga_id, STEP: step, ACTION: action, ATTEMPT: attempt},
                record_exception=False,
                set_status_on_exception=False,
            )
        )

    def __enter__(self) -> Span:
        self._span = INVALID_SPAN if self._manager is None else self._manager.__enter__()
        return self._span

    def __exit__(self, *exc: Any) -> None:
        if self._manager is None:
            return
        if exc[0] is None and self._events:
            _ended_with(self._span, str(self._events[-1]["outcome"]))
        self._manager.__exit__(*exc)


def route_decided(
    saga_id: str,
    router: str,
    decided_by: str,
    events: Sequence[Event] = (),
    *,
    goto: str | None = None,
) -> None:
    """One span per route decision, ended at once: ``goto`` (the node chosen) when the
    decision names it, else the last ``route`` event's step; the outcome is that event's.

    A decision that took time (an LLM router asking its model) is wrapped in
    :func:`route_span` instead, so the model's own spans sit under it.
    """
    if tracer() is None:
        return
    with route_span(saga_id, router, decided_by) as span:
        route_outcome(span, events, goto=goto)


@contextmanager
def route_span(saga_id: str, router: str, decided_by: str) -> Iterator[Span]:
    """The span of one route decision, current while it is decided; end it with
    :func:`route_outcome`."""
    active = tracer()
    if active is None:
        yield INVALID_SPAN
        return
    with active.start_as_current_span(
        ROUTE_SPAN,
        attributes={SAGA_ID: saga_id, ROUTER: router, DECIDED_BY: decided_by, ACTION: "route"},
    ) as span:
        yield span


def route_outcome(span: Span, events: Sequence[Event], *, goto: str | None = None) -> None:
    """Record a decision on its span: the step chosen and the decision's outcome.

    The last ``route`` event says what was decided (a rejected proposal followed by an
    accepted one is ``ok``); without one, the decision is ``ok`` toward ``goto``.
    """
    if not span.is_recording():
        return
    routes = [e for e in events if e["action"] == "route"]
    chosen = goto if goto is not None else routes[-1]["step"] if routes else None
    if chosen is not None:
        span.set_attribute(STEP, FINISH if chosen == END else chosen)
    _ended_with(span, str(routes[-1]["outcome"]) if routes else "ok")


# -- propagation across processes -------------------------------------------------------------


def trace_carrier() -> dict[str, str]:
    """The current trace context as W3C headers (``traceparent``, ``tracestate``): empty when
    no span is recording (no SDK installed, or nothing traced)."""
    carrier: dict[str, str] = {}
    if trace.get_current_span().get_span_context().is_valid:
        propagate.inject(carrier)
    return carrier


@contextmanager
def continued_from(carrier: Mapping[str, str] | None) -> Iterator[None]:
    """Make the trace context of ``carrier`` (from :func:`trace_carrier`, in another process)
    current for the block, so spans started in it join that trace; nothing when empty."""
    if not carrier:
        yield
        return
    token = otel_context.attach(propagate.extract(dict(carrier)))
    try:
        yield
    finally:
        otel_context.detach(token)
