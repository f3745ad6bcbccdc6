"""What each checkpoint's metadata says of its saga, so listing needs no checkpoint blob.

Every saver sagagraph opens passes the metadata of each checkpoint it stores through
:func:`stamp` before handing it to LangGraph's own ``put``: one key, :data:`KEY`
(``"sagagraph"``), holds a small summary of the saga read from the checkpoint's channel
values. ``list`` and ``recover`` then read that key alone
(:mod:`sagagraph.checkpoints.saga_index`): a saga whose latest checkpoint says it finished
needs no other read. Never the paper's text, never a secret (the reason is redacted again).

- A checkpoint of a saga that has not ended says only that: the summary's version, the
  saga's status and the checkpoint's time. Nothing reads more of an unfinished saga's
  summary: ``list``, ``status`` and ``recover`` read such a saga in full anyway.
- The checkpoint that ends a saga (terminal status) carries the rest: its name, mode, label,
  the time of its last event, the steps committed and compensated, and the reason.

Storage only: the kernel's terminal statuses are mirrored here, not imported, and a test holds
them equal. LangGraph is not imported at run time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

from sagagraph.redaction import redact
from sagagraph.storable_text import replace_surrogates

if TYPE_CHECKING:
    from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata

SUMMARY_VERSION = 2
"""Bumped when the summary's form or meaning changes; :func:`stamp` writes this one."""
READABLE_VERSIONS = frozenset({SUMMARY_VERSION})
"""The versions a reader understands (a summary of any other is read in full)."""
KEY = "sagagraph"
"""The one metadata key the summary lives under."""
VERSION = "v"
STATUS = "status"
NAME = "name"
MODE = "mode"
LABEL = "label"
UPDATED = "updated"
COMPLETED = "completed"
COMPENSATED = "compensated"
REASON = "reason"
TS = "ts"
SUMMARY_KEYS = (VERSION, STATUS, NAME, MODE, LABEL, UPDATED, COMPLETED, COMPENSATED, REASON, TS)
"""Every key of a summary (:class:`~sagagraph.checkpoints.saga_index.SagaSummary`)."""
TERMINAL_STATUSES = frozenset({"completed", "rolled_back", "resolved_by_operator"})
"""The kernel's ``saga.names.TERMINAL_STATUSES``, mirrored (a test holds the two equal)."""


def stamp(checkpoint: Checkpoint, metadata: CheckpointMetadata) -> CheckpointMetadata:
    """``metadata`` with the saga's summary added under :data:`KEY` (a new dict: LangGraph's
    own is left as is)."""
    values = checkpoint.get("channel_values") or {}
    status = values.get("status")
    ts = checkpoint.get("ts")
    if not isinstance(status, str) or status not in TERMINAL_STATUSES:
        summary: dict[str, Any] = {
            VERSION: SUMMARY_VERSION,
            STATUS: status if isinstance(status, str) else None,
            TS: ts if isinstance(ts, str) else None,
        }
    else:
        summary = summary_of(values, ts)
        if not _encodes_cleanly(summary):  # a NUL in an error message, say
            summary = {k: _clean(v) for k, v in summary.items()}
    return {**metadata, KEY: summary}  # type: ignore[misc]


def summarize(checkpoint: Checkpoint | Mapping[str, Any]) -> dict[str, Any]:
    """The whole summary of the saga a checkpoint holds, from its channel values.

    A checkpoint with no saga state yet (the input checkpoint, a crash before the first step)
    has status None: readers then treat the saga as unfinished.
    """
    return summary_of(checkpoint.get("channel_values") or {}, checkpoint.get("ts"))


def summary_of(fields: Mapping[str, Any], ts: object) -> dict[str, Any]:
    """:func:`summarize` of a saga's fields and its checkpoint's time."""
    get = fields.get
    events = get("events") or []
    label = get("label")
    status, name, mode, reason = get("status"), get("saga"), get("mode"), get("reason")
    last = events[-1] if events else None
    updated = last.get("ts") if _is_mapping(last) else None
    return {
        VERSION: SUMMARY_VERSION,
        STATUS: status if isinstance(status, str) else None,
        NAME: name if isinstance(name, str) else None,
        MODE: mode if isinstance(mode, str) else None,
        LABEL: label if isinstance(label, str) else None,
        UPDATED: updated if isinstance(updated, str) else None,
        COMPLETED: [str(s) for s in get("completed") or []],
        COMPENSATED: [str(s) for s in get("compensated") or []],
        REASON: redact(reason) if isinstance(reason, str) else None,
        TS: ts if isinstance(ts, str) else None,
    }


def _encodes_cleanly(value: object) -> bool:
    """True when ``value`` stores as metadata on every saver: JSON with no NaN, no NUL
    (PostgreSQL refuses it) and no lone surrogate (not UTF-8; PostgreSQL refuses its escape)."""
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    if "u0000" in text:
        return False
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _clean(value: Any) -> Any:
    """A summary value with NULs and lone surrogates taken out of its text."""
    if isinstance(value, str):
        return replace_surrogates(value.replace("\x00", ""))
    if isinstance(value, list):
        return [_clean(item) for item in value]
    return value


def read_summary(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The summary a checkpoint's metadata carries; empty when it carries none."""
    nested = metadata.get(KEY)
    if _is_mapping(nested):
        return {k: nested[k] for k in SUMMARY_KEYS if k in nested}
    return {}


def _is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    return type(value) is dict or isinstance(value, Mapping)
