"""What each checkpoint's metadata says of its saga, so listing needs no checkpoint blob.

Every saver sagagraph opens passes the metadata of each checkpoint it stores through
:func:`stamp`, which adds a small summary of the saga read from the checkpoint's plain channel
values: its status, name, mode, paper, the time of its last event, the steps committed and
compensated, and its reason. ``list`` and ``recover`` then read the metadata column alone
(:mod:`sagagraph.checkpoints.saga_index`): a saga whose latest checkpoint says it finished
needs no other read. Never the paper's text, never a secret (the reason is redacted again).

Storage only: the kernel's view (``saga.view.committed_order``) is mirrored here, not
imported, and a test holds the two equal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata

from sagagraph.redaction import redact

SUMMARY_VERSION = 1
"""Bumped when the summary's meaning changes; a reader trusts only the version it knows."""
VERSION = "saga_v"
STATUS = "saga_status"
NAME = "saga_name"
MODE = "saga_mode"
PAPER = "saga_paper"
UPDATED = "saga_updated"
COMPLETED = "saga_completed"
COMPENSATED = "saga_compensated"
REASON = "saga_reason"
TS = "saga_ts"
SUMMARY_KEYS = (VERSION, STATUS, NAME, MODE, PAPER, UPDATED, COMPLETED, COMPENSATED, REASON, TS)
"""Every key :func:`stamp` writes, in the order the SQL listing reads them."""


def stamp(checkpoint: Checkpoint, metadata: CheckpointMetadata) -> CheckpointMetadata:
    """``metadata`` with the saga's summary added (a new dict: LangGraph's own is left as is)."""
    return {**metadata, **summarize(checkpoint)}  # type: ignore[typeddict-item]


def summarize(checkpoint: Checkpoint | Mapping[str, Any]) -> dict[str, Any]:
    """The summary of the saga a checkpoint holds, from its channel values.

    A checkpoint with no saga state yet (the input checkpoint, a crash before the first step)
    has ``saga_status`` None: readers then treat the saga as unfinished.
    """
    values: Mapping[str, Any] = checkpoint.get("channel_values") or {}
    events = values.get("events") or []
    results = values.get("results") or {}
    saga_input = values.get("input")
    paper = saga_input.get("paper") if isinstance(saga_input, Mapping) else None
    reason = values.get("reason")
    return {
        VERSION: SUMMARY_VERSION,
        STATUS: _text(values.get("status")),
        NAME: _text(values.get("saga")),
        MODE: _text(values.get("mode")),
        PAPER: paper if isinstance(paper, str) else None,
        UPDATED: _last_ts(events),
        COMPLETED: committed_steps(events, results),
        COMPENSATED: [str(s) for s in values.get("compensated") or []],
        REASON: redact(reason) if isinstance(reason, str) else None,
        TS: _text(checkpoint.get("ts")),
    }


def committed_steps(events: Sequence[Mapping[str, Any]], results: Mapping[str, Any]) -> list[str]:
    """Steps whose result is still committed, in commit order (``saga.view.committed_order``)."""
    order: list[str] = []
    for event in events:
        if (
            isinstance(event, Mapping)
            and event.get("action") == "execute"
            and event.get("outcome") == "ok"
            and event.get("step") not in order
        ):
            order.append(str(event.get("step")))
    order = [s for s in order if s in results]
    return order + [str(s) for s in results if s not in order]


def _last_ts(events: Sequence[Any]) -> str | None:
    last = events[-1] if events else None
    return _text(last.get("ts")) if isinstance(last, Mapping) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
