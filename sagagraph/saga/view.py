"""The saga's records and its JSON view, shared by orchestration and choreography.

Both coordination styles keep the same records (step results, compensations, an append-only
event trail, token usage) and answer ``status`` with the same JSON object, built here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, NotRequired, TypedDict

from sagagraph.redaction import redact
from sagagraph.saga.protocol import Usage
from sagagraph.storable_text import storable_text

Status = Literal[
    "queued",
    "running",
    "compensating",
    "completed",
    "rolled_back",
    "compensation_failed",
    "resolved_by_operator",
    "waiting_for_operator",
]
"""Lifecycle: running -> completed, or running -> compensating -> rolled_back, or
compensating -> compensation_failed (needs an operator) -> resolved_by_operator. A saga
submitted to the work queue is ``queued`` until its first step has run. A running saga whose
tool calls wait for an operator's approval shows ``waiting_for_operator`` (its view only: the
stored status stays ``running``)."""

WAITING_FOR_OPERATOR: Status = "waiting_for_operator"
"""The view's status while tool calls wait for approval (``approvals`` lists them)."""

QUEUED: Status = "queued"
"""A submitted saga no step has run for yet (its input checkpoint is all there is)."""


Action = Literal[
    "execute",
    "compensate",
    "route",
    "finish",
    "resolve",
    "escalate",
    "tool_call",
    "tool_undo",
    "pivot",
]
"""What an event records: a step's execute or compensate, a routing decision, the end, an
agent step's tool call or the undo of one (the tools' own actions, spelled here so the
``Literal`` lists every action a stored event may carry)."""
EventOutcome = Literal[
    "ok",
    "error",
    "retry",
    "halted",
    "rejected",
    "skipped",
    "timeout",
    "waiting",
    "rollback",
    "dead_letter",
    "irreversible",
]
"""How it went."""


class Event(TypedDict):
    """One entry of the append-only audit trail."""

    ts: str
    step: str
    action: str
    outcome: str
    attempt: int
    detail: str
    tool: NotRequired[str]
    """The tool an agent step called or undid (``tool_call`` and ``tool_undo`` events)."""
    key: NotRequired[str]
    """That call's idempotency key (``saga_id:step:call-n``)."""
    by: NotRequired[str]
    """Who asked for what the event records (an operator's rollback), when they said."""
    started: NotRequired[str]
    """When the attempt an ``execute`` or ``compensate`` event ends began (``ts`` is when it
    ended); events recorded before durations were kept have none."""
    duration_ms: NotRequired[int]
    """How long that attempt took, in milliseconds: ``ts`` minus ``started``."""


class FailureRecord(TypedDict):
    """Why a step or a compensation gave up."""

    step: str
    phase: Literal["execute", "compensate"]
    error: str
    attempts: int


_second: tuple[int, str] = (-1, "")
"""The last whole second :func:`now` formatted, and its text: every event takes a timestamp."""


def now() -> str:
    """An ISO-8601 UTC timestamp with milliseconds (``2026-12-01T16:10:00.123Z``)."""
    global _second
    seconds, nanos = divmod(time.time_ns(), 1_000_000_000)
    last, text = _second
    if seconds != last:
        text = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _second = (seconds, text)
    return f"{text}.{nanos // 1_000_000:03d}Z"


def make_event(step: str, action: str, outcome: str, attempt: int = 1, detail: str = "") -> Event:
    return {
        "ts": now(),
        "step": step,
        "action": action,
        "outcome": outcome,
        "attempt": attempt,
        # Details quote model replies and errors: the one place every event passes.
        "detail": redact(detail),
    }


def stamp_ms(ts: str) -> int:
    """Milliseconds since the epoch of a :func:`now` timestamp (or any ISO-8601 one)."""
    at = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return round(at.timestamp() * 1000)


def timed(event: Event, started: str) -> Event:
    """``event`` (the end of an attempt) with when the attempt began and how long it took;
    the duration is computed from the two stamps, so the three always agree."""
    if started:
        event["started"] = started
        event["duration_ms"] = max(0, stamp_ms(event["ts"]) - stamp_ms(started))
    return event


def format_duration(ms: int) -> str:
    """An attempt's duration as ``events`` and the console show it (``0.073 s``)."""
    return f"{ms / 1000:.3f} s"


