"""The application core: one query API over any saga, and operations that need the saga's
definition only to act. The travel booking example stands for "any definition": the service
reads it with no definition at all, and acts on it once it is given its factory."""

from __future__ import annotations

from pathlib import Path

import pytest

from examples.travel_booking.run import main as travel_main
from examples.travel_booking.saga import travel_booking_saga
from examples.travel_booking.stores import TravelStores
from sagagraph import SagaService
from sagagraph.errors import InputError, SagaNotFoundError
from sagagraph.graph.definitions import Definitions


@pytest.fixture
def travel(tmp_path: Path) -> str:
    """A checkpointer holding the example's two trips: one completed, one rolled back."""
    db = f"sqlite:///{tmp_path / 'travel.sqlite'}"
    assert travel_main(tmp_path / "data", db) == 0
    return db


def test_any_saga_is_read_without_its_definition(travel: str, tmp_path: Path) -> None:
    service = SagaService.from_urls(travel, f"sqlite:///{tmp_path / 'none.sqlite'}")
    rows = service.list()
    assert sorted(r["status"] for r in rows) == ["completed", "rolled_back"]
    assert {r["definition"] for r in rows} == {"travel_booking"}
    back = service.list(status="rolled_back")
    assert len(back) == 1
    view = service.require(back[0]["saga_id"])
    assert view["compensated"] and view["saga"] == "travel_booking"
    assert service.events(view["saga_id"]) == view["events"]
    assert view["orphaned"] is False and view["dead_lettered"] is False


def test_list_filters_and_pages(travel: str, tmp_path: Path) -> None:
    service = SagaService.from_urls(travel, f"sqlite:///{tmp_path / 'none.sqlite'}")
    every = service.list()
    assert service.list(limit=1) == every[:1]
    assert service.list(offset=1) == every[1:]
    assert service.list(definition="paper_review") == []
    assert service.list(mode="orchestration") == every
    assert service.list(text="no such text anywhere") == []
    assert service.list(status="orphaned") == []


def test_acting_needs_the_definition_and_names_the_way(travel: str, tmp_path: Path) -> None:
    service = SagaService.from_urls(travel, f"sqlite:///{tmp_path / 'none.sqlite'}")
    saga_id = service.list(status="rolled_back")[0]["saga_id"]
    with pytest.raises(InputError, match=r"travel_booking.*--app"):
        service.rollback(saga_id)
    with pytest.raises(SagaNotFoundError, match="not found in"):
        service.require("nobody-here")
    stores = TravelStores.open(tmp_path / "data")
    # A factory of no argument: the definition on this agency's stores.
    definitions = Definitions({"travel": lambda: travel_booking_saga(stores)})
    knowing = SagaService.from_urls(
        travel, f"sqlite:///{tmp_path / 'none.sqlite'}", definitions=definitions
    )
    # Known now: a finished saga is refused for what it is, not for its definition.
    with pytest.raises(InputError, match=r"rolled_back|finished|not"):
        knowing.rollback(saga_id)
