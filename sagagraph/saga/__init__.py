"""The saga kernel: what every coordination style stands on.

The participant contract (:mod:`~sagagraph.saga.protocol`), step execution with its retries
and timeouts (one attempt loop, a sync driver in :mod:`~sagagraph.saga.execution` and an async
one in :mod:`~sagagraph.saga.async_execution`), the records every style writes
(:mod:`~sagagraph.saga.records`), events and the JSON view (:mod:`~sagagraph.saga.view`), ids,
escalation, the router's guard, and the names every part shares
(:mod:`~sagagraph.saga.names`). It imports nothing else of sagagraph but ``errors`` and
``redaction``.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sagagraph.saga.async_execution import acompensate_step, aexecute_step
    from sagagraph.saga.escalation import alert_operator, escalation_payload
    from sagagraph.saga.execution import (
        StepAttempts,
        collecting_events,
        compensate_step,
        emit_event,
        execute_step,
    )
    from sagagraph.saga.ids import new_saga_id, validate_saga_id
    from sagagraph.saga.names import (
        BLACKBOARD,
        CHOREOGRAPHY,
        COMPENSATE,
        ESCALATE,
        MODES,
        ORCHESTRATION,
        RESERVED_NAMES,
        SAGA,
        TERMINAL_STATUSES,
        reserve_names,
    )
    from sagagraph.saga.protocol import (
        Participant,
        Retry,
        SagaDefinition,
        Step,
        StepContext,
        StepRecord,
        StepResult,
        Usage,
        participant,
    )
    from sagagraph.saga.records import (
        Failed,
        Finished,
        Halted,
        HaltRecord,
        compensation_failed,
        failure_record,
        halt_record,
        rollback_finished,
        rollback_requested,
        router_aborted,
        saga_halted,
        step_failed,
    )
    from sagagraph.saga.view import Event, FailureRecord, Status, make_event, saga_view

# Imported on first use, as the package's own names are (``sagagraph/__init__.py``): the CLI's
# ``--help`` reads the statuses from the kernel without loading LangGraph.
_EXPORTS = {
    "sagagraph.saga.async_execution": "acompensate_step aexecute_step",
    "sagagraph.saga.escalation": "alert_operator escalation_payload",
    "sagagraph.saga.execution": (
        "StepAttempts collecting_events compensate_step emit_event execute_step"
    ),
    "sagagraph.saga.ids": "new_saga_id validate_saga_id",
    "sagagraph.saga.names": (
        "BLACKBOARD CHOREOGRAPHY COMPENSATE ESCALATE MODES ORCHESTRATION RESERVED_NAMES SAGA "
        "TERMINAL_STATUSES reserve_names"
    ),
    "sagagraph.saga.protocol": (
        "Participant Retry SagaDefinition Step StepContext StepRecord StepResult Usage participant"
    ),
    "sagagraph.saga.records": (
        "Failed Finished Halted HaltRecord compensation_failed failure_record halt_record "
        "rollback_finished rollback_requested router_aborted saga_halted step_failed"
    ),
    "sagagraph.saga.view": "Event FailureRecord Status make_event saga_view",
}
_LAZY = {name: module for module, names in _EXPORTS.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "BLACKBOARD",
    "CHOREOGRAPHY",
    "COMPENSATE",
    "ESCALATE",
    "MODES",
    "ORCHESTRATION",
    "RESERVED_NAMES",
    "SAGA",
    "TERMINAL_STATUSES",
    "Event",
    "Failed",
    "FailureRecord",
    "Finished",
    "HaltRecord",
    "Halted",
    "Participant",
    "Retry",
    "SagaDefinition",
    "Status",
    "Step",
    "StepAttempts",
    "StepContext",
    "StepRecord",
    "StepResult",
    "Usage",
    "acompensate_step",
    "aexecute_step",
    "alert_operator",
    "collecting_events",
    "compensate_step",
    "compensation_failed",
    "emit_event",
    "escalation_payload",
    "execute_step",
    "failure_record",
    "halt_record",
    "make_event",
    "new_saga_id",
    "participant",
    "reserve_names",
    "rollback_finished",
    "rollback_requested",
    "router_aborted",
    "saga_halted",
    "saga_view",
    "step_failed",
    "validate_saga_id",
]
