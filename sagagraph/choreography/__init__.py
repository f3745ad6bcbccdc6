"""Choreography: the same participants coordinated by events on a bus."""

from sagagraph.choreography.bus import Consumer, DeadLetter, EventBus
from sagagraph.choreography.buses import open_bus
from sagagraph.choreography.messages import SagaMessage
from sagagraph.choreography.projection import choreography_view
from sagagraph.choreography.runner import (
    agents_in_threads,
    choreographed_sagas,
    choreography_status,
    run_agent,
    run_choreographed_saga,
    saga_events,
    start_choreographed_saga,
    wait_for_sagas,
)
from sagagraph.choreography.topology import (
    Choreography,
    EventNames,
    derive_choreography,
    register_event_names,
)

__all__ = [
    "Choreography",
    "Consumer",
    "DeadLetter",
    "EventBus",
    "EventNames",
    "SagaMessage",
    "agents_in_threads",
    "choreographed_sagas",
    "choreography_status",
    "choreography_view",
    "derive_choreography",
    "open_bus",
    "register_event_names",
    "run_agent",
    "run_choreographed_saga",
    "saga_events",
    "start_choreographed_saga",
    "wait_for_sagas",
]
