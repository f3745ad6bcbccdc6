"""Choreography: the same participants coordinated by events on a bus.

Each name is imported on first use (PEP 562): a module of this package, say the bus
opener ``sagagraph list`` reads the event log with, loads without the agents and LangGraph.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from sagagraph.choreography.signing import BusKey, load_bus_key
    from sagagraph.choreography.topology import (
        Choreography,
        EventNames,
        derive_choreography,
        register_event_names,
    )

_EXPORTS = {
    "sagagraph.choreography.bus": "Consumer DeadLetter EventBus",
    "sagagraph.choreography.buses": "open_bus",
    "sagagraph.choreography.messages": "SagaMessage",
    "sagagraph.choreography.projection": "choreography_view",
    "sagagraph.choreography.signing": "BusKey load_bus_key",
    "sagagraph.choreography.runner": (
        "agents_in_threads choreographed_sagas choreography_status run_agent "
        "run_choreographed_saga saga_events start_choreographed_saga wait_for_sagas"
    ),
    "sagagraph.choreography.topology": (
        "Choreography EventNames derive_choreography register_event_names"
    ),
}
"""Each module that defines public names, and those names."""

_LAZY = {name: module for module, names in _EXPORTS.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next look-up is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "BusKey",
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
    "load_bus_key",
    "open_bus",
    "register_event_names",
    "run_agent",
    "run_choreographed_saga",
    "saga_events",
    "start_choreographed_saga",
    "wait_for_sagas",
]
