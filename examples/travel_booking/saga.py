"""The travel booking saga: three steps in order, each with its own retry policy."""

from __future__ import annotations

from examples.travel_booking.participants import BookFlight, ChargeWallet, ReserveHotel
from examples.travel_booking.stores import ServiceUnavailable, TravelStores
from sagagraph import Retry, SagaDefinition, Step

# Only a service hiccup is worth another try: a full flight or an empty wallet stays so.
TRANSIENT = Retry(max_attempts=3, backoff=0.05, retry_on=(ServiceUnavailable,))
# Undoing must not give up easily: a refund that cannot be made needs a person.
PATIENT_UNDO = Retry(max_attempts=5, backoff=0.05)


def travel_booking_saga(stores: TravelStores) -> SagaDefinition[TravelStores]:
    """Book a flight, reserve a hotel, charge the wallet; on failure undo in reverse order."""
    return SagaDefinition.of(
        "travel_booking",
        [
            Step(BookFlight(), retry=TRANSIENT, compensation_retry=PATIENT_UNDO, timeout=10),
            Step(ReserveHotel(), retry=TRANSIENT, compensation_retry=PATIENT_UNDO, timeout=10),
            Step(ChargeWallet(), retry=TRANSIENT, compensation_retry=PATIENT_UNDO, timeout=10),
        ],
        deps=stores,
    )
