"""The partner APIs the agents call: an airline, a hotel chain and a wallet, one SQLite file each.

They are the stores of ``examples.travel_booking`` (same schema, same rules): every write is
keyed by the tool call's idempotency key (``saga_id:step:call-n``), so a call repeated after a
crash finds its earlier booking, a cancel is idempotent, and a booking that lands after its
cancel (a slow partner) is refused with ``CompensatedKeyError``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from examples.travel_booking.stores import InsufficientFunds, SoldOut, TravelStores

__all__ = ["FLIGHT", "HOTELS", "InsufficientFunds", "SoldOut", "TravelStores", "open_partners"]

FLIGHT = "SG-101"
HOTELS = ("harbour-view", "old-town")
"""The hotel travellers ask for first (it has no room left), and the one that has rooms."""


def open_partners(folder: Path) -> TravelStores:
    """The partners under ``folder``: one flight, a full hotel and a free one, two wallets."""
    stores = TravelStores.open(folder)
    stores.airline.add_flight(FLIGHT, seats=120, price_cents=42_000)
    stores.hotel.add_hotel(HOTELS[0], rooms=0, nightly_cents=12_000)
    stores.hotel.add_hotel(HOTELS[1], rooms=12, nightly_cents=9_500)
    stores.wallet.open_account("ada", balance_cents=150_000)
    stores.wallet.open_account("bob", balance_cents=30_000)
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
