"""The supervisor: the saga that hands the trip to the flight, hotel and billing agents.

Deterministic order by default (flight, hotel, billing: no model decides the route), or the
LLM router behind sagagraph's guard (``router="llm"``), which refuses any step that is not
defined or not allowed now.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.graph import StateGraph

from examples.travel_swarm.billing import billing_agent
from examples.travel_swarm.flight import flight_agent
from examples.travel_swarm.hotel import hotel_agent
from examples.travel_swarm.partners import TravelStores
from sagagraph import RouterOptions, SagaDefinition, build_saga_graph


def swarm_saga(stores: TravelStores, model: BaseChatModel) -> SagaDefinition:
    """Flight, then hotel, then billing; each agent's tool calls undone newest first on failure."""
    return SagaDefinition.of(
        "travel_swarm",
        [
            flight_agent(stores.airline, model),
            hotel_agent(stores.hotel, model),
            billing_agent(stores.wallet, model),
        ],
    )


def swarm_graph(
    stores: TravelStores,
    model: BaseChatModel,
    router: Literal["deterministic", "llm"] = "deterministic",
    router_options: RouterOptions | None = None,
) -> StateGraph[Any, None, Any, Any]:
    """The uncompiled supervisor graph; ``router="llm"`` asks ``model`` for each next step."""
    return build_saga_graph(
        swarm_saga(stores, model),
        router,
        router_model=model if router == "llm" else None,
        router_options=router_options,
    )
