"""Sagas for the console's tests: one of each kind an operator meets, made by the real CLI.

``make_sagas`` runs the paper saga through ``sagagraph run`` in this process, offline, into a
SQLite checkpointer of the folder given: ``done`` completes, ``undone`` rolls back (its
summarizer fails), ``stuck`` waits for an operator (its summarizer fails and the reviewer's
undo is refused, as a broken store would refuse it, until the process that ran it is gone).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sagagraph.cli import main

PAPER = Path(__file__).resolve().parents[2] / "examples" / "papers" / "complete_paper.md"


@dataclass(frozen=True)
class Stores:
    """Where the sagas are: the checkpointer, the (empty) event log, the outputs folder."""

    db: str
    bus: str
    outputs: Path


@contextmanager
def refused_undo(step: str) -> Iterator[None]:
    """The paper store refuses to undo ``step`` while the block runs."""
    from sagagraph.agents.store import OutputStore

    original = OutputStore.compensate

    def compensate(self: Any, key: str, names: Iterable[str] = ()) -> list[Path]:
        if key.rpartition(":")[2] == step:
            raise ConnectionError(f"{step}: undo refused (injected by the test)")
        return original(self, key, names)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(OutputStore, "compensate", compensate)
        yield


def run(stores: Stores, saga_id: str, *extra: str) -> int:
    return main(
        [
            *("run", str(PAPER), "--saga-id", saga_id, "--llm", "offline"),
            *("--db", stores.db, "--outputs", str(stores.outputs), "--bus", stores.bus),
            *extra,
        ]
    )


def make_sagas(folder: Path, *, stuck: Iterable[str] = ("stuck",), db: str | None = None) -> Stores:
    """``done``, ``undone`` and each of ``stuck`` (waiting for an operator) in ``folder`` (or
    in checkpointer ``db``)."""
    stores = Stores(
        db=db or f"sqlite:///{folder / 'sagas.sqlite'}",
        bus=f"sqlite:///{folder / 'events.sqlite'}",
        outputs=folder / "outputs",
    )
    assert run(stores, "done") == 0
    assert run(stores, "undone", "--fail-at", "summarizer") == 3
    with refused_undo("reviewer"):
        for saga_id in stuck:
            assert run(stores, saga_id, "--fail-at", "summarizer") == 4
    return stores


@contextmanager
def interrupted_at(step: str) -> Iterator[None]:
    """The paper store's write for ``step`` is interrupted (Ctrl-C) while the block runs: the
    saga stays ``running`` with no process behind it (orphaned)."""
    from sagagraph.agents.store import OutputStore

    original = OutputStore.write

    def write(self: Any, key: str, name: str, text: str) -> Path:
        if key.rpartition(":")[2] == step:
            raise KeyboardInterrupt
        return original(self, key, name, text)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(OutputStore, "write", write)
        yield


def make_orphan(stores: Stores, saga_id: str = "orphan") -> None:
    """A saga interrupted in its reviewer: ``running``, orphaned, the validator committed."""
    with interrupted_at("reviewer"):
        assert run(stores, saga_id) == 130


def make_dead_letter(stores: Stores, saga_id: str = "lettered") -> None:
    """An orphan the work queue then dead-lettered: the event a queue worker records when it
    gives up on a saga's message (:mod:`sagagraph.workers.drive`), appended to its events."""
    from sagagraph.graph.runner import saga_config
    from sagagraph.saga.view import make_event
    from sagagraph.workers.dead_letters import DEAD_LETTER, WORKER_STEP
    from tests.support.paper_apps import paper_app

    make_orphan(stores, saga_id)
    detail = "dead-lettered by queue sagas after 3 deliveries: its worker stopped each time"
    event = make_event(WORKER_STEP, "escalate", DEAD_LETTER, detail=detail)
    with paper_app(stores.db, llm="offline") as app:
        app.update_state(saga_config(saga_id), {"events": [event]})
