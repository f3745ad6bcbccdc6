"""What each checkpoint's metadata says of its saga, so listing needs no checkpoint blob.

Every saver sagagraph opens passes the metadata of each checkpoint it stores through
:func:`stamp`, which adds a small summary of the saga read from the checkpoint's plain channel
values: its status, name, mode, paper, the time of its last event, the steps committed and
compensated, and its reason. ``list`` and ``recover`` then read the metadata column alone
(:mod:`sagagraph.checkpoints.saga_index`): a saga whose latest checkpoint says it finished
needs no other read. Never the paper's text, never a secret (the reason is redacted again).

The checkpoint that ends a saga (terminal status) also carries the saga's final state values
under :data:`FINAL`, as JSON text (:func:`final_state`), so ``status`` of a finished saga is
one metadata read, with no LangGraph (:mod:`sagagraph.checkpoints.metadata_reader`). They are
the values the checkpoint itself holds, the reason redacted as the summary's is; values that
are not JSON are not copied, and such a saga is read in full.

Storage only: the kernel's view (``saga.view.committed_order``) and its terminal statuses are
mirrored here, not imported, and tests hold them equal. LangGraph is not imported at run
time: the CLI reads summaries without it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

from sagagraph.redaction import redact

if TYPE_CHECKING:
    from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata

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
"""Every key of the summary :func:`stamp` writes, in the order the SQL listing reads them."""
FINAL = "saga_final"
"""Only in a checkpoint whose status is terminal: its state values as JSON text."""
TERMINAL_STATUSES = frozenset({"completed", "rolled_back", "resolved_by_operator"})
"""The kernel's ``saga.names.TERMINAL_STATUSES``, mirrored (a test holds the two equal)."""


def stamp(checkpoint: Checkpoint, metadata: CheckpointMetadata) -> CheckpointMetadata:
    """``metadata`` with the saga's summary added (a new dict: LangGraph's own is left as is),
    and, when the saga has ended, its final state values (:data:`FINAL`)."""
    summary = summarize(checkpoint)
    if summary[STATUS] in TERMINAL_STATUSES:
        final = final_state(checkpoint.get("channel_values") or {})
        if final is not None:
            summary[FINAL] = final
    return {**metadata, **summary}  # type: ignore[typeddict-item]


def summarize(checkpoint: Checkpoint | Mapping[str, Any]) -> dict[str, Any]:
    """The summary of the saga a checkpoint holds, from its channel values.

    A checkpoint with no saga state yet (the input checkpoint, a crash before the first step)
    has ``saga_status`` None: readers then treat the saga as unfinished.

    Every checkpoint a saga writes passes here (five for the paper saga), on the event loop
    when hundreds of sagas run at once: the text checks are inline, and a plain ``dict`` skips
    the ``Mapping`` ABC's slower ``isinstance``.
    """
    values: Mapping[str, Any] = checkpoint.get("channel_values") or {}
    get = values.get
    events = get("events") or []
    saga_input = get("input")
    paper = saga_input.get("paper") if _is_mapping(saga_input) else None
    status, name, mode, reason = get("status"), get("saga"), get("mode"), get("reason")
    last = events[-1] if events else None
    updated = last.get("ts") if _is_mapping(last) else None
    ts = checkpoint.get("ts")
    return {
        VERSION: SUMMARY_VERSION,
        STATUS: status if isinstance(status, str) else None,
        NAME: name if isinstance(name, str) else None,
        MODE: mode if isinstance(mode, str) else None,
        PAPER: paper if isinstance(paper, str) else None,
        UPDATED: updated if isinstance(updated, str) else None,
        COMPLETED: committed_steps(events, get("results") or {}),
        COMPENSATED: [str(s) for s in get("compensated") or []],
        REASON: redact(reason) if isinstance(reason, str) else None,
        TS: ts if isinstance(ts, str) else None,
    }


_FINAL_JSON = json.JSONEncoder(allow_nan=False, separators=(",", ":")).encode
"""``json.dumps(value, allow_nan=False, separators=(",", ":"))`` without building an encoder
for each call."""


def final_state(values: Mapping[str, Any]) -> str | None:
    """The state channels of ``values`` as JSON text, with the reason redacted; None when a
    value is not JSON (a set, a date, bytes, a model object, NaN...) or when the text holds
    an escaped NUL (PostgreSQL drops those from metadata). LangGraph's own channels
    (``__start__``, ``branch:to:...``) are left out.

    One ``json.dumps`` and no check beyond it, since this runs as every saga ends: a tuple
    comes back a list, as it does from LangGraph's own serializer, and a key that is not a
    string comes back a string, as ``status --json`` prints it anyway.
    """
    state = {k: v for k, v in values.items() if not k.startswith("__") and ":" not in k}
    if isinstance(state.get("reason"), str):
        state["reason"] = redact(state["reason"])
    try:
        text = _FINAL_JSON(state)
    except (TypeError, ValueError, RecursionError):
        return None
    return None if "u0000" in text else text


def committed_steps(events: Sequence[Mapping[str, Any]], results: Mapping[str, Any]) -> list[str]:
    """Steps whose result is still committed, in commit order (``saga.view.committed_order``)."""
    order: list[str] = []
    for event in events:
        if (
            _is_mapping(event)
            and event.get("action") == "execute"
            and event.get("outcome") == "ok"
            and event.get("step") not in order
        ):
            order.append(str(event.get("step")))
    order = [s for s in order if s in results]
    return order + [str(s) for s in results if s not in order]


def _is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    return type(value) is dict or isinstance(value, Mapping)
