"""Reading sagas without their definition: a saga's view from its latest checkpoint alone.

Any saga a checkpointer holds is read here, whatever definition ran it (the paper, a travel
booking, an application's own), so ``status``, ``list``, ``events`` and the console need no
``SAGAGRAPH_APP`` to show it. A graph's ``get_state`` would need the saga's own graph: this
reads the checkpoint LangGraph stored through the saver's public ``get_tuple``.

Two of LangGraph's channel names are read (docs/architecture.md lists both;
``tests/service/test_reading.py`` fails when either moves):

- ``__start__``: the input of a saga killed before its first step read it;
- ``branch:to:NODE``: an edge wrote it, so ``NODE`` runs next (the checkpoint's ``next``).

Tool calls waiting for approval and compensations waiting for an operator are the
checkpoint's pending ``__interrupt__`` writes.

A finished saga is also read without LangGraph (:func:`view_of_finished`), from the fields
its saver kept when it ended (:mod:`sagagraph.checkpoints.finished`); the view is the same.
This module loads LangGraph only when a function here is handed a saver.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sagagraph.checkpoints import saga_index
from sagagraph.checkpoints.saga_index import SagaSummary, latest_checkpoints
from sagagraph.errors import InputError
from sagagraph.graph.views import INTERRUPT, approvals_in_writes, is_saga_state, state_view
from sagagraph.saga.names import TERMINAL_STATUSES

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

START = "__start__"
"""LangGraph's input channel: it holds the input until the first step reads it."""
DUE = "branch:to:"
"""Prefix of the channel an edge writes to trigger a node: the node is due next."""
UNFINISHED = ("running", "compensating")
"""Statuses a live process drives: with a free lease, the saga is orphaned."""


def read_view(checkpointer: BaseCheckpointSaver[Any], saga_id: str) -> dict[str, Any] | None:
    """``saga_id``'s view (with its ``input``) from its latest checkpoint; None when the
    checkpointer holds no saga of that id (or another graph's thread under it)."""
    from sagagraph.graph.runner import saga_config

    try:
        saved = checkpointer.get_tuple(saga_config(saga_id))
    except InputError:
        return None
    return view_of_checkpoint(saved, saga_id)


def view_of_checkpoint(saved: CheckpointTuple | None, saga_id: str) -> dict[str, Any] | None:
    """The view a stored checkpoint holds; None when it holds no saga."""
    if saved is None:
        return None
    channels: Mapping[str, Any] = saved.checkpoint["channel_values"]
    values = {k: v for k, v in channels.items() if not k.startswith(("__", DUE))}
    start = channels.get(START)
    saga_input = values.get("input")
    if saga_input is None and isinstance(start, Mapping):
        saga_input = start.get("input")
        values = {**dict(start), **values}
    if not values or not is_saga_state(values, saga_id):
        return None
    writes = list(saved.pending_writes or [])
    due = [name[len(DUE) :] for name in channels if name.startswith(DUE)]
    if not due and START in channels:
        due = [START]
    waiting = any(channel == INTERRUPT for _, channel, _ in writes)
    view = state_view(
        values, saga_id, next=due, waiting=waiting, approvals=approvals_in_writes(writes)
    )
    view["input"] = dict(saga_input) if isinstance(saga_input, Mapping) else {}
    view["label"] = values.get("label")
    return view


def is_orphaned(checkpointer: BaseCheckpointSaver[Any], view: Mapping[str, Any]) -> bool:
    """True when ``view``'s saga should be running but no live process holds its lease
    (probed, never taken: :func:`~sagagraph.graph.leases.lease_is_held`). Waiting for an
    operator, dead-lettered or choreographed sagas are never orphaned."""
    if (
        view.get("mode") == "choreography"
        or view.get("status") not in UNFINISHED
        or view.get("waiting_for_operator")
        or view.get("dead_letter")
    ):
        return False
    from sagagraph.graph.leases import lease_is_held

    return not lease_is_held(checkpointer, str(view["saga_id"]))


def with_flags(checkpointer: BaseCheckpointSaver[Any], view: dict[str, Any]) -> dict[str, Any]:
    """``view`` with ``dead_lettered`` and ``orphaned`` (booleans) added."""
    from sagagraph.graph.locking import held_locks

    view["dead_lettered"] = bool(view.get("dead_letter"))
    view["locks"] = held_locks(checkpointer, str(view["saga_id"]))
    view["orphaned"] = is_orphaned(checkpointer, view)
    return view


