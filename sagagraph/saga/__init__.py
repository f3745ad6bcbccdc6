"""The saga kernel."""

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

__all__ = [
    "Failed",
    "Finished",
    "HaltRecord",
    "Halted",
    "compensation_failed",
    "failure_record",
    "halt_record",
    "rollback_finished",
    "rollback_requested",
    "router_aborted",
    "saga_halted",
    "step_failed",
]
