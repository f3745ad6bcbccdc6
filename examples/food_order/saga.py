"""The food order saga: four steps in order, each with its own retry policy."""

from __future__ import annotations

from examples.food_order.participants import (
    CONFIRM_ORDER,
    CREATE_ORDER,
    MAKE_PAYMENT,
    RESERVE_INVENTORY,
)
from examples.food_order.stores import GatewayTimeout, KitchenStores
from sagagraph import Retry, SagaDefinition, Step

# A gateway that did not answer may answer next time; a declined card will not change.
GATEWAY = Retry(max_attempts=3, backoff=0.05, retry_on=(GatewayTimeout,))
PATIENT_UNDO = Retry(max_attempts=5, backoff=0.05)


def food_order_saga(stores: KitchenStores) -> SagaDefinition[KitchenStores]:
    """Create the order, reserve inventory, take payment, confirm; on failure undo in reverse."""
    return SagaDefinition.of(
        "food_order",
        [
            Step(CREATE_ORDER, compensation_retry=PATIENT_UNDO),
            Step(RESERVE_INVENTORY, compensation_retry=PATIENT_UNDO),
            Step(MAKE_PAYMENT, retry=GATEWAY, compensation_retry=PATIENT_UNDO, timeout=10),
            Step(CONFIRM_ORDER),
        ],
        deps=stores,
    )
