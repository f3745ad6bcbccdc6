"""LangGraph's own savers, with a task's writes committed without waiting for the disk.

LangGraph stores two kinds of rows. A *checkpoint* (``put``) is where a resume starts: it
must be on disk before the next step begins, so it commits with the database's full
durability. A task's *writes* (``put_writes``) let a superstep that was cut short keep the
work of the tasks that finished; the checkpoint that closes the superstep carries the same
values. Here the writes commit without waiting for the disk to flush:

- SQLite (WAL): ``PRAGMA synchronous=NORMAL`` for that one commit. The rows are in the WAL
  file when the commit returns, so a killed process loses nothing; only a power cut can lose
  them, and then only back to the last checkpoint (the WAL is replayed in order, and the next
  checkpoint's commit flushes every earlier one). The step then runs again, as it would after
  any crash in the middle of it.
- PostgreSQL: ``synchronous_commit = off`` for the writes (the sync saver's connection runs
  with it, and each checkpoint's pipeline ends with a statement whose own commit waits for
  the flush, which makes everything before it durable: one flush a checkpoint instead of one
  a statement; the async group-commit saver, whose statements take any pooled connection,
  uses ``SET LOCAL`` in a transaction that holds no checkpoint): the same promise (a server
  crash may lose the last writes, never a later checkpoint without them).

Each saver also passes every checkpoint's metadata through
:func:`sagagraph.checkpoints.saga_metadata.stamp` (SQLite: ``stamped_text``, the same
summary encoded once).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.sqlite import SqliteSaver

from sagagraph.checkpoints.saga_metadata import stamped_text

SQLITE_CHECKPOINT = (
    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
    "parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_SQLITE_WRITES = (
    "INSERT OR {conflict} INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, "
    "task_path, idx, channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def writes_conflict(writes: Sequence[tuple[str, Any]]) -> str:
    """Special channels (errors, interrupts) replace their row; ordinary writes keep the first."""
    return "REPLACE" if all(w[0] in WRITES_IDX_MAP for w in writes) else "IGNORE"


def sqlite_writes(
    serde: SerializerProtocol,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> tuple[str, list[tuple[Any, ...]]]:
    """The statement and rows that store a task's writes in LangGraph's SQLite ``writes`` table."""
    configurable = config["configurable"]
    rows = [
        (
            str(configurable["thread_id"]),
            str(configurable["checkpoint_ns"]),
            str(configurable["checkpoint_id"]),
            task_id,
            task_path,
            WRITES_IDX_MAP.get(channel, idx),
            channel,
            *serde.dumps_typed(value),
        )
        for idx, (channel, value) in enumerate(writes)
    ]
    return _SQLITE_WRITES.format(conflict=writes_conflict(writes)), rows


def sqlite_checkpoint(
    serde: SerializerProtocol,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
) -> tuple[tuple[Any, ...], RunnableConfig]:
    """The row of :data:`SQLITE_CHECKPOINT` that stores a checkpoint (its metadata stamped
    and encoded once, ``stamped_text``) and the config that names it, as ``SqliteSaver.put``
    builds them."""
    configurable = config["configurable"]
    checkpoint_ns = configurable["checkpoint_ns"]
    type_, serialized = serde.dumps_typed(checkpoint)
    serialized_metadata = stamped_text(
        checkpoint, get_checkpoint_metadata(config, metadata)
    ).encode("utf-8", "ignore")
    row = (
        str(configurable["thread_id"]),
        checkpoint_ns,
        checkpoint["id"],
        configurable.get("checkpoint_id"),
        type_,
        serialized,
        serialized_metadata,
    )
    named: RunnableConfig = {
        "configurable": {
            "thread_id": configurable["thread_id"],
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint["id"],
        }
    }
    return row, named


class SagaSqliteSaver(SqliteSaver):
    """``SqliteSaver`` whose task writes commit with ``synchronous=NORMAL`` (module docstring)."""

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """``SqliteSaver.put`` with the metadata stamped and encoded once (``stamped_text``)."""
        row, named = sqlite_checkpoint(self.serde, config, checkpoint, metadata)
        with self.cursor() as cur:
            cur.execute(SQLITE_CHECKPOINT, row)
        return named

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if not writes:
            return
        sql, rows = sqlite_writes(self.serde, config, writes, task_id, task_path)
        with self.lock:
            self.setup()
            # Outside a transaction (the connection commits each statement group itself):
            # SQLite only takes a new ``synchronous`` between transactions.
            restore = self._restore_synchronous()
            self.conn.execute("PRAGMA synchronous=NORMAL")
            try:
                self.conn.executemany(sql, rows)
                self.conn.commit()
            except BaseException:
                self.conn.rollback()
                raise
            finally:
                self.conn.execute(restore)

    _restore: tuple[object, str] | None = None

    def _restore_synchronous(self) -> str:
        """The statement that sets the connection's own ``synchronous`` level back, read from
        the connection the first time (a query each time cost as much as the write's
        ``PRAGMA`` itself: a failed saga's rollback has six task writes); the caller holds
        the lock. Read again if the saver was given another connection."""
        if self._restore is None or self._restore[0] is not self.conn:
            level = int(self.conn.execute("PRAGMA synchronous").fetchone()[0])
            self._restore = (self.conn, f"PRAGMA synchronous={level}")
        return self._restore[1]
