"""The messages step services exchange on the bus: plain JSON, one per event.

A message carries what the audit trail needs (the events its handler recorded, token usage)
and the emitter's own result; the copies of the saga input and of earlier results it carries
are for readers of the log, never trusted by a step service (which reads them from the saga's
history: :mod:`.saga_facts`). Its id is unique per publication (``<saga_id>:<type>:<random>``):
a second event of the same type, forged or not, never shares the genuine one's id, and a
redelivery or a replay of one publication keeps its id, so every reader drops the duplicate.
A step service that runs a handler again after a crash re-emits what its ledger recorded, ids
included.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict

from sagagraph.errors import BusError
from sagagraph.saga.protocol import StepRecord, Usage
from sagagraph.saga.tracing import trace_carrier
from sagagraph.saga.view import Event, FailureRecord, now

Kind = Literal["start", "done", "compensated", "compensation_failed"]
Terminal = Literal["completed", "rolled_back", "compensation_failed"]

KINDS: frozenset[str] = frozenset({"start", "done", "compensated", "compensation_failed"})
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
"""Larger messages are refused: state belongs in stores, not on the bus."""


class SagaMessage(TypedDict):
    """One event on the bus."""

    id: str
    """``<saga_id>:<type>:<random>``: unique per publication (see the module's docstring)."""
    type: str
    """The event name, also the routing key (``validated``)."""
    kind: Kind
    """What happened: a saga started, a step committed, a step compensated, or gave up."""
    saga: str
    """Name of the saga definition."""
    saga_id: str
    step: str | None
    """The step that emitted the event (None for the start event)."""
    next_step: str | None
    """The step expected to react (None when nobody does)."""
    terminal: Terminal | None
    """Set when the event ends the saga (or leaves it to an operator)."""
    ts: str
    input: dict[str, Any]
    """The saga's input, as given when it started."""
    fail_at: str | None
    """Step into which a failure is injected (``--fail-at``)."""
    results: dict[str, StepRecord]
    """Results of the steps committed now, by step name (what later steps see)."""
    compensated: list[str]
    """Compensations that ran so far, in order."""
    ran_compensation: bool
    """True when this event's step ran its compensation (False after a halt)."""
    reason: str | None
    halted: dict[str, Any] | None
    failure: FailureRecord | None
    compensation_failure: FailureRecord | None
    events: list[Event]
    """Audit entries recorded by the handler that emitted this event."""
    usage: dict[str, Usage]
    """Tokens spent by that handler, by step."""
    trace: NotRequired[dict[str, str]]
    """The emitter's OpenTelemetry trace context (W3C ``traceparent``, ``tracestate``), so the
    handler's spans join the saga's trace; absent when nothing was traced. Signed with the
    rest: a forger cannot graft a saga's events onto another trace."""
    sig: NotRequired[str]
    """HMAC-SHA256 of the rest, with the deployment key (:mod:`.signing`); absent unsigned."""


def message_id(saga_id: str, event_type: str) -> str:
    """A new publication's id: readable prefix, 128 random bits nobody can guess ahead."""
    return f"{saga_id}:{event_type}:{uuid.uuid4().hex}"


def new_message(
    *,
    type: str,
    kind: Kind,
    saga: str,
    saga_id: str,
    input: Mapping[str, Any],
    step: str | None = None,
    next_step: str | None = None,
    terminal: Terminal | None = None,
    fail_at: str | None = None,
    results: Mapping[str, StepRecord] | None = None,
    compensated: list[str] | None = None,
    ran_compensation: bool = False,
    reason: str | None = None,
    halted: dict[str, Any] | None = None,
    failure: FailureRecord | None = None,
    compensation_failure: FailureRecord | None = None,
    events: list[Event] | None = None,
    usage: dict[str, Usage] | None = None,
) -> SagaMessage:
    message: SagaMessage = {
        "id": message_id(saga_id, type),
        "type": type,
        "kind": kind,
        "saga": saga,
        "saga_id": saga_id,
        "step": step,
        "next_step": next_step,
        "terminal": terminal,
        "ts": now(),
        "input": dict(input),
        "fail_at": fail_at,
        "results": dict(results or {}),
        "compensated": list(compensated or []),
        "ran_compensation": ran_compensation,
        "reason": reason,
        "halted": halted,
        "failure": failure,
        "compensation_failure": compensation_failure,
        "events": list(events or []),
        "usage": dict(usage or {}),
    }
    carrier = trace_carrier()
    if carrier:
        message["trace"] = carrier
    return message


def encode(message: SagaMessage) -> bytes:
    """JSON bytes; BusError when the message is not plain data or is too large."""
    try:
        body = json.dumps(message, separators=(",", ":")).encode()
    except (TypeError, ValueError) as error:
        raise BusError(
            f"event {message.get('id')!r}: not JSON-serialisable ({error}); step results "
            "must be plain data"
        ) from None
    if len(body) > MAX_MESSAGE_BYTES:
        raise BusError(
            f"event {message['id']!r}: {len(body)} bytes, more than {MAX_MESSAGE_BYTES}; "
            "keep large data in the step's store and put its path in the result"
        )
    return body


_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "id": str,
    "type": str,
    "kind": str,
    "saga": str,
    "saga_id": str,
    "input": dict,
    "results": dict,
    "compensated": list,
    "events": list,
    "usage": dict,
}


def decode(body: bytes) -> SagaMessage:
    """Parse and check a message; BusError naming the field when it is malformed."""
    if body[:1] == b"\x00":  # a log row whose body was not a BLOB (sqlite_bus.stored_body)
        raise BusError(f"event body: {body[1:].decode(errors='replace')}")
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, ValueError) as error:
        raise BusError(f"event body: not JSON ({error})") from None
    if not isinstance(data, dict):
        raise BusError(f"event body: expected a JSON object, got {type(data).__name__}")
    for name, expected in _REQUIRED.items():
        if not isinstance(data.get(name), expected):
            raise BusError(f"event {data.get('id')!r}: field {name!r} missing or malformed")
    if "sig" in data and not isinstance(data["sig"], str):
        raise BusError(f"event {data['id']!r}: field 'sig' malformed")
    trace = data.get("trace")
    if trace is not None and not (
        isinstance(trace, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in trace.items())
    ):
        raise BusError(f"event {data['id']!r}: field 'trace' malformed (expected text headers)")
    if data["kind"] not in KINDS:
        raise BusError(f"event {data['id']!r}: unknown kind {data['kind']!r}")
    defaults: dict[str, Any] = {
        "step": None,
        "next_step": None,
        "terminal": None,
        "ts": "",
        "fail_at": None,
        "ran_compensation": False,
        "reason": None,
        "halted": None,
        "failure": None,
        "compensation_failure": None,
    }
    for name, value in defaults.items():
        data.setdefault(name, value)
    message: SagaMessage = data  # type: ignore[assignment]
    return message
