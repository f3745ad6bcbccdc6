"""The kitchen's three stores, each its own SQLite file: orders, inventory, payments.

As in the travel example, every record carries the ``saga_id`` and is keyed by the step's
idempotency key; forward writes and their undos each take effect once, and a key that was
compensated refuses a late forward write with ``CompensatedKeyError``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from examples.shared import SqliteStore
from sagagraph import CompensatedKeyError


class OutOfStock(Exception):
    """Not enough of an item to reserve."""


class PaymentDeclined(Exception):
    """The card was refused; retrying does not help."""


class GatewayTimeout(ConnectionError):
    """The payment gateway did not answer; worth another try."""


class Orders(SqliteStore):
    """Orders and their lifecycle: created, then confirmed or cancelled."""

    schema = """
        CREATE TABLE IF NOT EXISTS orders (
            key TEXT PRIMARY KEY, saga_id TEXT NOT NULL, customer TEXT, items TEXT,
            status TEXT NOT NULL CHECK (status IN ('created', 'confirmed', 'cancelled')));
    """
    records_table = "orders"

    def create(
        self, key: str, saga_id: str, customer: str, items: Mapping[str, int]
    ) -> dict[str, Any]:
        """Record a new order under ``key``; creating it again returns the same order."""
        with self.transaction() as conn:
            existing = conn.execute("SELECT * FROM orders WHERE key = ?", (key,)).fetchone()
            if existing is not None:
                if existing["status"] == "cancelled":
                    raise CompensatedKeyError(f"orders: order {key} was already cancelled")
                return dict(existing)
            conn.execute(
                "INSERT INTO orders VALUES (?, ?, ?, ?, 'created')",
                (key, saga_id, customer, json.dumps(dict(items), sort_keys=True)),
            )
            return dict(conn.execute("SELECT * FROM orders WHERE key = ?", (key,)).fetchone())

    def confirm(self, key: str) -> None:
        """Mark the order confirmed; confirming twice is the same as once."""
        with self.transaction() as conn:
            row = conn.execute("SELECT status FROM orders WHERE key = ?", (key,)).fetchone()
            if row is None or row["status"] == "cancelled":
                raise CompensatedKeyError(f"orders: order {key} is cancelled or unknown")
            conn.execute("UPDATE orders SET status = 'confirmed' WHERE key = ?", (key,))

    def cancel(self, key: str, saga_id: str) -> bool:
        """Cancel the order under ``key``, once; remember the key even if nothing was created."""
        with self.transaction() as conn:
            row = conn.execute("SELECT status FROM orders WHERE key = ?", (key,)).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO orders (key, saga_id, status) VALUES (?, ?, 'cancelled')",
                    (key, saga_id),
                )
                return False
            if row["status"] == "cancelled":
                return False
            conn.execute("UPDATE orders SET status = 'cancelled' WHERE key = ?", (key,))
            return True

    def status(self, key: str) -> str | None:
        with self.transaction() as conn:
            row = conn.execute("SELECT status FROM orders WHERE key = ?", (key,)).fetchone()
            return None if row is None else str(row["status"])


class Inventory(SqliteStore):
    """Stock on hand and prices per item, and the holds sagas placed on it."""

    schema = """
        CREATE TABLE IF NOT EXISTS stock (
            sku TEXT PRIMARY KEY, on_hand INTEGER NOT NULL CHECK (on_hand >= 0),
            price_cents INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS holds (
            key TEXT PRIMARY KEY, saga_id TEXT NOT NULL, items TEXT, total_cents INTEGER,
            status TEXT NOT NULL CHECK (status IN ('held', 'released')));
    """
    records_table = "holds"

    def stock_item(self, sku: str, on_hand: int, price_cents: int) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO stock VALUES (?, ?, ?)", (sku, on_hand, price_cents)
            )

    def on_hand(self, sku: str) -> int:
        with self.transaction() as conn:
            row = conn.execute("SELECT on_hand FROM stock WHERE sku = ?", (sku,)).fetchone()
            return int(row["on_hand"])

    def reserve(self, key: str, saga_id: str, items: Mapping[str, int]) -> dict[str, Any]:
        """Hold every item of the order under ``key``, all or none; OutOfStock if short."""
        with self.transaction() as conn:
            existing = conn.execute("SELECT * FROM holds WHERE key = ?", (key,)).fetchone()
            if existing is not None:
                if existing["status"] == "released":
                    raise CompensatedKeyError(f"inventory: hold {key} was already released")
                return dict(existing)
            total = 0
            for sku, quantity in sorted(items.items()):
                row = conn.execute(
                    "SELECT on_hand, price_cents FROM stock WHERE sku = ?", (sku,)
                ).fetchone()
                if row is None or row["on_hand"] < quantity:
                    # Raising rolls back the items already taken in this transaction.
                    raise OutOfStock(f"inventory: not enough {sku} for {quantity}")
                conn.execute(
                    "UPDATE stock SET on_hand = on_hand - ? WHERE sku = ?", (quantity, sku)
                )
                total += quantity * int(row["price_cents"])
            conn.execute(
                "INSERT INTO holds VALUES (?, ?, ?, ?, 'held')",
                (key, saga_id, json.dumps(dict(items), sort_keys=True), total),
            )
            return dict(conn.execute("SELECT * FROM holds WHERE key = ?", (key,)).fetchone())

    def release(self, key: str, saga_id: str) -> bool:
        """Put the held items back on the shelf, once."""
        with self.transaction() as conn:
            row = conn.execute("SELECT * FROM holds WHERE key = ?", (key,)).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO holds (key, saga_id, status) VALUES (?, ?, 'released')",
                    (key, saga_id),
                )
                return False
            if row["status"] == "released":
                return False
            for sku, quantity in json.loads(row["items"]).items():
                conn.execute(
                    "UPDATE stock SET on_hand = on_hand + ? WHERE sku = ?", (quantity, sku)
                )
            conn.execute("UPDATE holds SET status = 'released' WHERE key = ?", (key,))
            return True


class Payments(SqliteStore):
    """Cards with a spending limit, and the payments sagas took from them."""

    schema = """
        CREATE TABLE IF NOT EXISTS cards (
            card TEXT PRIMARY KEY, limit_cents INTEGER NOT NULL, spent_cents INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS payments (
            key TEXT PRIMARY KEY, saga_id TEXT NOT NULL, card TEXT, amount_cents INTEGER,
            status TEXT NOT NULL CHECK (status IN ('paid', 'refunded')));
    """
    records_table = "payments"

    def add_card(self, card: str, limit_cents: int) -> None:
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO cards VALUES (?, ?, 0)", (card, limit_cents))

    def spent(self, card: str) -> int:
        with self.transaction() as conn:
            row = conn.execute("SELECT spent_cents FROM cards WHERE card = ?", (card,)).fetchone()
            return int(row["spent_cents"])

    def pay(self, key: str, saga_id: str, card: str, amount_cents: int) -> dict[str, Any]:
        """Take ``amount_cents`` from ``card`` under ``key``, once; PaymentDeclined if refused."""
        with self.transaction() as conn:
            existing = conn.execute("SELECT * FROM payments WHERE key = ?", (key,)).fetchone()
            if existing is not None:
                if existing["status"] == "refunded":
                    raise CompensatedKeyError(f"payments: payment {key} was already refunded")
                return dict(existing)
            row = conn.execute(
                "SELECT limit_cents, spent_cents FROM cards WHERE card = ?", (card,)
            ).fetchone()
            if row is None or row["spent_cents"] + amount_cents > row["limit_cents"]:
                raise PaymentDeclined(f"payments: card {card} declined {amount_cents / 100:.2f}")
            conn.execute(
                "UPDATE cards SET spent_cents = spent_cents + ? WHERE card = ?",
                (amount_cents, card),
            )
            conn.execute(
                "INSERT INTO payments VALUES (?, ?, ?, ?, 'paid')",
                (key, saga_id, card, amount_cents),
            )
            return dict(conn.execute("SELECT * FROM payments WHERE key = ?", (key,)).fetchone())

    def refund(self, key: str, saga_id: str) -> bool:
        """Give the payment under ``key`` back to its card, once."""
        with self.transaction() as conn:
            row = conn.execute("SELECT * FROM payments WHERE key = ?", (key,)).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO payments (key, saga_id, status) VALUES (?, ?, 'refunded')",
                    (key, saga_id),
                )
                return False
            if row["status"] == "refunded":
                return False
            conn.execute(
                "UPDATE cards SET spent_cents = spent_cents - ? WHERE card = ?",
                (row["amount_cents"], row["card"]),
            )
            conn.execute("UPDATE payments SET status = 'refunded' WHERE key = ?", (key,))
            return True


@dataclass(frozen=True)
class KitchenStores:
    """The three stores of one kitchen, each in its own file under one folder."""

    orders: Orders
    inventory: Inventory
    payments: Payments

    @classmethod
    def open(cls, folder: Path) -> KitchenStores:
        folder.mkdir(parents=True, exist_ok=True)
        return cls(
            Orders(folder / "orders.sqlite"),
            Inventory(folder / "inventory.sqlite"),
            Payments(folder / "payments.sqlite"),
        )
