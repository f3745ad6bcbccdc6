"""Where the console reads sagas: the checkpointer and the event log the CLI reads.

Each read opens the checkpointer, reads, and closes it again, as ``sagagraph list`` and
``status`` do: the console sees what other processes write, holds no lock between requests,
and creates nothing (a SQLite file that does not exist has no sagas yet). Finished sagas are
listed from their latest checkpoint's summary alone; the others are read in full, so the
operator's queue knows which wait for an operator, which the work queue dead-lettered and
which no live process runs (orphaned).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sagagraph.cli.apps import checkpoints_may_exist, inspection_app, settings_from
from sagagraph.config import Settings
from sagagraph.errors import InputError

QueueReason = Literal["operator", "dead_letter", "orphaned"]
"""Why a saga is on the operator's queue."""
QUEUE_REASONS: dict[QueueReason, str] = {
    "operator": "waiting for an operator",
    "dead_letter": "dead-lettered by the work queue",
    "orphaned": "orphaned: no live process runs it",
}
"""Each reason, as the queue page says it."""


@dataclass(frozen=True)
class SagaSource:
    """The checkpointer (``db``) and event log (``bus``) the console shows."""

    settings: Settings

    @classmethod
    def from_urls(cls, db: str | None = None, bus: str | None = None) -> SagaSource:
        """Flags first, then the environment (``SAGAGRAPH_DB``, ``SAGAGRAPH_BUS``), as the CLI."""
        return cls(settings_from(argparse.Namespace(db=db, bus=bus)))

    def args(self, command: str, saga_id: str | None = None) -> argparse.Namespace:
        """The flags a CLI command would have been given for the same stores."""
        return argparse.Namespace(
            db=self.settings.db, bus=self.settings.bus, command=command, saga_id=saga_id
        )

    def rows(self) -> list[dict[str, Any]]:
        """One row per saga of both coordination styles, the latest update first."""
        from sagagraph.cli.listing import choreographed_rows

        rows = self.orchestrated_rows() + [
            {**r, "dead_letter": False, "input_text": r.get("paper") or ""}
            for r in choreographed_rows(self.settings)
        ]
        return sorted(
            rows, key=lambda r: (str(r["updated"] or ""), str(r["saga_id"])), reverse=True
        )

    def orchestrated_rows(self) -> list[dict[str, Any]]:
        """Rows of the checkpointer's sagas (``sagagraph list``'s, plus the dead letter and
        the input's text, for the queue and the search)."""
        from sagagraph.checkpoints.saga_index import latest_checkpoints
        from sagagraph.cli.listing import UNFINISHED, lease_is_free, row, stamped_row
        from sagagraph.graph.runner import saga_config, saga_status
        from sagagraph.saga.names import TERMINAL_STATUSES

        if not checkpoints_may_exist(self.settings.db):
            return []
        rows = []
        with inspection_app(self.settings) as app:
            for summary in latest_checkpoints(app.checkpointer):
                if summary.stamped and summary.status in TERMINAL_STATUSES:
                    found = stamped_row(summary)
                    rows.append({**found, "dead_letter": False, "input_text": found["paper"] or ""})
                    continue
                try:
                    view = saga_status(app, summary.saga_id)
                except InputError:
                    continue  # not a saga (an invalid id), or no state at all
                values = app.get_state(saga_config(summary.saga_id)).values
                orphaned = (
                    view["status"] in UNFINISHED
                    and not view["waiting_for_operator"]
                    and lease_is_free(app, summary.saga_id)
                )
                found = row(view, values.get("label"), orphaned)
                found["dead_letter"] = view.get("dead_letter") is not None
                found["input_text"] = input_text(values.get("input") or {})
                rows.append(found)
        return rows

    def queue(self) -> list[dict[str, Any]]:
        """Sagas an operator should look at, each with its ``queue_reason``."""
        return [{**r, "queue_reason": reason} for r in self.rows() if (reason := queue_reason(r))]

    def view(self, saga_id: str) -> dict[str, Any] | None:
        """One saga's JSON view (orchestrated, blackboard or choreographed), with its ``input``
        when the checkpointer holds it; None when neither store knows the id (or it is not a
        valid saga id)."""
        from sagagraph.cli.blackboard import blackboard_status
        from sagagraph.cli.lifecycle import choreography_view_or_none, graph_view_or_none
        from sagagraph.graph.runner import saga_input
        from sagagraph.saga.ids import validate_saga_id

        try:
            validate_saga_id(saga_id)
        except InputError:
            return None  # not an id any saga can have: no store holds it
        args = self.args("status", saga_id)
        view = None
        if checkpoints_may_exist(self.settings.db):
            view = blackboard_status(
                self.settings, saga_id, graph_view_or_none(self.settings, args)
            )
            if view is not None:
                with inspection_app(self.settings) as app:
                    view["input"] = saga_input(app, saga_id)
        if view is None:
            view = choreography_view_or_none(args)
        return view


def queue_reason(row: Mapping[str, Any]) -> QueueReason | None:
    """Why ``row``'s saga needs an operator, or None when it does not."""
    if row.get("waiting_for_operator"):
        return "operator"
    if row.get("dead_letter"):
        return "dead_letter"
    if row.get("orphaned"):
        return "orphaned"
    return None


def input_text(value: Any) -> str:
    """The saga's input flattened to its texts (what the search matches)."""
    if isinstance(value, Mapping):
        return " ".join(input_text(v) for v in value.values())
    if isinstance(value, str):
        return value
    if isinstance(value, Iterable):
        return " ".join(input_text(v) for v in value)
    return "" if value is None else str(value)


def matches(row: Mapping[str, Any], status: str | None, text: str | None) -> bool:
    """True when ``row`` has ``status`` (``orphaned``, ``dead_letter`` and ``operator`` too)
    and its id or input contains ``text`` (case-insensitive); None or empty: any."""
    if status:
        flags = {
            "operator": row.get("waiting_for_operator"),
            "dead_letter": row.get("dead_letter"),
            "orphaned": row.get("orphaned"),
        }
        if not (flags[status] if status in flags else row["status"] == status):
            return False
    if text:
        needle = text.casefold()
        haystack = f"{row['saga_id']} {row.get('input_text') or ''}".casefold()
        return needle in haystack
    return True
