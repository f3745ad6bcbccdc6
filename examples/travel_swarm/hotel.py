"""The hotel agent: holds a room; a full hotel is a tool error the model recovers from."""

from __future__ import annotations

import json

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool, ToolException, tool

from examples.travel_booking.stores import Hotel
from examples.travel_swarm.partners import HOTELS, SoldOut, saga_of
from sagagraph import Step, StepContext, ToolCall, agent_step, compensable, idempotency_key

NAME = "hotel"
SYSTEM_PROMPT = (
    "hotel agent: reserve a room with reserve_room at the first hotel of the list; when a "
    "hotel answers FULL, try the next one. Answer with one short sentence once a room is held."
)


def hotel_tools(hotel: Hotel) -> list[BaseTool]:
    """``reserve_room`` (compensable: ``cancel`` by key). A full hotel answers ``FULL: ...``
    to the model instead of failing the run: the model then asks the next hotel."""

    def cancel_room(call: ToolCall) -> None:
        hotel.cancel(call["key"], saga_of(call["key"]))

    @tool
    def reserve_room(hotel_name: str, guest: str, nights: int) -> str:
        """Hold one room at ``hotel_name`` for ``nights``; returns the reservation as JSON."""
        key = idempotency_key()
        try:
            held = hotel.reserve(key, saga_of(key), hotel_name, guest, nights)
        except SoldOut as full:
            raise ToolException(f"FULL: {full}") from None
        return json.dumps({"reservation": key, "price_cents": held["price_cents"]})

    reserve_room.handle_tool_error = True  # the model sees "FULL: ..." and may try again
    return [compensable(reserve_room, undo=cancel_room)]


def task(ctx: StepContext) -> str:
    """The hotel agent's task: hotels in order of preference, the guest and the nights."""
    wanted = {
        "hotels": list(HOTELS),
        "guest": ctx.input["traveller"],
        "nights": ctx.input["nights"],
    }
    return f"Reserve a room.\nTASK {json.dumps(wanted)}"


def hotel_agent(hotel: Hotel, model: BaseChatModel) -> Step:
    """The hotel agent as a saga step."""
    return agent_step(NAME, model, hotel_tools(hotel), prompt=task, system_prompt=SYSTEM_PROMPT)