def describe_error(error: BaseException) -> str:
    """``Type: message`` on one line, short enough for an event, with secrets hidden."""
    text = storable_text(redact(" ".join(str(error).split()))) or "(no message)"
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(error).__name__}: {text}"


def total_usage(per_step: Mapping[str, Usage]) -> Usage:
    return {
        "input_tokens": sum(u.get("input_tokens", 0) for u in per_step.values()),
        "output_tokens": sum(u.get("output_tokens", 0) for u in per_step.values()),
    }


TOOL_CALL: Action = "tool_call"
"""Event action of a tool call an agent step made (outcome ``ok`` or ``error``)."""
TOOL_UNDO: Action = "tool_undo"
"""Event action of the undo of one tool call (``ok``, ``retry``, ``error``, ``irreversible``)."""
DEAD_LETTER: EventOutcome = "dead_letter"
"""The outcome of the event that records a saga dead-lettered by the work queue."""


def tools_by_step(events: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The view's ``tools``: each agent step's tool calls, in call order, with where each stands.

    Tool calls and their undos are events of the step that made them (each with the tool and
    the call's idempotency key). ``status`` is ``forward`` (the call took effect), ``failed``
    (the tool reported an error), ``undone`` (its undo ran), or ``not_undone`` (its undo gave
    up or the tool is irreversible). A call whose result was lost in a crash shows up once its
    undo ran.
    """
    steps: dict[str, dict[str, dict[str, Any]]] = {}
    for event in events:
        key = event.get("key")
        if event["action"] not in (TOOL_CALL, TOOL_UNDO) or not key:
            continue
        calls = steps.setdefault(event["step"], {})
        call = calls.setdefault(key, {"tool": event.get("tool"), "key": key, "status": "forward"})
        if event["action"] == TOOL_CALL:
            call["status"] = "forward" if event["outcome"] == "ok" else "failed"
        elif event["outcome"] == "ok":
            call["status"] = "undone"
        elif event["outcome"] in ("error", "irreversible"):
            call["status"] = "not_undone"
    return {step: list(calls.values()) for step, calls in steps.items()}


def dead_letter(events: Sequence[Event]) -> Event | None:
    """The view's ``dead_letter``: the event of a work queue that gave up on the saga (its
    message redelivered too often) while it is the saga's last event, so the saga needs an
    operator; once anything runs again for the saga, later events follow and it is not."""
    return events[-1] if events and events[-1]["outcome"] == DEAD_LETTER else None


def saga_view(values: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON object ``status --json`` prints, from a saga's state values, whichever style
    ran the saga (a blackboard saga's view also shows its ``board``)."""
    results: Mapping[str, Mapping[str, Any]] = values.get("results") or {}
    events: list[Event] = list(values.get("events") or [])
    completed = [s for s in values.get("completed") or [] if s in results]
    outputs = {s: results[s]["output"] for s in completed if results[s].get("output")}
    usage_by_step: Mapping[str, Usage] = values.get("usage") or {}
    view = {
        "saga_id": values.get("saga_id"),
        "saga": values.get("saga"),
        "input": dict(values.get("input") or {}),
        "status": values.get("status") or "running",
        "reason": values.get("reason"),
        "mode": values.get("mode") or "orchestration",
        "router": values.get("router") or "deterministic",
        "completed": completed,
        "compensated": list(values.get("compensated") or []),
        "outputs": outputs,
        "results": {s: dict(results[s].get("data") or {}) for s in completed},
        "halted": values.get("halted"),
        "failure": values.get("failure"),
        "compensation_failure": values.get("compensation_failure"),
        "skipped": list(values.get("skipped") or []),
        "events": events,
        "usage": total_usage(usage_by_step),
        "usage_by_step": {s: dict(u) for s, u in usage_by_step.items()},
        # Tool calls waiting for an operator's approval: read from the paused tasks, which
        # the orchestration's view fills in (sagagraph.graph.state).
        "approvals": [],
        "dead_letter": dead_letter(events),
        "tools": tools_by_step(events),
        # Which side of its pivot the saga is on (a saga without one: None, False), the
        # retriable step waiting for an operator past it, and the semantic locks it holds
        # (filled in by readers that know its store).
        "pivot": values.get("pivot"),
        "past_pivot": bool(values.get("pivot")) and values.get("pivot") in completed,
        "forward_failure": values.get("forward_failure"),
        "locks": [],
    }
    if "board" in values:
        view["board"] = [dict(e) for e in values["board"]]
    return view
