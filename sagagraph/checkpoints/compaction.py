"""Compaction, the storage half of retention (:mod:`sagagraph.graph.retention`): a thread
cut down to its latest checkpoints, or deleted.

Only public interfaces of ``BaseCheckpointSaver`` are used, never SQL on LangGraph's tables:

- :func:`delete_saga`: the saver's ``delete_thread``.
- :func:`keep_latest`: the saver's own ``prune(strategy="keep_latest")`` where it offers one
  (``PostgresSaver``, :class:`~sagagraph.checkpoints.group_commit.GroupCommitSqliteSaver`);
  else the latest checkpoint of each namespace (with its pending writes) is read with
  ``list``, the thread is deleted with ``delete_thread`` and the kept checkpoints are put
  back with ``put`` and ``put_writes``, under their own ids.

Deleting, then putting back, leaves a moment where the thread is gone. On a SQLite saver the
kept checkpoints are first written to a table of sagagraph's own (:data:`JOURNAL`, in the
same file, committed before the delete), and :func:`finish_interrupted` puts back whatever a
killed process left there: a kill at any moment loses no kept checkpoint. An in-memory saver
dies with its process and needs no journal; any other saver without ``prune`` is not
compacted (:class:`NotCompacted`), since a kill could lose its saga.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

JOURNAL = "sagagraph_retained"
"""sagagraph's own table (SQLite): the checkpoints a compaction keeps, until they are back."""
_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {JOURNAL} (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT "
    "NULL, type TEXT NOT NULL, kept BLOB NOT NULL, PRIMARY KEY (thread_id, checkpoint_ns))"
)


class NotCompacted(Exception):
    """The saver offers neither ``prune`` nor a place for the journal."""


@dataclass(frozen=True, slots=True)
class Kept:
    """One namespace's latest checkpoint, as ``put`` and ``put_writes`` take it back."""

    namespace: str
    checkpoint: Any
    metadata: Any
    writes: Sequence[tuple[str, str, Any]]


def delete_saga(saver: BaseCheckpointSaver[Any], thread_id: str) -> None:
    """Every checkpoint and write of ``thread_id``, gone (the saver's ``delete_thread``)."""
    saver.delete_thread(thread_id)


def checkpoint_count(saver: BaseCheckpointSaver[Any], thread_id: str) -> tuple[int, int]:
    """(checkpoints, namespaces) ``thread_id`` holds, by the saver's ``list``."""
    namespaces: set[str] = set()
    count = 0
    for item in saver.list(_thread(thread_id)):
        count += 1
        namespaces.add(str(item.config["configurable"].get("checkpoint_ns", "")))
    return count, len(namespaces)


def keep_latest(saver: BaseCheckpointSaver[Any], thread_id: str) -> int:
    """Cut ``thread_id`` down to the latest checkpoint of each namespace; return how many
    checkpoints went. NotCompacted when the saver cannot do it safely (module docstring)."""
    count, namespaces = checkpoint_count(saver, thread_id)
    if count <= namespaces:
        return 0
    try:
        saver.prune([thread_id], strategy="keep_latest")
        return count - namespaces
    except NotImplementedError:
        pass
    journaled = isinstance(saver, SqliteSaver)
    if not journaled and not isinstance(saver, InMemorySaver):
        raise NotCompacted(f"{type(saver).__name__} offers no prune")
    kept = latest_of_each_namespace(saver, thread_id)
    if journaled:
        assert isinstance(saver, SqliteSaver)
        _journal(saver, thread_id, kept)
    _replace(saver, thread_id, kept)
    if journaled:
        assert isinstance(saver, SqliteSaver)
        _forget(saver, thread_id)
    return count - len(kept)


def latest_of_each_namespace(saver: BaseCheckpointSaver[Any], thread_id: str) -> list[Kept]:
    """The latest checkpoint of each of ``thread_id``'s namespaces, with its pending writes."""
    latest: dict[str, CheckpointTuple] = {}
    for item in saver.list(_thread(thread_id)):
        namespace = str(item.config["configurable"].get("checkpoint_ns", ""))
        best = latest.get(namespace)
        if best is None or _id(item) > _id(best):
            latest[namespace] = item
    return [
        Kept(ns, item.checkpoint, item.metadata, list(item.pending_writes or []))
        for ns, item in sorted(latest.items())
    ]


def finish_interrupted(saver: BaseCheckpointSaver[Any]) -> list[str]:
    """Put back the kept checkpoints a killed compaction left in the journal (SQLite);
    return the threads finished. A thread that moved on since (a newer checkpoint than the
    kept one) keeps what it has."""
    if not isinstance(saver, SqliteSaver):
        return []
    finished = []
    for thread_id, kept in _journaled(saver):
        root = saver.get_tuple(_thread(thread_id, ""))
        kept_root = next((k for k in kept if k.namespace == ""), None)
        moved_on = (
            root is not None
            and kept_root is not None
            and _id(root) > str(kept_root.checkpoint["id"])
        )
        if not moved_on:
            _replace(saver, thread_id, kept)
            finished.append(thread_id)
        _forget(saver, thread_id)
    return finished


def _replace(saver: BaseCheckpointSaver[Any], thread_id: str, kept: Sequence[Kept]) -> None:
    """Delete the thread, then put back ``kept`` (no parent: the ancestors are gone)."""
    saver.delete_thread(thread_id)
    for one in kept:
        versions = dict(one.checkpoint.get("channel_versions") or {})
        saved = saver.put(_thread(thread_id, one.namespace), one.checkpoint, one.metadata, versions)
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for task_id, channel, value in one.writes:
            by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            saver.put_writes(saved, writes, task_id)


def _journal(saver: SqliteSaver, thread_id: str, kept: Sequence[Kept]) -> None:
    rows = []
    for one in kept:
        kind, blob = saver.serde.dumps_typed(
            {"checkpoint": one.checkpoint, "metadata": one.metadata, "writes": list(one.writes)}
        )
        rows.append((thread_id, one.namespace, kind, blob))
    with saver.cursor() as cur:
        cur.execute(_CREATE)
        cur.executemany(f"INSERT OR REPLACE INTO {JOURNAL} VALUES (?, ?, ?, ?)", rows)


def _forget(saver: SqliteSaver, thread_id: str) -> None:
    with saver.cursor() as cur:
        cur.execute(f"DELETE FROM {JOURNAL} WHERE thread_id = ?", (thread_id,))


def _journaled(saver: SqliteSaver) -> Iterator[tuple[str, list[Kept]]]:
    with saver.cursor(transaction=False) as cur:
        cur.execute(_CREATE)
        cur.execute(f"SELECT thread_id, checkpoint_ns, type, kept FROM {JOURNAL} ORDER BY 1, 2")
        rows = cur.fetchall()
    by_thread: dict[str, list[Kept]] = {}
    for thread_id, namespace, kind, blob in rows:
        data = saver.serde.loads_typed((kind, blob))
        by_thread.setdefault(str(thread_id), []).append(
            Kept(
                str(namespace),
                data["checkpoint"],
                data["metadata"],
                [tuple(w) for w in data["writes"]],
            )
        )
    yield from by_thread.items()


def _thread(thread_id: str, namespace: str | None = None) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if namespace is not None:
        configurable["checkpoint_ns"] = namespace
    return {"configurable": configurable}


def _id(item: CheckpointTuple) -> str:
    return str(item.config["configurable"]["checkpoint_id"])


__all__ = [
    "JOURNAL",
    "Kept",
    "NotCompacted",
    "checkpoint_count",
    "delete_saga",
    "finish_interrupted",
    "keep_latest",
]
