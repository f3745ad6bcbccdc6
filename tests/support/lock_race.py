"""Sagas racing for the last seat: the travel booking saga in worker processes, killed and
recovered, with the seat locked (``input["seat"]``) or not.

The wallet step pauses (``input["pause"]`` seconds) before it charges, so the saga holds its
booking while the other saga arrives; a traveller whose wallet is empty fails there.

::

    python -m tests.support.lock_race run --db URL --stores DIR --saga-id ID --input JSON
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from examples.travel_booking.participants import ChargeWallet
from examples.travel_booking.saga import travel_booking_saga
from examples.travel_booking.stores import TravelStores
from sagagraph import SagaDefinition, StepResult, build_saga_graph, open_checkpointer, run_saga
from sagagraph.saga.protocol import StepContext

FLIGHT = "SG-101"
HOTEL = "harbour-view"


class SlowCharge(ChargeWallet):
    """The wallet step, after a pause that keeps the trip's booking in flight."""

    def execute(self, ctx: StepContext[TravelStores]) -> StepResult:
        time.sleep(float(ctx.input.get("pause", 0)))
        return super().execute(ctx)


def open_stores(folder: Path) -> TravelStores:
    return TravelStores.open(folder)


def seed(folder: Path, rich: str, poor: str) -> None:
    """One seat left on the flight, rooms to spare, one traveller who can pay, one who cannot."""
    stores = open_stores(folder)
    stores.airline.add_flight(FLIGHT, seats=1, price_cents=30000)
    stores.hotel.add_hotel(HOTEL, rooms=10, nightly_cents=10000)
    stores.wallet.open_account(rich, 1_000_000)
    stores.wallet.open_account(poor, 0)


def race_saga(stores: TravelStores) -> SagaDefinition[TravelStores]:
    definition = travel_booking_saga(stores)
    steps = tuple(
        replace(s, participant=SlowCharge()) if s.name == "charge_wallet" else s
        for s in definition.steps
    )
    return replace(definition, steps=steps)


def trip(traveller: str, *, seat: bool, pause: float) -> dict[str, Any]:
    trip: dict[str, Any] = {"traveller": traveller, "flight": FLIGHT, "hotel": HOTEL}
    trip |= {"nights": 1, "pause": pause}
    return trip | ({"seat": "12A"} if seat else {})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["run"])
    parser.add_argument("--db", required=True)
    parser.add_argument("--stores", required=True)
    parser.add_argument("--saga-id", required=True)
    parser.add_argument("--input", required=True)
    args = parser.parse_args()
    definition = race_saga(open_stores(Path(args.stores)))
    with open_checkpointer(args.db) as saver:
        app = build_saga_graph(definition).compile(checkpointer=saver)
        print(json.dumps(run_saga(app, json.loads(args.input), saga_id=args.saga_id)["status"]))


if __name__ == "__main__":
    main()