def row_of_view(view: Mapping[str, Any], orphaned: bool = False) -> dict[str, Any]:
    """One row of ``list`` (and of the console's tables) from a saga's view."""
    events = view.get("events") or []
    saga_input = view.get("input") or {}
    return {
        "saga_id": view["saga_id"],
        "status": view["status"],
        "orphaned": orphaned,
        "dead_lettered": bool(view.get("dead_letter")),
        "mode": view.get("mode") or "orchestration",
        "definition": view.get("saga"),
        # An orchestrated saga's label is its definition's; a choreographed one has its paper.
        "paper": view["label"] if "label" in view else saga_input.get("paper"),
        "updated": events[-1]["ts"] if events else None,
        "completed": list(view.get("completed") or []),
        "compensated": list(view.get("compensated") or []),
        "reason": view.get("reason"),
        "waiting_for_operator": bool(view.get("waiting_for_operator")),
        "text": flat_text(saga_input),
    }


def row_of_summary(summary: SagaSummary) -> dict[str, Any]:
    """The row of a finished saga from its latest checkpoint's stamp alone (no state read):
    a finished saga is never orphaned and never waits for an operator."""
    s = summary.summary
    return {
        "saga_id": summary.saga_id,
        "status": s[saga_index.STATUS],
        "orphaned": False,
        "dead_lettered": False,
        "mode": s.get(saga_index.MODE) or "orchestration",
        "definition": s.get(saga_index.NAME),
        "paper": s.get(saga_index.LABEL),
        "updated": s.get(saga_index.UPDATED),
        "completed": list(s.get(saga_index.COMPLETED) or []),
        "compensated": list(s.get(saga_index.COMPENSATED) or []),
        "reason": s.get(saga_index.REASON),
        "waiting_for_operator": False,
        "text": s.get(saga_index.LABEL) or "",
    }


def orchestrated_rows(checkpointer: BaseCheckpointSaver[Any]) -> Iterator[dict[str, Any]]:
    """A row per saga of the checkpointer: finished sagas from the stamped index (one query
    per page), the others read from their latest checkpoint and probed for a live process."""
    for summary in latest_checkpoints(checkpointer):
        if summary.stamped and summary.status in TERMINAL_STATUSES:
            yield row_of_summary(summary)
            continue
        view = read_view(checkpointer, summary.saga_id)
        if view is not None:
            yield row_of_view(view, is_orphaned(checkpointer, view))


def flat_text(value: Any) -> str:
    """A saga's input flattened to its texts (what a text search matches)."""
    if isinstance(value, Mapping):
        return " ".join(flat_text(v) for v in value.values())
    if isinstance(value, str):
        return value
    if isinstance(value, Iterable):
        return " ".join(flat_text(v) for v in value)
    return "" if value is None else str(value)


def parse_time(text: str) -> datetime:
    """An ISO 8601 date or time, in UTC when it names no zone; ValueError when not one."""
    at = datetime.fromisoformat(text.strip())
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def updated_at(row: Mapping[str, Any]) -> datetime | None:
    """When the saga last changed (its last event's time); None when nothing says."""
    try:
        return parse_time(str(row["updated"])) if row.get("updated") else None
    except ValueError:
        return None


def newest_first(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows by update time, newest first; ties and rows without a time by id."""
    by_id = sorted(rows, key=lambda r: str(r["saga_id"]))
    oldest = datetime.min.replace(tzinfo=UTC)
    return sorted(by_id, key=lambda r: updated_at(r) or oldest, reverse=True)


def has_status(row: Mapping[str, Any], status: str | None) -> bool:
    """True when ``row`` has ``status``: a stored status, or ``orphaned``, ``dead_lettered``
    (``dead_letter``) or ``operator`` (waiting for one); None: any."""
    if status is None:
        return True
    if status == "orphaned":
        return bool(row["orphaned"])
    if status in ("dead_letter", "dead_lettered"):
        return bool(row["dead_lettered"])
    if status == "operator":
        return bool(row["waiting_for_operator"])
    return bool(row["status"] == status)


def has_text(row: Mapping[str, Any], text: str | None) -> bool:
    """True when ``row``'s id, paper or input contains ``text`` (case-insensitive)."""
    if not text:
        return True
    haystack = f"{row['saga_id']} {row.get('paper') or ''} {row.get('text') or ''}"
    return text.casefold() in haystack.casefold()


def view_of_finished(
    fields: Mapping[str, Any], saga_id: str, locks: Iterable[Mapping[str, Any]] = ()
) -> dict[str, Any] | None:
    """A finished saga's view with its flags, from the fields kept when it ended
    (:mod:`sagagraph.checkpoints.finished`) and the locks it holds: what :func:`read_view`
    then :func:`with_flags` return for it, read without LangGraph. None when the fields
    hold no saga of that id (the full read then decides)."""
    if not fields or not is_saga_state(fields, saga_id):
        return None
    view = state_view(fields, saga_id, next=[], waiting=False, approvals=[])
    saga_input = fields.get("input")
    view["input"] = dict(saga_input) if isinstance(saga_input, Mapping) else {}
    view["label"] = fields.get("label")
    view["dead_lettered"] = bool(view.get("dead_letter"))
    view["locks"] = [dict(lock) for lock in locks]
    view["orphaned"] = False  # a finished saga has no process to lose
    return view
