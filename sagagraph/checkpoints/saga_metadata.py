"""What each checkpoint's metadata says of its saga, so listing needs no checkpoint blob.

Every saver sagagraph opens passes the metadata of each checkpoint it stores through
:func:`stamp`, which adds one key, :data:`KEY` (``"sagagraph"``), holding a small summary of
the saga read from the checkpoint's plain channel values. ``list`` and ``recover`` then read
the metadata column alone (:mod:`sagagraph.checkpoints.saga_index`): a saga whose latest
checkpoint says it finished needs no other read. Never the paper's text, never a secret (the
reason is redacted again).

- A checkpoint of a saga that has not ended says only that: the summary's version, the
  saga's status and the checkpoint's time. Nothing reads more of an unfinished saga's
  summary: ``list``, ``status`` and ``recover`` read such a saga in full anyway.
- The checkpoint that ends a saga (terminal status) carries the rest: its name, mode, paper,
  the time of its last event, the steps committed and compensated, the reason, and the
  saga's final state values under :data:`FINAL` (a JSON object, :func:`final_state`), so
  ``status`` of a finished saga is one metadata read, with no LangGraph
  (:mod:`sagagraph.checkpoints.metadata_reader`). Values that are not JSON are not copied,
  and such a saga is read in full.

Summary version 1 (sagagraph before 2026-12-02) kept the ten keys at the top level of every
checkpoint's metadata (``saga_status``...) and the final values as JSON text; readers still
read it (:data:`V1_KEYS`). Version 2 costs a saga's six checkpoints 0.5 M fewer instructions
(docs/performance.md).

Storage only: the kernel's view (``saga.view.committed_order``) and its terminal statuses are
mirrored here, not imported, and tests hold them equal. LangGraph is not imported at run
time: the CLI reads summaries without it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

from sagagraph.redaction import redact
from sagagraph.storable_text import replace_surrogates

if TYPE_CHECKING:
    from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata

SUMMARY_VERSION = 2
"""Bumped when the summary's form or meaning changes; :func:`stamp` writes this one."""
READABLE_VERSIONS = frozenset({1, 2})
"""The versions a reader understands (a summary of any other is read in full)."""
KEY = "sagagraph"
"""The one metadata key the summary lives under (version 2)."""
VERSION = "v"
STATUS = "status"
NAME = "name"
MODE = "mode"
PAPER = "paper"
UPDATED = "updated"
COMPLETED = "completed"
COMPENSATED = "compensated"
REASON = "reason"
TS = "ts"
SUMMARY_KEYS = (VERSION, STATUS, NAME, MODE, PAPER, UPDATED, COMPLETED, COMPENSATED, REASON, TS)
"""Every key of a summary (:class:`~sagagraph.checkpoints.summary_pages.SagaSummary`), in
the order the SQL listing reads version 1's."""
FINAL = "final"
"""Only in the summary of a checkpoint whose status is terminal: its state values."""
V1_KEYS = {key: f"saga_{key}" for key in SUMMARY_KEYS}
"""Version 1's top-level metadata key for each summary key (``saga_status``...)."""
V1_FINAL = "saga_final"
"""Version 1's top-level key of the final state values, as JSON text."""
TERMINAL_STATUSES = frozenset({"completed", "rolled_back", "resolved_by_operator"})
"""The kernel's ``saga.names.TERMINAL_STATUSES``, mirrored (a test holds the two equal)."""


def stamp(
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    *,
    checked: bool = True,
    final_as_text: bool = False,
) -> CheckpointMetadata:
    """``metadata`` with the saga's summary added under :data:`KEY` (a new dict: LangGraph's
    own is left as is).

    ``checked=False`` leaves the final values unchecked, for :func:`stamped_text`, whose own
    encoding checks them. ``final_as_text`` stores them as JSON text, for PostgreSQL: its
    ``jsonb`` would reorder the keys of every object in them, and ``status --json`` must
    print a finished saga's values in the order a full read gives them.
    """
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
        summary = summarize(checkpoint)
        if not _encodes_cleanly(summary):  # a NUL in an error message, say
            summary = {k: _clean(v) for k, v in summary.items()}
        final: object = (
            final_text(values) if final_as_text else final_state(values, checked=checked)
        )
        if final is not None:
            summary[FINAL] = final
    return {**metadata, KEY: summary}  # type: ignore[misc]


