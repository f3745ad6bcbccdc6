"""The flight agent: books a seat through the airline partner; its undo cancels the booking."""

from __future__ import annotations

import json

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool, tool

from examples.travel_booking.stores import Airline
from examples.travel_swarm.partners import saga_of
from sagagraph import (
    Step,
    StepContext,
    ToolCall,
    agent_step,
    compensable,
    idempotency_key,
    read_only,
)

NAME = "flight"
SYSTEM_PROMPT = (
    "flight agent: book the traveller's flight with book_flight, checking seats first if "
    "you like. Answer with one short sentence once it is booked."
)


def flight_tools(airline: Airline) -> list[BaseTool]:
    """``seats_free`` (read-only) and ``book_flight`` (compensable: ``cancel`` by key)."""

    def cancel_flight(call: ToolCall) -> None:
        airline.cancel(call["key"], saga_of(call["key"]))

    @tool
    def seats_free(flight: str) -> int:
        """Free seats on ``flight``."""
        return airline.seats_free(flight)

    @compensable(undo=cancel_flight)
    @tool
    def book_flight(flight: str, traveller: str) -> str:
        """Book one seat on ``flight`` for ``traveller``; returns the booking as JSON."""
        key = idempotency_key()
        booking = airline.book(key, saga_of(key), flight, traveller)
        return json.dumps({"booking": key, "price_cents": booking["price_cents"]})

    return [read_only(seats_free), book_flight]


def task(ctx: StepContext) -> str:
    """The flight agent's task: the flight and the traveller, as a TASK line of JSON."""
    wanted = {"flight": ctx.input["flight"], "traveller": ctx.input["traveller"]}
    return f"Book this flight.\nTASK {json.dumps(wanted)}"


def flight_agent(airline: Airline, model: BaseChatModel) -> Step:
    """The flight agent as a saga step, thinking with ``model``."""
    return agent_step(NAME, model, flight_tools(airline), prompt=task, system_prompt=SYSTEM_PROMPT)
