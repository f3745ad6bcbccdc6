"""The partner APIs the agents call: an airline, a hotel chain and a wallet, one SQLite file each.

They are the stores of ``examples.travel_booking`` (same schema, same rules): every write is
keyed by the tool call's idempotency key (``saga_id:step:call-n``), so a call repeated after a
crash finds its earlier booking, a cancel is idempotent, and a booking that lands after its
cancel (a slow partner) is refused with ``CompensatedKeyError``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from examples.shared import SqliteStore
from examples.travel_booking.stores import InsufficientFunds, SoldOut, TravelStores

__all__ = ["FLIGHT", "HOTELS", "InsufficientFunds", "SoldOut", "TravelStores", "open_partners"]

FLIGHT = "SG-101"
HOTELS = ("harbour-view", "old-town")
"""The hotel travellers ask for first (it has no room left), and the one that has rooms."""


def open_partners(folder: Path) -> TravelStores:
    """The partners under ``folder``: one flight, a full hotel and a free one, two wallets.

    Seeded once: opening them again (another process, after a crash) keeps what they hold.
    """
    stores = TravelStores.open(folder)
    seed: list[tuple[SqliteStore, str, list[tuple[str | int, ...]]]] = [
        (stores.airline, "flights", [(FLIGHT, 120, 42_000)]),
        (stores.hotel, "hotels", [(HOTELS[0], 0, 12_000), (HOTELS[1], 12, 9_500)]),
        (stores.wallet, "accounts", [("ada", 150_000), ("bob", 30_000)]),
    ]
    for store, table, rows in seed:
        with store.transaction() as conn:
            marks = ", ".join("?" * len(rows[0]))
            conn.executemany(f"INSERT OR IGNORE INTO {table} VALUES ({marks})", rows)
    return stores


def saga_of(key: str) -> str:
    """The saga id in a call's key ``saga_id:step:call-n`` (saga ids hold no colon)."""
    return key.split(":", 1)[0]


def holdings(stores: TravelStores, traveller: str) -> dict[str, Any]:
    """What the partners hold now: free seats and rooms, the wallet, and live bookings.

    A rollback must bring this back exactly; a cancelled booking (or a remembered key that
    never became a booking) is not live.
    """
    live: dict[str, list[str]] = {}
    for name, store, state in (
        ("airline", stores.airline, "booked"),
        ("hotel", stores.hotel, "reserved"),
        ("wallet", stores.wallet, "charged"),
    ):
        with store.transaction() as conn:
            rows = conn.execute(
                f"SELECT key FROM {store.records_table} WHERE status = ? ORDER BY key", (state,)
            ).fetchall()
        live[name] = [str(r["key"]) for r in rows]
    return {
        "seats_free": stores.airline.seats_free(FLIGHT),
        "rooms_free": {h: stores.hotel.rooms_free(h) for h in HOTELS},
        "balance_cents": stores.wallet.balance(traveller),
        "live": live,
    }
