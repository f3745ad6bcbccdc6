"""The four steps of a food order, built from plain functions with ``sagagraph.participant``.

``confirm_order`` is the last step and its compensation is a declared no-op: once the order
is confirmed nothing after it can fail, and if it never ran there is nothing to undo (the
order itself is cancelled by ``create_order``'s compensation).
"""

from __future__ import annotations

from examples.food_order.stores import KitchenStores
from sagagraph import StepContext, StepResult, participant

Order = StepContext[KitchenStores]
"""A step's context: the saga's deps are the kitchen's three stores."""


def create_order(ctx: Order) -> StepResult:
    orders = ctx.deps.orders
    order = orders.create(
        ctx.idempotency_key, ctx.saga_id, ctx.input["customer"], ctx.input["items"]
    )
    return StepResult(
        data={"order": order["key"]}, output=f"{orders.path.name}/orders/{order['key']}"
    )


def cancel_order(ctx: Order, result: StepResult | None) -> None:
    orders = ctx.deps.orders
    orders.cancel(ctx.idempotency_key, ctx.saga_id)


def reserve_inventory(ctx: Order) -> StepResult:
    inventory = ctx.deps.inventory
    hold = inventory.reserve(ctx.idempotency_key, ctx.saga_id, ctx.input["items"])
    return StepResult(
        data={"total_cents": hold["total_cents"]},
        output=f"{inventory.path.name}/holds/{ctx.idempotency_key}",
    )


def release_inventory(ctx: Order, result: StepResult | None) -> None:
    inventory = ctx.deps.inventory
    inventory.release(ctx.idempotency_key, ctx.saga_id)


def make_payment(ctx: Order) -> StepResult:
    payments = ctx.deps.payments
    amount = int(ctx.results["reserve_inventory"].data["total_cents"])
    payment = payments.pay(ctx.idempotency_key, ctx.saga_id, ctx.input["card"], amount)
    return StepResult(
        data={"amount_cents": payment["amount_cents"]},
        output=f"{payments.path.name}/payments/{ctx.idempotency_key}",
    )


def refund_payment(ctx: Order, result: StepResult | None) -> None:
    payments = ctx.deps.payments
    payments.refund(ctx.idempotency_key, ctx.saga_id)


def confirm_order(ctx: Order) -> StepResult:
    orders = ctx.deps.orders
    order_key = str(ctx.results["create_order"].data["order"])
    orders.confirm(order_key)
    return StepResult(data={"order": order_key, "status": "confirmed"})


CREATE_ORDER = participant("create_order", create_order, cancel_order)
RESERVE_INVENTORY = participant("reserve_inventory", reserve_inventory, release_inventory)
MAKE_PAYMENT = participant("make_payment", make_payment, refund_payment)
CONFIRM_ORDER = participant("confirm_order", confirm_order, None)  # no-op compensation
