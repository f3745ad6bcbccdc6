"""Where the console reads sagas and acts on them: the application core
(:class:`~sagagraph.service.SagaService`), as every other surface does.

Reading needs no definition: the console shows any saga of its checkpointer and event log
(a travel booking's as well as the paper's). Acting (retry, approve, rollback...) builds the
saga's graph from the definitions the console knows: the paper saga and the one
``$SAGAGRAPH_APP`` names. Each read opens the checkpointer and closes it again, so the console
sees what other processes write and holds no lock between requests.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sagagraph.agents.paper_app import PAPER_APP, paper_saga
from sagagraph.graph import stored
from sagagraph.graph.definitions import Definitions
from sagagraph.saga.records import alerts_from_env
from sagagraph.service import SagaService, SagaStore

QueueReason = Literal["operator", "dead_letter", "orphaned"]
"""Why a saga is on the operator's queue."""
QUEUE_REASONS: dict[QueueReason, str] = {
    "operator": "waiting for an operator",
    "dead_letter": "dead-lettered by the work queue",
    "orphaned": "orphaned: no live process runs it",
}
"""Each reason, as the queue page says it."""


def console_service(
    db: str | None = None, bus: str | None = None, queue: str | None = None
) -> SagaService:
    """The service the console acts through: the stores the URLs name (else the
    environment's), the paper saga, and ``$SAGAGRAPH_APP``'s definition when it is set."""
    spec = os.environ.get("SAGAGRAPH_APP", "").strip()
    definitions = Definitions.load([spec] if spec else [], own={PAPER_APP: paper_saga})
    definitions.default = PAPER_APP
    return SagaService(SagaStore.from_env(db, bus, queue), definitions, alerts_from_env())


@dataclass(frozen=True)
class SagaSource:
    """The console's view of one :class:`SagaService`: rows, the operator's queue, a saga."""

    service: SagaService

    @classmethod
    def from_urls(
        cls, db: str | None = None, bus: str | None = None, queue: str | None = None
    ) -> SagaSource:
        """Flags first, then the environment (``SAGAGRAPH_DB``, ``SAGAGRAPH_BUS``), as the CLI."""
        return cls(console_service(db, bus, queue))

    @property
    def store(self) -> SagaStore:
        return self.service.store

    def rows(self) -> list[dict[str, Any]]:
        """One row per saga of both coordination styles, the latest update first."""
        return [with_dead_letter(r) for r in self.service.list()]

    def queue(self) -> list[dict[str, Any]]:
        """Sagas an operator should look at, each with its ``queue_reason``."""
        return [{**r, "queue_reason": reason} for r in self.rows() if (reason := queue_reason(r))]

    def view(self, saga_id: str) -> dict[str, Any] | None:
        """One saga's view (with its ``input``); None when neither store knows the id."""
        return self.service.get(saga_id)


def with_dead_letter(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with ``dead_letter`` (a boolean, as the templates read it)."""
    row["dead_letter"] = row["dead_lettered"]
    return row


def queue_reason(row: Mapping[str, Any]) -> QueueReason | None:
    """Why ``row``'s saga needs an operator, or None when it does not."""
    if row.get("waiting_for_operator"):
        return "operator"
    if row.get("dead_letter") or row.get("dead_lettered"):
        return "dead_letter"
    if row.get("orphaned"):
        return "orphaned"
    return None


def matches(row: Mapping[str, Any], status: str | None, text: str | None) -> bool:
    """True when ``row`` has ``status`` (``orphaned``, ``dead_letter`` and ``operator`` too)
    and its id or input contains ``text`` (case-insensitive); None or empty: any."""
    return stored.has_status(row, status or None) and stored.has_text(row, text)
