"""The one way to build each record a saga keeps when it stops going forward, ends, or pages
an operator.

Orchestration (step nodes, the LLM router, the ``compensate`` node), choreography (each
agent's reactions), the blackboard and recovery all build their failure, halt and finish
records here, so a record and its ``reason`` line read the same whichever style wrote them.

A compensation that gives up after its retries is the one way a saga pages an operator: the
``escalate`` node (orchestration) and the step whose compensation gave up (choreography) both
record :func:`escalation_event` and call the hooks' ``on_escalation``, so the CRITICAL log
line, the alert and the ``escalate`` event read the same whichever style ran the saga.
:class:`AlertHooks` turns an alert callable (``SAGAGRAPH_ALERT_HOOK``) into such a hook.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from sagagraph.errors import ConfigurationError
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.names import ESCALATE, SAGA
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


ESCALATION = ESCALATE
"""Event action recorded once when a compensation gives up and an operator is alerted."""

AlertHook = Callable[[dict[str, Any]], None]
"""An alert: called with :func:`escalation_payload` when a compensation gives up."""


def escalation_payload(saga_id: str, failure: FailureRecord) -> dict[str, Any]:
    """What an alert receives: the saga id and the compensation's failure record."""
    return {"saga_id": saga_id, **failure}


def escalation_event(saga_id: str, failure: FailureRecord) -> Event:
    """Log CRITICAL and return the ``escalate`` event to record; the caller then tells the
    hooks (``on_escalation``)."""
    log.critical(
        "saga %s needs an operator: compensation of %s failed after %d attempt(s): %s",
        saga_id,
        failure["step"],
        failure["attempts"],
        failure["error"],
    )
    detail = (
        f"needs an operator: compensation failed after {failure['attempts']} "
        f"attempt(s): {failure['error']}"
    )
    return make_event(failure["step"], ESCALATION, "waiting", 1, detail)


def alert_hooks(alert: AlertHook | None) -> SagaHooks | None:
    """:class:`AlertHooks` calling ``alert``; None without one."""
    return AlertHooks(alert) if alert is not None else None


class AlertHooks(SagaHooks):
    """Hooks that call ``alert`` with :func:`escalation_payload` when a compensation gives up
    (an alert that raises is logged, never raised: hooks are isolated)."""

    def __init__(self, alert: AlertHook) -> None:
        self.alert = alert

    def on_escalation(self, saga_id: str, failure: FailureRecord) -> None:
        self.alert(escalation_payload(saga_id, failure))


def load_alert_hook(spec: str | None = None) -> AlertHook | None:
    """The callable ``SAGAGRAPH_ALERT_HOOK`` names (``package.module:function``), or None.

    It is called with the failure record (saga id, step, error, attempts) the moment a
    compensation exhausts its retries, beside the CRITICAL log record.
    """
    spec = spec if spec is not None else os.environ.get("SAGAGRAPH_ALERT_HOOK", "")
    if not spec.strip():
        return None
    module_name, _, attr = spec.strip().partition(":")
    if not module_name or not attr:
        raise ConfigurationError(f"SAGAGRAPH_ALERT_HOOK={spec!r}: expected package.module:function")
    try:
        hook = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as error:
        raise ConfigurationError(f"SAGAGRAPH_ALERT_HOOK={spec!r}: {error}") from None
    if not callable(hook):
        raise ConfigurationError(f"SAGAGRAPH_ALERT_HOOK={spec!r}: {attr} is not callable")
    return hook  # type: ignore[no-any-return]


def alerts_from_env() -> SagaHooks | None:
    """:class:`AlertHooks` for ``SAGAGRAPH_ALERT_HOOK``; None when it is not set."""
    return alert_hooks(load_alert_hook())
