"""Choreography: the same participants coordinated by events on a bus.

Each name is imported on first use (PEP 562): a module of this package, say the bus
opener ``sagagraph list`` reads the event log with, loads without the step services and LangGraph.
"""

from typing import TYPE_CHECKING

from sagagraph.saga import lazy_exports

if TYPE_CHECKING:
    from sagagraph.choreography.bus import Consumer, DeadLetter, EventBus
    from sagagraph.choreography.buses import open_bus
    from sagagraph.choreography.messages import SagaMessage
    from sagagraph.choreography.projection import choreography_view
    from sagagraph.choreography.runner import (
        choreographed_sagas,
        choreography_status,
        run_choreographed_saga,
        run_step_service,
        saga_events,
        services_in_threads,
        start_choreographed_saga,
        wait_for_sagas,
    )
    from sagagraph.choreography.signing import BusKey, load_bus_key
    from sagagraph.choreography.topology import (
        Choreography,
        EventNames,
        derive_choreography,
    )

_EXPORTS = {
    "sagagraph.choreography.bus": "Consumer DeadLetter EventBus",
    "sagagraph.choreography.buses": "open_bus",
    "sagagraph.choreography.messages": "SagaMessage",
    "sagagraph.choreography.projection": "choreography_view",
    "sagagraph.choreography.signing": "BusKey load_bus_key",
    "sagagraph.choreography.runner": (
        "services_in_threads choreographed_sagas choreography_status run_step_service "
        "run_choreographed_saga saga_events start_choreographed_saga wait_for_sagas"
    ),
    "sagagraph.choreography.topology": ("Choreography EventNames derive_choreography"),
}
"""Each module that defines public names, and those names."""

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


__all__ = [
    "BusKey",
    "Choreography",
    "Consumer",
    "DeadLetter",
    "EventBus",
    "EventNames",
    "SagaMessage",
    "choreographed_sagas",
    "choreography_status",
    "choreography_view",
    "derive_choreography",
    "load_bus_key",
    "open_bus",
    "run_choreographed_saga",
    "run_step_service",
    "saga_events",
    "services_in_threads",
    "start_choreographed_saga",
    "wait_for_sagas",
]
