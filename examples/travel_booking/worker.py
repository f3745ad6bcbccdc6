"""The travel booking saga on the work queue: the factory a worker runs it from.

    sagagraph worker --app examples.travel_booking.worker:travel_saga
    sagagraph submit --app examples.travel_booking.worker:travel_saga \\
        --input '{"traveller": "ada", "flight": "SG-101", "hotel": "harbour-view", "nights": 3,
                  "data": "/srv/travel"}'

A worker calls :func:`travel_saga` with each saga's recorded input; the input's ``data``
names the folder of the agency's stores (a shared folder when workers run on several
machines). The definition is built once per folder, so the worker compiles it once.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from examples.travel_booking.saga import travel_booking_saga
from examples.travel_booking.stores import TravelStores
from sagagraph import SagaDefinition


@lru_cache(maxsize=16)
def _definition(folder: str) -> SagaDefinition:
    return travel_booking_saga(TravelStores.open(Path(folder)))


def travel_saga(saga_input: Mapping[str, Any]) -> SagaDefinition:
    """The travel booking saga on the stores in ``saga_input["data"]``."""
    return _definition(str(Path(saga_input["data"]).resolve()))
