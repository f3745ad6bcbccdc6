"""How a saga's fields are laid out in LangGraph's channels, and read back from them.

A saga's fields (:class:`~sagagraph.graph.state.SagaState`: ``saga_id``, ``input``,
``status``, ``results``, ``events``, ``failure``...) are what every node reads and writes and
what the JSON view is made of. LangGraph stores them in five channels:

- ``saga_id``, ``input``, ``fail_at``: what starts a saga (``{"input": {...}}`` is what a
  LangGraph Server run or a direct ``invoke`` passes), written once;
- ``status``: where the saga is in its lifecycle (recovery, ``list`` and the checkpoint
  metadata read it straight from a checkpoint);
- ``record``: every other field (:data:`RECORD_FIELDS`), one dict that each node's update is
  merged into, field by field, with each field's own rule (``events`` appended, ``results``
  merged, a failure replaced...).

Why not one channel a field: LangGraph's cost per superstep grows with the number of channels,
written or not (it reads every channel into every node's input and into each ``values``
chunk, copies every channel into each checkpoint, and visits each after each superstep).
Seventeen channels cost a failed saga 1.35 M instructions (15%) more than a plain graph of
five channels with the same nodes; in five, it costs what the plain graph costs
(docs/performance.md, "Sixth pass").

Nodes never see the layout: a saga node is given :func:`saga_fields` of the state and its
update goes through :func:`channel_update` (``graph.dual_node``). Code that reads LangGraph's
state itself (``get_state().values``, a checkpoint's ``channel_values``) reads the fields with
:func:`saga_fields`, which also reads the layout sagas were stored in before (one channel a
field), and sagagraph's savers give such a stored saga back in this layout
(:func:`upgraded_values`), so a saga stored by an earlier version resumes where it stopped.

Plain data and no LangGraph here: the savers (``checkpoints``) and the graph both use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

RECORD = "record"
"""The channel that holds every field but the inputs and the status."""
RECORD_FIELDS = frozenset(
    {
        "saga",
        "mode",
        "router",
        "reason",
        "results",
        "events",
        "halted",
        "failure",
        "compensation_failure",
        "skipped",
        "compensated",
        "usage",
        "route",
    }
)
"""The fields the ``record`` channel holds (the others have a channel each)."""
EMPTY: tuple[tuple[str, type[Any]], ...] = (
    ("results", dict),
    ("events", list),
    ("compensated", list),
    ("skipped", list),
    ("usage", dict),
)
"""The record's collections, and what they hold before anything is written to them."""


def saga_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """The saga's fields from LangGraph's state values (or a checkpoint's channel values):
    the record's fields beside the others, as one flat dict, the collections not written yet
    empty (:data:`EMPTY`), as a channel of their own shows them. Values already flat (an
    earlier layout, the final values a checkpoint's metadata carries) come back as they are."""
    record = values.get(RECORD)
    if not isinstance(record, Mapping):
        return dict(values)
    fields = dict(values)
    del fields[RECORD]
    fields.update(record)
    for key, empty in EMPTY:
        if key not in fields:
            fields[key] = empty()
    return fields


def channel_update(update: Mapping[str, Any]) -> dict[str, Any]:
    """A node's update of saga fields as the channels take it: the record's fields gathered
    under ``record``, the rest as they are. An update with no record field is returned as is."""
    record: dict[str, Any] | None = None
    out: dict[str, Any] = {}
    for key, value in update.items():
        if key in RECORD_FIELDS:
            if record is None:
                record = {}
            record[key] = value
        else:
            out[key] = value
    if record is None:
        return update if isinstance(update, dict) else dict(update)
    out[RECORD] = record
    return out


def channel_writes(update: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """:func:`channel_update` as a task's writes (``put_writes`` pairs)."""
    return list(channel_update(update).items())


_SAGA_CHANNELS = RECORD_FIELDS | {"saga_id", "input", "fail_at", "status", "board"}


def earlier_saga(values: Mapping[str, Any]) -> bool:
    """True when ``values`` (a checkpoint's channel values) may be a saga's stored one channel
    a field: its id, no record, and nothing but saga fields and LangGraph's own channels (whose
    names start with ``__`` or hold a ``:``), so another graph's state on the same saver is
    never taken for one. (A saga's checkpoints before its first step are alike in both
    layouts: only their pending writes may need :func:`upgraded_writes`.)"""
    return (
        RECORD not in values
        and "saga_id" in values
        and all(k in _SAGA_CHANNELS or k.startswith("__") or ":" in k for k in values)
    )


def upgraded_values(
    values: Mapping[str, Any], versions: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The channel values and versions of an :func:`earlier_saga` checkpoint in this layout.

    The record's version is the newest of the fields it takes in, so LangGraph sees it
    changed whenever one of them had.
    """
    record = {key: values[key] for key in sorted(RECORD_FIELDS.intersection(values))}
    new_values = {k: v for k, v in values.items() if k not in RECORD_FIELDS}
    if record:
        new_values[RECORD] = record
    moved = [versions[k] for k in RECORD_FIELDS if k in versions]
    new_versions = {k: v for k, v in versions.items() if k not in RECORD_FIELDS}
    if moved:
        new_versions[RECORD] = max(moved)
    return new_values, new_versions


def needs_upgrade(values: Mapping[str, Any], writes: Iterable[tuple[str, str, Any]]) -> bool:
    """True when an :func:`earlier_saga` checkpoint holds a field, or a pending write, that
    today's layout keeps in the record."""
    return not RECORD_FIELDS.isdisjoint(values) or any(c in RECORD_FIELDS for _, c, _ in writes)


def upgraded_writes(writes: Iterable[tuple[str, str, Any]]) -> list[tuple[str, str, Any]]:
    """The pending task writes of an :func:`earlier_saga` checkpoint in this layout: a record
    field's write becomes a write of the record."""
    return [
        (task, RECORD, {channel: value}) if channel in RECORD_FIELDS else (task, channel, value)
        for task, channel, value in writes
    ]
