"""The one way a saga pages an operator: a compensation gave up after its retries.

Orchestration (the ``escalate`` node) and choreography (the agent whose compensation gave up)
both call :func:`alert_operator`, so the CRITICAL log line, the alert hook's payload and the
``escalate`` event read the same whichever style ran the saga.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sagagraph.saga.names import ESCALATE
from sagagraph.saga.view import Event, FailureRecord, describe_error, make_event

log = logging.getLogger("sagagraph")

ESCALATION = ESCALATE
"""Event action recorded once when a compensation gives up and an operator is alerted."""

AlertHook = Callable[[dict[str, Any]], None]


def escalation_payload(saga_id: str, failure: FailureRecord) -> dict[str, Any]:
    """What the alert hook receives: the saga id and the compensation's failure record."""
    return {"saga_id": saga_id, **failure}


def alert_operator(saga_id: str, failure: FailureRecord, on_escalation: AlertHook | None) -> Event:
    """Log CRITICAL, call the alert hook (its own failure is logged, never raised), and return
    the ``escalate`` event to record."""
    log.critical(
        "saga %s needs an operator: compensation of %s failed after %d attempt(s): %s",
        saga_id,
        failure["step"],
        failure["attempts"],
        failure["error"],
    )
    if on_escalation is not None:
        try:
            on_escalation(escalation_payload(saga_id, failure))
        except Exception as error:  # an alert hook must not break the saga
            log.error("alert hook failed: %s", describe_error(error))
    detail = (
        f"needs an operator: compensation failed after {failure['attempts']} "
        f"attempt(s): {failure['error']}"
    )
    return make_event(failure["step"], ESCALATION, "waiting", 1, detail)
