"""Where sagas live: the checkpointer (orchestrated sagas), the event log (choreographed ones)
and the work queue, by URL.

Every surface opens the same three stores from the same flags and variables: ``--db`` or
``SAGAGRAPH_DB``, ``--bus`` or ``SAGAGRAPH_BUS`` (``SAGAGRAPH_AMQP_URL``), ``--queue`` or
``SAGAGRAPH_QUEUE``. Nothing is created to read: a SQLite file that does not exist holds no
sagas yet.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sagagraph.checkpoints.urls import (
    GROUP_SQLITE,
    default_bus_url,
    default_db_url,
    redact_url,
    sqlite_path,
)

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver


@dataclass(frozen=True)
class SagaStore:
    """The URLs of a deployment's checkpointer (``db``), event log (``bus``) and work queue
    (``queue``; None: ``SAGAGRAPH_QUEUE``, else the local RabbitMQ)."""

    db: str
    bus: str
    queue: str | None = None
    bus_named: bool = True
    """False when ``bus`` is only the default (no flag, no variable named it)."""

    @classmethod
    def from_env(
        cls, db: str | None = None, bus: str | None = None, queue: str | None = None
    ) -> SagaStore:
        """The URLs given, else the environment's, else the defaults."""
        named = bool(bus or os.environ.get("SAGAGRAPH_BUS") or os.environ.get("SAGAGRAPH_AMQP_URL"))
        return cls(
            db=db or default_db_url(),
            bus=bus or default_bus_url(),
            queue=queue or os.environ.get("SAGAGRAPH_QUEUE") or None,
            bus_named=named,
        )

    def reads_event_log(self) -> bool:
        """Whether reads (get, list) consult the event log: when a flag or variable named it,
        or beside a SQLite checkpointer, whose companion the default local log is. A server
        checkpointer (PostgreSQL) alone does not read a ``sagagraph-events.sqlite`` that
        happens to sit in the working folder: its sagas are not that database's."""
        return self.bus_named or self.db.startswith(("sqlite:", "memory:"))

    def has_checkpoints(self) -> bool:
        """False only for a SQLite checkpointer whose file does not exist yet."""
        sqlite = self.db.startswith(("sqlite:///", GROUP_SQLITE))
        return not sqlite or sqlite_path(self.db).exists()

    @contextmanager
    def checkpointer(self) -> Iterator[BaseCheckpointSaver[Any]]:
        """The checkpointer, opened (and its tables set up) for the block."""
        from sagagraph.checkpoints.factory import open_checkpointer  # loads LangGraph

        with open_checkpointer(self.db) as saver:
            yield saver

    def not_found(self, saga_id: str) -> str:
        """``saga 'X': not found in DB (checkpointer) nor on BUS (event log)``, passwords
        masked: a typo in ``--db`` shows at once."""
        return (
            f"saga {saga_id!r}: not found in {redact_url(self.db)} (checkpointer) "
            f"nor on {redact_url(self.bus)} (event log)"
        )
