"""What the scripted model answers, as each agent and as the router: the offline "LLM".

One script for both ways the examples run offline: :mod:`scripted_model` (a LangChain chat
model, for the demo and the notebook) and the scripted OpenAI-compatible server of the tests
(the real ``ChatOpenAI`` client over HTTP). Each agent reads its TASK line, calls its tool,
reads the answer, and says it is done; the hotel agent tries the next hotel on ``FULL``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

ROUTER_PREFIX = "You route a saga"
"""How the LLM router's system prompt starts (sagagraph/graph/prompts/router.txt)."""


@dataclass(frozen=True)
class Decision:
    """One reply: tool calls to make, or the final answer."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answer: str = ""


def task_of(text: str) -> dict[str, Any]:
    """The JSON after ``TASK`` in the agent's first message."""
    for line in text.splitlines():
        if line.startswith("TASK "):
            task: dict[str, Any] = json.loads(line[len("TASK ") :])
            return task
    raise ValueError("scripted model: no TASK line in the task message")


def decide(system: str, task_text: str, tool_results: list[str]) -> Decision:
    """The next reply of the agent whose instructions are ``system``."""
    task = task_of(task_text)
    role = system.split(":", 1)[0].strip()
    last = tool_results[-1] if tool_results else None
    if role == "flight agent":
        if last is None:
            return Decision(
                [("book_flight", {"flight": task["flight"], "traveller": task["traveller"]})]
            )
        return Decision(answer=f"Flight booked: {last}")
    if role == "hotel agent":
        if last is not None and not last.startswith("FULL"):
            return Decision(answer=f"Room held: {last}")
        hotels = task["hotels"]
        if len(tool_results) >= len(hotels):
            return Decision(answer="No hotel has a room.")
        args = {
            "hotel_name": hotels[len(tool_results)],
            "guest": task["guest"],
            "nights": task["nights"],
        }
        return Decision([("reserve_room", args)])
    if role == "billing agent":
        if last is None:
            return Decision(
                [("charge_wallet", {"owner": task["owner"], "amount_cents": task["amount_cents"]})]
            )
        return Decision(answer=f"Paid: {last}")
    raise ValueError(f"scripted model: no script for {role!r}")


def route(view_text: str) -> str:
    """The router's proposal as JSON: the first step not committed yet, else finish."""
    view = json.loads(view_text)
    pending = [s for s in view["steps"] if s not in view["committed"]]
    nxt = pending[0] if pending else "finish"
    return json.dumps({"next_step": nxt, "reason": "next in order"})
