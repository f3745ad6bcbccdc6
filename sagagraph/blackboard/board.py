"""The board: versioned entries, an append-only reducer, and what the controller reads of it.

Each knowledge source owns one *topic* (its step name). A contribution posts version 1 of
its topic; a refinement posts the next version; a retraction posts a version whose status is
``withdrawn``. Nothing is ever overwritten or deleted: the board is the history, and the
current state of a topic is its highest version.

The reducer keys entries by ``(topic, version)``, and a node computes the next version from
the board it was given, so a node that runs again after a crash (at-least-once) posts the
same keys again and the board keeps exactly one of each.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

from sagagraph.graph.state import SagaState
from sagagraph.saga.names import BLACKBOARD, reserve_names
from sagagraph.saga.view import now

MODE = BLACKBOARD
"""The ``mode`` a blackboard saga records (and its JSON view shows)."""
CONTROLLER = "controller"
"""Name of the node that reads the board and picks the next knowledge source."""
reserve_names(CONTROLLER)

EntryStatus = Literal["posted", "refined", "withdrawn"]
"""``posted``: a first contribution; ``refined``: a later version by a knowledge source that
revisited it; ``withdrawn``: retracted (its files removed)."""
POSTED: EntryStatus = "posted"
REFINED: EntryStatus = "refined"
WITHDRAWN: EntryStatus = "withdrawn"


class BoardEntry(TypedDict):
    """One version of one topic on the board (plain data, checkpoint-safe)."""

    topic: str
    """What the entry is about: the step name of the knowledge source that owns it."""
    version: int
    """1 for the first contribution, then one more for each refinement or retraction."""
    author: str
    """The knowledge source that wrote this version."""
    status: EntryStatus
    ts: str
    note: str
    """One line: what this version says (counts, verdict, what it marks), never a secret."""
    output: str | None
    """The file this version stands for, if any (None once withdrawn)."""
    digest: str | None
    """SHA-256 (16 hex digits) of that file's text when the entry was posted."""
    marks: list[str]
    """What a refinement marked (claims the newer entries contradict); empty otherwise."""


def add_entries(left: list[BoardEntry] | None, right: list[BoardEntry] | None) -> list[BoardEntry]:
    """Append entries; an entry whose ``(topic, version)`` is on the board already is dropped."""
    board = list(left or [])
    seen = {(e["topic"], e["version"]) for e in board}
    for entry in right or []:
        key = (entry["topic"], entry["version"])
        if key not in seen:
            seen.add(key)
            board.append(entry)
    return board


class BoardState(SagaState, total=False):
    """The kernel's saga state plus the board."""

    board: Annotated[list[BoardEntry], add_entries]
    """Every version of every topic, in the order they were posted."""


def file_digest(path: str | None) -> str | None:
    if not path:
        return None
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    return hashlib.sha256(data).hexdigest()[:16]


def latest(board: Sequence[Mapping[str, Any]], topic: str) -> Mapping[str, Any] | None:
    """The highest version of ``topic``, or None when nothing was posted about it."""
    versions = [e for e in board if e["topic"] == topic]
    return max(versions, key=lambda e: int(e["version"])) if versions else None


def is_live(board: Sequence[Mapping[str, Any]], topic: str) -> bool:
    """True when ``topic`` has an entry that is not withdrawn."""
    entry = latest(board, topic)
    return entry is not None and entry["status"] != WITHDRAWN


def entry(
    board: Sequence[Mapping[str, Any]],
    topic: str,
    author: str,
    status: EntryStatus,
    *,
    note: str,
    output: str | None = None,
    marks: Sequence[str] = (),
) -> BoardEntry:
    """The next version of ``topic`` on ``board``."""
    previous = latest(board, topic)
    return {
        "topic": topic,
        "version": int(previous["version"]) + 1 if previous else 1,
        "author": author,
        "status": status,
        "ts": now(),
        "note": note,
        "output": output,
        "digest": file_digest(output),
        "marks": list(marks),
    }


def describe_data(data: Mapping[str, Any]) -> str:
    """A one-line note for a contribution's result: list sizes and short scalars."""
    parts: list[str] = []
    for key, value in data.items():
        if isinstance(value, list | tuple):
            parts.append(f"{key}: {len(value)}")
        elif isinstance(value, bool | int | float):
            parts.append(f"{key}: {value}")
        elif isinstance(value, str):
            parts.append(f"{key}: {len(value.split())} words")
    return ", ".join(parts)[:200] or "contributed"


def withdrawals(
    board: Sequence[Mapping[str, Any]], topics: Sequence[str], why: str
) -> list[BoardEntry]:
    """A ``withdrawn`` version of every live topic among ``topics``."""
    out: list[BoardEntry] = []
    for topic in topics:
        if is_live(board, topic):
            current = latest(board, topic)
            assert current is not None
            out.append(entry(board, topic, str(current["author"]), WITHDRAWN, note=why))
    return out
