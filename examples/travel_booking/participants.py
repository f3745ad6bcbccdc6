"""The three steps of a trip, each a local transaction in its own store, with its compensation.

Every write uses the step's idempotency key (``saga_id:step``): a step that runs again after a
crash finds its earlier record, and a compensation that runs again finds nothing left to undo.
A compensation may be called for a step that never finished (``result`` is None): the key
still says what, if anything, was written.
"""

from __future__ import annotations

from examples.travel_booking.stores import TravelStores
from sagagraph import StepContext, StepResult

Trip = StepContext[TravelStores]
"""A step's context: the saga's deps are the agency's three stores."""


class BookFlight:
    """Book one seat on the trip's flight; compensation cancels the booking.

    A trip that names its seat (``input["seat"]``) first takes a semantic lock on it
    (``seat:<flight>:<seat>``), held until the saga ends: another saga that wants the same
    seat waits until this one completes or has given the seat back, instead of being told
    the flight is full by a booking that may yet be cancelled (a dirty read).
    """

    name = "book_flight"

    def execute(self, ctx: Trip) -> StepResult:
        airline = ctx.deps.airline
        if ctx.input.get("seat"):
            ctx.lock(f"seat:{ctx.input['flight']}:{ctx.input['seat']}", timeout=60)
        booking = airline.book(
            ctx.idempotency_key, ctx.saga_id, ctx.input["flight"], ctx.input["traveller"]
        )
        return StepResult(
            data={"flight": booking["flight"], "price_cents": booking["price_cents"]},
            output=f"{airline.path.name}/bookings/{ctx.idempotency_key}",
        )

    def compensate(self, ctx: Trip, result: StepResult | None) -> None:
        airline = ctx.deps.airline
        airline.cancel(ctx.idempotency_key, ctx.saga_id)


class ReserveHotel:
    """Hold a room for the trip's nights; compensation cancels the reservation."""

    name = "reserve_hotel"

    def execute(self, ctx: Trip) -> StepResult:
        hotel = ctx.deps.hotel
        reservation = hotel.reserve(
            ctx.idempotency_key,
            ctx.saga_id,
            ctx.input["hotel"],
            ctx.input["traveller"],
            int(ctx.input["nights"]),
        )
        return StepResult(
            data={"hotel": reservation["hotel"], "price_cents": reservation["price_cents"]},
            output=f"{hotel.path.name}/reservations/{ctx.idempotency_key}",
        )

    def compensate(self, ctx: Trip, result: StepResult | None) -> None:
        hotel = ctx.deps.hotel
        hotel.cancel(ctx.idempotency_key, ctx.saga_id)


class ChargeWallet:
    """Charge the flight and the hotel to the traveller's wallet; compensation refunds it.

    The debit is commutative (``balance = balance - amount`` in one statement, never a value
    read, changed and written back), so sagas charging one wallet at once lose no update and
    need no lock; its refund commutes the same way.
    """

    name = "charge_wallet"

    def execute(self, ctx: Trip) -> StepResult:
        wallet = ctx.deps.wallet
        total = sum(
            int(ctx.results[step].data["price_cents"]) for step in ("book_flight", "reserve_hotel")
        )
        charge = wallet.charge(ctx.idempotency_key, ctx.saga_id, ctx.input["traveller"], total)
        return StepResult(
            data={"amount_cents": charge["amount_cents"]},
            output=f"{wallet.path.name}/charges/{ctx.idempotency_key}",
        )

    def compensate(self, ctx: Trip, result: StepResult | None) -> None:
        wallet = ctx.deps.wallet
        wallet.refund(ctx.idempotency_key, ctx.saga_id)
