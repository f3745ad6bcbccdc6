"""Undo an agent's tool calls, newest first, each under a retry policy; report what is left.

Shared by the saga step (:mod:`sagagraph.tools.agent_step`) and the middleware used alone
(:mod:`sagagraph.tools.middleware`), so both undo alike and report alike. Nothing is
swallowed: an undo that still fails after its retries, and an irreversible call that ran, end
in :class:`~sagagraph.errors.ToolUndoError` naming every call left in effect, after every other
call was undone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from sagagraph.errors import IrreversibleToolError, ToolUndoError
from sagagraph.saga.protocol import Retry
from sagagraph.saga.view import Event, describe_error
from sagagraph.tools.calls import TOOL_UNDO
from sagagraph.tools.declare import ToolPolicy
from sagagraph.tools.records import ToolCall, tool_event

DEFAULT_UNDO_RETRY = Retry(max_attempts=3, backoff=0.05)
"""Retry policy of one undo when none is given (the same as a step's compensation)."""


@dataclass
class UndoReport:
    """What a rollback did, call by call."""

    undone: list[ToolCall] = field(default_factory=list)
    """Calls undone now (records with status ``undone``), in the order they were undone."""
    failed: list[ToolCall] = field(default_factory=list)
    """Calls still in effect (status ``undo_failed``): the undo gave up, or irreversible."""
    errors: dict[str, str] = field(default_factory=dict)
    """Why, by idempotency key."""
    events: list[Event] = field(default_factory=list)
    """One event per undo attempt, for the audit trail."""

    @property
    def records(self) -> list[ToolCall]:
        """Every record this rollback changed, for the log."""
        return [*self.undone, *self.failed]

    def error(self) -> ToolUndoError | None:
        """The error to raise when something is left in effect; None when all was undone."""
        if not self.failed:
            return None
        left = "; ".join(f"{c['tool']} {c['key']}: {self.errors[c['key']]}" for c in self.failed)
        message = f"{len(self.failed)} tool call(s) not undone: {left}"
        keys = [c["key"] for c in self.failed]
        only_irreversible = all(self.errors[k].startswith("irreversible") for k in keys)
        cls = IrreversibleToolError if only_irreversible else ToolUndoError
        return cls(message, keys)


def undo_calls(
    calls: Sequence[ToolCall],
    tools: Mapping[str, ToolPolicy],
    *,
    step: str,
    retry: Retry = DEFAULT_UNDO_RETRY,
    emit: Callable[[Event], object] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    on_undone: Callable[[ToolCall], object] | None = None,
) -> UndoReport:
    """Undo ``calls`` in the order given (newest first), each with ``retry``.

    Every call is attempted even when an earlier one gives up: what can be undone is, and
    the report names the rest. ``emit`` sees each event as it happens (the saga's trail);
    ``on_undone`` sees each call once its undo succeeded (the saga releases its lock).
    """
    report = UndoReport()

    def record(event: Event) -> None:
        report.events.append(event)
        if emit is not None:
            emit(event)

    for call in calls:
        policy = tools.get(call["tool"])
        if policy is None or policy.kind != "compensable" or policy.undo is None:
            why = "unknown tool: no undo"
            if policy is not None:
                why = "irreversible: its effect stays"
                if call["status"] == "unknown":  # a rejected call an approval may have run
                    why = "irreversible: an approval may have run it before its process died"
            record(tool_event(step, TOOL_UNDO, "irreversible", call, why))
            report.failed.append({**call, "status": "undo_failed"})
            report.errors[call["key"]] = why
            continue
        for attempt in range(1, retry.max_attempts + 1):
            try:
                policy.undo(call)
            except Exception as error:
                again = retry.should_retry(error, attempt)
                outcome = "retry" if again else "error"
                record(
                    tool_event(
                        step, TOOL_UNDO, outcome, call, describe_error(error), attempt=attempt
                    )
                )
                if again:
                    sleep(retry.delay(attempt))
                    continue
                report.failed.append({**call, "status": "undo_failed"})
                report.errors[call["key"]] = describe_error(error)
                break
            record(tool_event(step, TOOL_UNDO, "ok", call, attempt=attempt))
            report.undone.append({**call, "status": "undone"})
            if on_undone is not None:
                on_undone(call)
            break
    return report
