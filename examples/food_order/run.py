"""Place two food orders: one paid, one whose card is declined; print what happened.

    python -m examples.food_order.run [--data DIR] [--db URL]

The second order is created and its items are held, then the payment is declined: the saga
releases the items, then cancels the order, and ``confirm_order`` never runs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from examples.food_order.saga import food_order_saga
from examples.food_order.stores import KitchenStores
from examples.shared import print_saga
from sagagraph import build_saga_graph, new_saga_id, open_checkpointer, run_saga

MENU = {"margherita": (20, 1_150), "tiramisu": (10, 650)}
"""Item -> (portions on hand, price in cents)."""
ORDERS: list[tuple[str, dict[str, Any], str]] = [
    (
        "Order 1: Carol pays",
        {"customer": "carol", "items": {"margherita": 2, "tiramisu": 1}, "card": "carol-visa"},
        "completed",
    ),
    (
        "Order 2: Dan's card is declined",
        {"customer": "dan", "items": {"margherita": 3}, "card": "dan-visa"},
        "rolled_back",
    ),
]


def open_demo_stores(folder: Path) -> KitchenStores:
    """The kitchen's stores under ``folder``, with a stocked menu and two cards."""
    stores = KitchenStores.open(folder)
    for sku, (on_hand, price) in MENU.items():
        stores.inventory.stock_item(sku, on_hand, price)
    stores.payments.add_card("carol-visa", limit_cents=10_000)
    stores.payments.add_card("dan-visa", limit_cents=1_000)
    return stores


def print_stores(stores: KitchenStores, saga_id: str, card: str) -> None:
    """What each store holds for this saga now."""
    records = [
        ("orders", "customer", stores.orders.records(saga_id)),
        ("inventory", "items", stores.inventory.records(saga_id)),
        ("payments", "amount_cents", stores.payments.records(saga_id)),
    ]
    for store, field, rows in records:
        # A row without its data is a remembered key: compensated before anything was written.
        states = ", ".join(
            f"{row['key'].split(':')[-1]} {row['status'] if row[field] else 'never written'}"
            for row in rows
        )
        print(f"  {store:<9} {states or 'no record'}")
    shelf = ", ".join(f"{sku} {stores.inventory.on_hand(sku)}" for sku in MENU)
    print(f"  on hand: {shelf}; spent on {card}: {stores.payments.spent(card) / 100:.2f}")


def main(data_dir: str | Path | None = None, db_url: str | None = None) -> int:
    """Place both orders; 0 when each ends as expected (completed, then rolled back)."""
    with ExitStack() as stack:
        folder = Path(data_dir or stack.enter_context(tempfile.TemporaryDirectory()))
        stores = open_demo_stores(folder)
        checkpointer = stack.enter_context(
            open_checkpointer(db_url or f"sqlite:///{folder / 'sagas.sqlite'}")
        )
        app = build_saga_graph(food_order_saga(stores)).compile(checkpointer=checkpointer)
        ok = True
        for title, order, expected in ORDERS:
            print(f"\n--- {title}")
            view = run_saga(app, order, saga_id=new_saga_id("order"))
            print_saga(view)
            print("stores now:")
            print_stores(stores, view["saga_id"], order["card"])
            ok = ok and view["status"] == expected
        return 0 if ok else 1


def cli(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.food_order.run")
    parser.add_argument("--data", help="folder for the stores (default: a temporary folder)")
    parser.add_argument("--db", help="checkpointer URL (default: sagas.sqlite in that folder)")
    args = parser.parse_args(argv)
    return main(args.data, args.db)


if __name__ == "__main__":
    sys.exit(cli())
