"""``cancel`` and ``requeue`` import only the factories given with ``--app`` /
``SAGAGRAPH_APP`` (issue 38, item 8): a checkpoint names the code a saga runs, and anyone
who can write the checkpointer could name any module."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.constants import START

from sagagraph import SagaService
from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.errors import InputError
from sagagraph.graph.definitions import WORKER_KEY, CompiledSagas, Definitions
from sagagraph.graph.runner import initial_state, saga_config
from sagagraph.saga.view import QUEUED

TRACED = "tests.support.import_trace:factory"


def queued(db: str, saga_id: str, journal: Path) -> None:
    saga_input = {"journal": str(journal), WORKER_KEY: {"app": TRACED, "queue": "q"}}
    with open_checkpointer(db) as checkpointer:
        view = {"saga_id": saga_id, "input": saga_input}
        app = CompiledSagas(checkpointer, Definitions.load([TRACED])).app_for(view)
        values = initial_state(saga_id, saga_input) | {"status": QUEUED}
        app.update_state(saga_config(saga_id), values, as_node=START)


@pytest.mark.parametrize("verb", ["cancel", "requeue"])
def test_a_factory_not_given_is_refused_and_never_imported(
    verb: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    queued(db, "foreign", tmp_path / "journal.sqlite")
    sys.modules.pop("tests.support.import_trace", None)  # imported above: forget it
    trace = tmp_path / "trace"
    monkeypatch.setenv("IMPORT_TRACE", str(trace))
    service = SagaService.from_urls(
        db, f"sqlite:///{tmp_path / 'events.sqlite'}", "amqp://guest:guest@127.0.0.1:1//"
    )
    with pytest.raises(InputError, match=rf"--app {TRACED}"):
        if verb == "cancel":
            service.cancel("foreign", by="ops", why="not wanted")
        else:
            service.requeue("foreign")
    assert not trace.exists()