def summarize(checkpoint: Checkpoint | Mapping[str, Any]) -> dict[str, Any]:
    """The whole summary of the saga a checkpoint holds, from its channel values.

    A checkpoint with no saga state yet (the input checkpoint, a crash before the first step)
    has status None: readers then treat the saga as unfinished.
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


_ASCII_JSON = json.JSONEncoder(allow_nan=False, separators=(",", ":")).encode
"""``json.dumps(value, allow_nan=False, separators=(",", ":"))`` without building an encoder
for each call."""


def stamped_text(
    checkpoint: Checkpoint, metadata: CheckpointMetadata, *, final_as_text: bool = False
) -> str:
    """:func:`stamp` as JSON text, as every saver sagagraph opens stores it (SQLite: text,
    PostgreSQL: ``jsonb``): the encoding that stores the final values is the one that
    checks them, where :func:`stamp` and then the saver's own ``json.dumps`` encode them
    twice (0.26 M instructions of a failed saga on SQLite). ASCII (``\\u`` escapes), which
    ``json_extract``, ``jsonb`` and ``json.loads`` read back as the same text."""
    stamped = stamp(checkpoint, metadata, checked=False, final_as_text=final_as_text)
    try:
        text = _ASCII_JSON(stamped)
    except (TypeError, ValueError, RecursionError):
        pass  # a value of the final state is not JSON: stored without the final values
    else:
        if _clean_text(text, stamped):
            return text
    return json.dumps(stamp(checkpoint, metadata, final_as_text=final_as_text), ensure_ascii=False)


def final_state(values: Mapping[str, Any], *, checked: bool = True) -> dict[str, Any] | None:
    """The state channels of ``values``, with the reason redacted; None when they would not
    store as JSON (:func:`_encodes_cleanly`). LangGraph's own channels (``__start__``,
    ``branch:to:...``) are left out.

    A tuple is stored a list, as LangGraph's own serializer gives it back, and a key that is
    not a string comes back a string, as ``status --json`` prints it anyway.
    """
    state = {k: v for k, v in values.items() if not k.startswith("__") and ":" not in k}
    if isinstance(state.get("reason"), str):
        state["reason"] = redact(state["reason"])
    return state if not checked or _encodes_cleanly(state) else None


def final_text(values: Mapping[str, Any]) -> str | None:
    """:func:`final_state` as JSON text (encoded once: the encoding is the check)."""
    state = final_state(values, checked=False)
    try:
        text = _ASCII_JSON(state)
    except (TypeError, ValueError, RecursionError):
        return None
    return text if _clean_text(text, state) else None


def _encodes_cleanly(value: object) -> bool:
    """True when ``value`` stores as metadata on every saver: JSON with no NaN, no NUL
    (PostgreSQL refuses it) and no lone surrogate (not UTF-8; PostgreSQL refuses its escape).

    The summary is no longer inside a JSON text of its own, so any of these would fail the
    checkpoint's write. One encoding checks it all.
    """
    try:
        text = _ASCII_JSON(value)
    except (TypeError, ValueError, RecursionError):
        return False
    return _clean_text(text, value)


def _clean_text(text: str, value: object) -> bool:
    """True when ``text``, the ASCII JSON of ``value``, holds no NUL and no lone surrogate."""
    if "u0000" in text:
        return False
    if "\\ud" not in text:  # escapes of surrogates; rare, and every emoji has a pair
        return True
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


def read_summary(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The summary a checkpoint's metadata carries, of either version, without its final
    values; empty when it carries none."""
    nested = metadata.get(KEY)
    if _is_mapping(nested):
        return {k: nested[k] for k in SUMMARY_KEYS if k in nested}
    return {k: metadata[old] for k, old in V1_KEYS.items() if metadata.get(old) is not None}


def _is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    return type(value) is dict or isinstance(value, Mapping)
