"""The saga's records and its JSON view, shared by orchestration and choreography.

Both coordination styles keep the same records (step results, compensations, an append-only
event trail, token usage) and answer ``status`` with the same JSON object, built here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
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
    "execute", "compensate", "route", "finish", "resolve", "escalate", "tool_call", "tool_undo"
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


def committed_order(events: Sequence[Mapping[str, Any]], results: Mapping[str, Any]) -> list[str]:
    """Steps whose result is still committed, in the order they committed."""
    order: list[str] = []
    for e in events:
        if e["action"] == "execute" and e["outcome"] == "ok" and e["step"] not in order:
            order.append(e["step"])
    order = [s for s in order if s in results]
    # A result can predate its event only if state was written by hand; keep it visible.
    return order + [s for s in results if s not in order]


ViewSection = Callable[[Mapping[str, Any], Sequence[Event]], Mapping[str, Any]]
"""A part of the view a coordination style or the tools own: their keys, from the saga's state
values and its events (the board, a dead letter, the tool calls)."""

_SECTIONS: list[ViewSection] = []


def add_view_section(section: ViewSection) -> ViewSection:
    """Add ``section``'s keys to every view built from now on; returns ``section``.

    The kernel's view names nothing above it: each part that keeps state or events of its own
    contributes its keys here (``sagagraph/__init__.py`` adds them all when sagagraph is
    imported, so every view has the same keys whichever modules a process loaded).
    """
    if section not in _SECTIONS:
        _SECTIONS.append(section)
    return section


def saga_view(values: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON object ``status --json`` prints, from a saga's state values: the kernel's keys,
    then those of each added section (:func:`add_view_section`)."""
    results: Mapping[str, Mapping[str, Any]] = values.get("results") or {}
    events: list[Event] = list(values.get("events") or [])
    completed = committed_order(events, results)
    outputs = {s: results[s]["output"] for s in completed if results[s].get("output")}
    usage_by_step: Mapping[str, Usage] = values.get("usage") or {}
    view = {
        "saga_id": values.get("saga_id"),
        "saga": values.get("saga"),
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
        # the orchestration's view fills in (sagagraph.graph.state_view).
        "approvals": [],
    }
    for section in _SECTIONS:
        view.update(section(values, events))
    return view
