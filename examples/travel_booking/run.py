"""Book two trips: one the traveller can pay for, one they cannot; print what happened.

    python -m examples.travel_booking.run [--data DIR] [--db URL]

The second trip books a flight and a hotel, then the wallet refuses the charge (insufficient
funds): the saga cancels the hotel, then the flight, and the seat and room come back.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from examples.shared import print_saga
from examples.travel_booking.saga import travel_booking_saga
from examples.travel_booking.stores import TravelStores
from sagagraph import build_saga_graph, new_saga_id, open_checkpointer, run_saga

FLIGHT = "SG-101"
HOTEL = "harbour-view"
TRIPS: list[tuple[str, dict[str, Any], str]] = [
    (
        "Trip 1: Ada can pay",
        {"traveller": "ada", "flight": FLIGHT, "hotel": HOTEL, "nights": 3},
        "completed",
    ),
    (
        "Trip 2: Bob cannot pay (insufficient funds)",
        {"traveller": "bob", "flight": FLIGHT, "hotel": HOTEL, "nights": 3},
        "rolled_back",
    ),
]


def open_demo_stores(folder: Path) -> TravelStores:
    """The agency's stores under ``folder``, with one flight, one hotel and two wallets."""
    stores = TravelStores.open(folder)
    stores.airline.add_flight(FLIGHT, seats=120, price_cents=42_000)
    stores.hotel.add_hotel(HOTEL, rooms=12, nightly_cents=9_500)
    stores.wallet.open_account("ada", balance_cents=150_000)
    stores.wallet.open_account("bob", balance_cents=30_000)
    return stores


def money(cents: int) -> str:
    return f"{cents / 100:,.2f}"


def print_stores(stores: TravelStores, saga_id: str, traveller: str) -> None:
    """What each store holds for this saga now."""
    records = [
        ("airline", "flight", stores.airline.records(saga_id)),
        ("hotel", "hotel", stores.hotel.records(saga_id)),
        ("wallet", "amount_cents", stores.wallet.records(saga_id)),
    ]
    for store, field, rows in records:
        # A row without its data is a remembered key: compensated before anything was written.
        states = ", ".join(
            f"{row['key'].split(':')[-1]} {row['status'] if row[field] else 'never written'}"
            for row in rows
        )
        print(f"  {store:<8} {states or 'no record'}")
    print(
        f"  seats free on {FLIGHT}: {stores.airline.seats_free(FLIGHT)}, "
        f"rooms free at {HOTEL}: {stores.hotel.rooms_free(HOTEL)}, "
        f"{traveller}'s wallet: {money(stores.wallet.balance(traveller))}"
    )


def main(data_dir: str | Path | None = None, db_url: str | None = None) -> int:
    """Run both trips; 0 when each ends as expected (completed, then rolled back)."""
    with ExitStack() as stack:
        folder = Path(data_dir or stack.enter_context(tempfile.TemporaryDirectory()))
        stores = open_demo_stores(folder)
        checkpointer = stack.enter_context(
            open_checkpointer(db_url or f"sqlite:///{folder / 'sagas.sqlite'}")
        )
        app = build_saga_graph(travel_booking_saga(stores)).compile(checkpointer=checkpointer)
        ok = True
        for title, trip, expected in TRIPS:
            print(f"\n--- {title}: {trip['nights']} nights at {HOTEL}, flight {FLIGHT}")
            view = run_saga(app, trip, saga_id=new_saga_id("trip"))
            print_saga(view)
            print("stores now:")
            print_stores(stores, view["saga_id"], trip["traveller"])
            ok = ok and view["status"] == expected
        return 0 if ok else 1


def cli(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.travel_booking.run")
    parser.add_argument("--data", help="folder for the stores (default: a temporary folder)")
    parser.add_argument("--db", help="checkpointer URL (default: sagas.sqlite in that folder)")
    args = parser.parse_args(argv)
    return main(args.data, args.db)


if __name__ == "__main__":
    sys.exit(cli())
