"""Retention of the choreography event log: the events of sagas finished before a cut-off go.

A choreographed saga lives in the event log only (no checkpoint), so the orchestrated sagas'
retention (:mod:`sagagraph.graph.retention`) does not reach it. :func:`prune_event_log` reads
the log once, folds each saga's events into its view as ``list`` and ``status`` do, and deletes
every event of each saga whose status is final (``completed``, ``rolled_back``,
``resolved_by_operator``) and whose last event is older than the cut-off. A saga that has not
finished, or that waits for an operator, keeps every event; so does every saga of a log that
cannot delete (the in-memory log, whose positions are its consumers' cursors, and RabbitMQ's
stream, which its own retention settings trim).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from sagagraph.choreography.hosting import BusRef, bus_for
from sagagraph.choreography.messages import SagaMessage
from sagagraph.choreography.projection import choreography_view
from sagagraph.errors import SagaNotFoundError
from sagagraph.saga.names import TERMINAL_STATUSES


@runtime_checkable
class ForgettingLog(Protocol):
    """An event log that can delete a saga's events (the SQLite log)."""

    def forget_sagas(self, saga_ids: Collection[str]) -> int:
        """Delete every event of these sagas; the number of events deleted."""


@dataclass
class LogPruned:
    """What one :func:`prune_event_log` did (or, on a dry run, would do)."""

    deleted: list[str] = field(default_factory=list)
    """Choreographed sagas whose events went: they finished before the cut-off."""
    events_removed: int = 0
    not_pruned: str | None = None
    """Why the log was left whole (it cannot delete); None when it was pruned."""


def prune_event_log(
    bus_url: BusRef, finished_before: datetime, *, dry_run: bool = False
) -> LogPruned:
    """Delete the events of the choreographed sagas that finished before ``finished_before``
    (module docstring); a log that does not exist is not created."""
    done = LogPruned()
    with bus_for(bus_url, create=False) as bus:
        if not isinstance(bus, ForgettingLog):
            done.not_pruned = f"the event log {bus.url} cannot delete events"
            return done
        by_saga: dict[str, list[SagaMessage]] = {}
        for message in bus.read_log(unauthentic=True):
            by_saga.setdefault(message["saga_id"], []).append(message)
        done.deleted = [
            saga_id
            for saga_id, events in by_saga.items()
            if _finished_before(saga_id, events, finished_before)
        ]
        if done.deleted and not dry_run:
            done.events_removed = bus.forget_sagas(done.deleted)
        elif dry_run:
            done.events_removed = sum(len(by_saga[s]) for s in done.deleted)
    return done


def _finished_before(saga_id: str, events: list[SagaMessage], cutoff: datetime) -> bool:
    try:
        view = choreography_view(saga_id, events)
    except SagaNotFoundError:  # events nobody started a saga for: not a saga's history
        return False
    if view["status"] not in TERMINAL_STATUSES:
        return False
    at = _last_event_time(view)
    return at is not None and at < cutoff


def _last_event_time(view: dict[str, Any]) -> datetime | None:
    events = view.get("events") or []
    stamp = events[-1].get("ts") if events and isinstance(events[-1], dict) else None
    if not isinstance(stamp, str):
        return None
    try:
        at = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=UTC)
