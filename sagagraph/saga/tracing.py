"""OpenTelemetry spans of sagas (:class:`OpenTelemetryHooks`): each run of a saga, each attempt of
a step, each attempt of a compensation and each route decision, with the saga id, the step and
the outcome as attributes.

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

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import INVALID_SPAN, Span, Status, StatusCode

from sagagraph.saga.hooks import RouteDecision, SagaHooks
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

_FAILED = frozenset(
    {"error", "timeout", "rejected", "dead_letter", "rolled_back", "compensation_failed"}
)
"""Outcomes that mark a span's status as an error: a failed attempt or route, and a saga that
did not complete (a run span's outcome is the saga's status)."""


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


def _ended_with(span: Span, outcome: str, detail: str = "") -> None:
    """Stamp ``outcome`` on ``span``; a failed one is an ERROR described by ``detail`` (the
    event's redacted ``Type: message``) or else by the outcome itself."""
    if not span.is_recording():
        return
    span.set_attribute(OUTCOME, outcome)
    if outcome in _FAILED:
        span.set_status(Status(StatusCode.ERROR, detail or outcome))


def _record_exception(span: Span, event: Event) -> None:
    """An ``exception`` span event from a failed attempt's event, as OpenTelemetry's
    conventions name it (``exception.type``, ``exception.message``). Built from the event's
    ``Type: message`` detail, already redacted, never from the exception object: the span must
    not carry what the saga's own audit trail hides."""
    if not span.is_recording() or event["outcome"] not in ("error", "timeout", "retry"):
        return
    kind, sep, message = str(event.get("detail", "")).partition(": ")
    if not sep or not kind.isidentifier():
        kind, message = "Error", str(event.get("detail", ""))
    span.add_event("exception", {"exception.type": kind, "exception.message": message})


@contextmanager
def saga_span(saga_id: str, operation: str) -> Iterator[Span]:
    """A saga span (``operation``: submit, work, start...) current while the block runs: what
    a message's trace carrier continues (:func:`trace_carrier`). Runs are traced by
    :class:`OpenTelemetryHooks`."""
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


_OPEN = otel_context.create_key("sagagraph-open-span")
"""The context key of the span a hook opened and has not ended yet (with its kind and the
token that restores the context before it)."""


class _Opened:
    __slots__ = ("kind", "span", "token")

    def __init__(self, kind: str, span: Span) -> None:
        self.kind = kind
        self.span = span
        self.token: object = None


class OpenTelemetryHooks(SagaHooks):
    """sagagraph's spans, as hooks: one span per run of a saga (``saga run``, ``saga
    resume``...), per attempt of a step's execute or compensate, and per route decision, with
    the saga id, the step and the outcome as attributes.

    A run's span and an attempt's span are current while they last, so the attempts of a run
    sit under its span, and a step's own instrumented calls (a model client's) under its
    attempt. Installed by default; nothing is made until an SDK tracer provider is.
    """

    def _open(self, kind: str, name: str, attributes: dict[str, Any]) -> None:
        active = tracer()
        if active is None:
            return
        opened = _Opened(kind, active.start_span(name, attributes=attributes))
        context = otel_context.set_value(_OPEN, opened, trace.set_span_in_context(opened.span))
        opened.token = otel_context.attach(context)

    def _close(self, kind: str, outcome: str, event: Event | None = None) -> None:
        opened = otel_context.get_value(_OPEN)
        if not isinstance(opened, _Opened) or opened.kind != kind:
            return  # opened before a tracer provider was installed: nothing to end
        if event is not None:
            _record_exception(opened.span, event)
        detail = str(event.get("detail", "")) if event is not None else ""
        _ended_with(opened.span, outcome, detail)
        opened.span.end()
        otel_context.detach(opened.token)  # type: ignore[arg-type]

    def on_run_start(self, saga_id: str, operation: str) -> None:
        self._open("run", f"{SAGA_SPAN} {operation}", {SAGA_ID: saga_id, OPERATION: operation})

    def on_run_end(self, saga_id: str, outcome: str) -> None:
        self._close("run", outcome)

    def on_step_start(self, saga_id: str, step: str, action: str, attempt: int) -> None:
        name = ATTEMPT_SPANS.get(action, f"saga.step.{action}")
        attributes = {SAGA_ID: saga_id, STEP: step, ACTION: action, ATTEMPT: attempt}
        self._open("attempt", name, attributes)

    def on_step_end(self, saga_id: str, event: Event) -> None:
        self._close("attempt", str(event["outcome"]), event)

    def on_route(self, saga_id: str, decision: RouteDecision) -> None:
        active = tracer()
        if active is None:
            return
        attributes = {
            SAGA_ID: saga_id,
            ROUTER: decision.router,
            DECIDED_BY: decision.decided_by,
            ACTION: "route",
            STEP: decision.goto,
        }
        span = active.start_span(ROUTE_SPAN, attributes=attributes, start_time=decision.started_ns)
        _ended_with(span, decision.outcome)
        span.end()


OPEN_TELEMETRY = OpenTelemetryHooks()
"""The hooks every run is traced by (nothing while no SDK tracer provider is installed)."""


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
