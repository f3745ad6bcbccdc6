"""Trace context on work-queue messages: a submitted saga's worker run joins the submitter's trace.

What a Celery task (or any broker message) needs, and nothing of Celery itself:

- the submitter wraps the submission in :func:`submit_span` and sends :func:`trace_headers`
  with the message (``task.apply_async(..., headers=trace_headers())``: Celery hands custom
  headers to the task as attributes of ``self.request``);
- the worker runs the saga inside :func:`worker_span`, given the message's headers (or
  ``self.request``): its run, attempt and route spans then sit under the submission's span in
  one trace.

Headers hold the W3C ``traceparent`` and ``tracestate`` only; anything else a broker adds is
ignored, and a message without them starts a trace of its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any

from opentelemetry.trace import Span

from sagagraph.saga.tracing import continued_from, saga_span, trace_carrier

TRACE_HEADERS = ("traceparent", "tracestate")
"""The header names the trace context travels under (W3C Trace Context)."""


def trace_headers() -> dict[str, str]:
    """The current trace context as message headers; empty when nothing is traced."""
    return trace_carrier()


def carried_trace(headers: Mapping[str, Any] | object | None) -> dict[str, str]:
    """The trace headers of a message: from a mapping (AMQP headers, Celery's
    ``request.headers``) or an object with them as attributes (Celery's ``self.request``);
    values that are not text are ignored."""
    if headers is None:
        return {}
    found: dict[str, str] = {}
    read = headers.get if isinstance(headers, Mapping) else partial(getattr, headers)
    for name in TRACE_HEADERS:
        value = read(name, None)
        if isinstance(value, bytes):
            value = value.decode("ascii", errors="replace")
        if isinstance(value, str) and value:
            found[name] = value
    return found


@contextmanager
def submit_span(saga_id: str) -> Iterator[Span]:
    """The span of one saga's submission; :func:`trace_headers` inside it carry it."""
    with saga_span(saga_id, "submit") as span:
        yield span


@contextmanager
def worker_span(saga_id: str, headers: Mapping[str, Any] | object | None) -> Iterator[Span]:
    """The span of a worker's handling of one queued saga, in the submitter's trace when the
    message carried one (:func:`carried_trace`); the saga's run spans nest under it."""
    with continued_from(carried_trace(headers)), saga_span(saga_id, "work") as span:
        yield span
