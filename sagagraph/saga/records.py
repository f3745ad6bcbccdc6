"""The one way to build each record a saga keeps when it stops going forward or ends.

Orchestration (step nodes, the LLM router, the ``compensate`` node), choreography (each
agent's reactions), the blackboard and recovery all build their failure, halt and finish
records here, so a record and its ``reason`` line read the same whichever style wrote them.
The escalation record (the alert payload and the ``escalate`` event) is
:mod:`sagagraph.saga.escalation`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from sagagraph.saga.names import SAGA
from sagagraph.saga.view import Event, FailureRecord, describe_error, make_event
from sagagraph.storable_text import storable_text

log = logging.getLogger("sagagraph")

Phase = Literal["execute", "compensate"]


class HaltRecord(TypedDict):
    """Why a step (or the saga itself, on a forced rollback) stopped the saga on purpose."""

    step: str
    reason: str | None
    data: dict[str, Any]


@dataclass(frozen=True)
class Failed:
    """A failure record and the saga's ``reason`` line that goes with it."""

    failure: FailureRecord
    reason: str

    def update(self) -> dict[str, Any]:
        """The state fields that record it: the saga is compensating, for this reason."""
        return {"status": "compensating", "failure": self.failure, "reason": self.reason}


@dataclass(frozen=True)
class Halted:
    """A halt record and the saga's ``reason`` line that goes with it."""

    halted: HaltRecord
    reason: str

    def update(self) -> dict[str, Any]:
        """The state fields that record it (the saga then compensates what committed)."""
        return {"halted": self.halted, "reason": self.reason}


@dataclass(frozen=True)
class Finished:
    """How a rollback ends: its final status and the ``finish`` event that records it."""

    status: Literal["rolled_back", "resolved_by_operator"]
    event: Event


def failure_record(step: str, phase: Phase, error: str, attempts: int) -> FailureRecord:
    """Why ``step``'s execute or compensate gave up, after ``attempts`` attempts."""
    return {"step": step, "phase": phase, "error": error, "attempts": attempts}


def step_failed(
    saga_id: str, step: str, error: BaseException, attempts: int, described: str | None = None
) -> Failed:
    """A step's execute gave up after its retries (logged as a warning).

    ``described``: the error as its event already describes it (``StepAttempts.described``), so
    that it is not described and redacted a second time.
    """
    text = described if described is not None else describe_error(error)
    failure = failure_record(step, "execute", text, attempts)
    log.warning("saga %s: step %s failed: %s", saga_id, step, failure["error"])
    reason = f"step {step!r} failed after {attempts} attempt(s): {failure['error']}"
    return Failed(failure, reason)


def compensation_failed(step: str, error: BaseException, attempts: int) -> FailureRecord:
    """A step's compensation gave up after its retries: an operator must decide."""
    return failure_record(step, "compensate", describe_error(error), attempts)


def router_aborted(router: str, attempts: int, last_problem: str) -> Failed:
    """A router found no acceptable next step and its fallback is to abort."""
    error = (
        f"RouterAborted: no acceptable next step after {attempts} proposal(s); last: {last_problem}"
    )
    failure = failure_record(router, "execute", error, attempts)
    return Failed(failure, f"LLM router aborted: {error}")


def rollback_requested(step: str, reason: str) -> Failed:
    """An operator rolls back a saga whose ``step`` was in flight (it may have written part)."""
    reason = storable_text(reason)
    return Failed(failure_record(step, "execute", f"RollbackRequested: {reason}", 0), reason)


def halt_record(step: str, reason: str | None, data: Mapping[str, Any] | None = None) -> Halted:
    """``step`` stopped the saga on purpose (``StepResult(halt=True)``), for ``reason``."""
    reason = storable_text(reason) if reason is not None else None
    halted: HaltRecord = {"step": step, "reason": reason, "data": dict(data or {})}
    return Halted(halted, reason or f"step {step!r} halted the saga")


def saga_halted(reason: str) -> Halted:
    """The saga itself stops going forward (no step in flight: a forced rollback)."""
    reason = storable_text(reason)
    return Halted({"step": SAGA, "reason": reason, "data": {}}, reason)


def rollback_finished(ran: int, skipped: int = 0) -> Finished:
    """The end of a rollback: ``ran`` compensations ran, ``skipped`` were an operator's skips.

    ``rolled_back``, or ``resolved_by_operator`` when an operator skipped a compensation.
    """
    detail = f"{ran} compensation(s) ran"
    if skipped:
        detail += f"; {skipped} skipped by an operator"
    status: Literal["rolled_back", "resolved_by_operator"] = (
        "resolved_by_operator" if skipped else "rolled_back"
    )
    return Finished(status, make_event(SAGA, "finish", "ok", 1, detail))
