"""``choreographed_sagas``: every saga on a bus log, as ``status`` shows each one."""

from __future__ import annotations

from pathlib import Path

import pytest

from sagagraph.choreography.runner import (
    choreographed_sagas,
    choreography_status,
    run_choreographed_saga,
)
from tests.support.choreo_buses import BACKENDS, fresh_bus
from tests.support.choreo_saga import file_saga


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_saga_on_the_bus_is_listed_with_its_status_view(tmp_path: Path, backend: str) -> None:
    saga = file_saga(tmp_path / "out")
    with fresh_bus(backend, tmp_path) as bus:
        assert choreographed_sagas(bus) == []
        run_choreographed_saga(saga, {}, "ok-1", bus, timeout=60)
        run_choreographed_saga(saga, {}, "undone-1", bus, fail_at="summarizer", timeout=60)
        views = choreographed_sagas(bus)
        assert [v["saga_id"] for v in views] == ["ok-1", "undone-1"]
        assert [v["status"] for v in views] == ["completed", "rolled_back"]
        assert views == [choreography_status(bus, v["saga_id"]) for v in views]


def test_listing_a_missing_sqlite_log_creates_no_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'events.sqlite'}"
    assert choreographed_sagas(url) == []
    assert list(tmp_path.iterdir()) == []
