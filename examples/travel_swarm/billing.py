"""The billing agent: charges the trip to the wallet; INSUFFICIENT_FUNDS fails the saga."""

from __future__ import annotations

import json

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool, tool

from examples.travel_booking.stores import Wallet
from examples.travel_swarm.partners import InsufficientFunds, saga_of
from sagagraph import Step, StepContext, ToolCall, agent_step, compensable, idempotency_key

NAME = "billing"
SYSTEM_PROMPT = (
    "billing agent: charge the trip's total to the traveller's wallet with charge_wallet. "
    "Answer with one short sentence once it is paid."
)


class PaymentRefused(Exception):
    """INSUFFICIENT_FUNDS: the wallet cannot pay; no retry or other tool changes that."""


def billing_tools(wallet: Wallet) -> list[BaseTool]:
    """``charge_wallet`` (compensable: ``refund`` by key). A refused payment raises: the run,
    and so the saga, fails."""

    def refund(call: ToolCall) -> None:
        wallet.refund(call["key"], saga_of(call["key"]))

    @tool
    def charge_wallet(owner: str, amount_cents: int) -> str:
        """Charge ``amount_cents`` to ``owner``'s wallet; returns the charge as JSON."""
        key = idempotency_key()
        try:
            charge = wallet.charge(key, saga_of(key), owner, amount_cents)
        except InsufficientFunds as short:
            raise PaymentRefused(f"INSUFFICIENT_FUNDS: {short}") from None
        return json.dumps({"charge": key, "amount_cents": charge["amount_cents"]})

    return [compensable(charge_wallet, undo=refund)]


def trip_total(ctx: StepContext) -> int:
    """What the flight and hotel agents booked, in cents, from their logged tool results."""
    total = 0
    for step in ("flight", "hotel"):
        for call in ctx.results[step].data.get("tool_calls") or []:
            if call["status"] == "forward" and call["result"]:
                total += int(json.loads(call["result"])["price_cents"])
    return total


def task(ctx: StepContext) -> str:
    """The billing agent's task: who pays, and how much."""
    wanted = {"owner": ctx.input["traveller"], "amount_cents": trip_total(ctx)}
    return f"Charge the trip.\nTASK {json.dumps(wanted)}"


def billing_agent(wallet: Wallet, model: BaseChatModel) -> Step:
    """The billing agent as a saga step."""
    return agent_step(NAME, model, billing_tools(wallet), prompt=task, system_prompt=SYSTEM_PROMPT)
