"""The console's saga page shows the side of the pivot a saga is on, and the locks it holds."""

from __future__ import annotations

from pathlib import Path

from sagagraph import build_saga_graph, open_checkpointer, run_saga
from tests.console.conftest import console
from tests.support.console_sagas import Stores
from tests.support.pivot_saga import Journal, pivot_saga


def test_the_saga_page_shows_the_pivot_and_the_locks(tmp_path: Path) -> None:
    stores = Stores(
        db=f"sqlite:///{tmp_path / 'sagas.sqlite'}",
        bus=f"sqlite:///{tmp_path / 'events.sqlite'}",
        outputs=tmp_path / "outputs",
    )
    definition = pivot_saga(Journal(tmp_path / "journal.sqlite"))
    with open_checkpointer(stores.db) as saver:
        app = build_saga_graph(definition).compile(checkpointer=saver)
        run_saga(app, {"item": "lamp", "ship_failures": 9}, saga_id="lamp-order")
        run_saga(app, {}, saga_id="undone-order", fail_at="charge")

    client = console(stores)
    page = client.get("/sagas/lamp-order").text
    assert "Pivot: charge · past it: the saga only goes forward" in page
    assert "Holds lock: stock:lamp (step reserve" in page
    page = client.get("/sagas/undone-order").text
    assert "Pivot: charge · before it: the saga can still roll back" in page
    assert "Holds lock" not in page
