"""``recover --watch`` dead-letters a queued saga at its queue's delivery limit (issue 38):
the limit of the queue URL it was submitted to, recorded with the saga, not the default."""

from __future__ import annotations

from pathlib import Path

import pytest

from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.graph.definitions import WORKER_KEY, CompiledSagas, Definitions
from sagagraph.graph.runner import initial_state, saga_config, saga_status
from sagagraph.workers.ledger import open_ledger
from sagagraph.workers.watch import take_over_orphans
from tests.support.services import saga_database
from tests.support.toy_saga import Journal
from tests.workers.test_drive import TOY


@pytest.mark.parametrize("backend", ["sqlite", "postgres+group"])
def test_the_watcher_uses_the_delivery_limit_the_saga_recorded(
    backend: str, tmp_path: Path
) -> None:
    with saga_database(backend, tmp_path) as db:  # the group-commit saver's ledger too
        watch_limited(db, tmp_path)


def watch_limited(db: str, tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite"
    worker = {"app": TOY, "queue": "q", "max_deliveries": 1}
    saga_input = {"journal": str(journal), WORKER_KEY: worker}
    definitions = Definitions.load([TOY])
    with open_checkpointer(db) as checkpointer:
        app = CompiledSagas(checkpointer, definitions).app_for(
            {"saga_id": "limited", "input": saga_input}
        )
        config = saga_config("limited")
        app.update_state(config, initial_state("limited", saga_input), as_node="__start__")
        for chunk in app.stream(None, config, stream_mode="updates"):
            if "s1" in chunk:
                break  # its worker died after the first step
    with open_ledger(db) as ledger:
        ledger.deliver("limited")  # that worker's delivery
    take_over_orphans(db, definitions)  # the default limit is 3
    with open_checkpointer(db) as checkpointer:
        app = CompiledSagas(checkpointer, definitions).app_for(
            {"saga_id": "limited", "input": saga_input}
        )
        view = saga_status(app, "limited")
    assert view["dead_letter"] is not None, view["events"]
    assert "after 1 deliveries" in view["dead_letter"]["detail"]
    assert Journal(journal).calls("limited", "execute") == ["s1"]
