"""An async PostgreSQL checkpointer whose concurrent writes share one transaction (group commit).

LangGraph's ``AsyncPostgresSaver`` makes every ``aput`` (its blobs, then its checkpoint row)
and every ``aput_writes`` its own round trip and its own commits, each waiting for the WAL
flush. With hundreds of sagas in flight on a pool, the sagas queue for a connection behind
those flushes (500 sagas at once: 9 write calls a saga, each waiting about 50 ms for one of 16
connections). Here a write joins the transaction in preparation: while one commit reaches the
server's disk, the writes that arrive meanwhile gather, and the next transaction carries them
all, in one pipeline (one round trip, one flush): ``BEGIN``, the rows, ``COMMIT``. See
:mod:`sagagraph.checkpoints.commit_batches` for the queue and for how errors reach their
writers.

Durability is per call, as on the stock saver: ``aput`` returns once the transaction holding
its checkpoint is committed with ``synchronous_commit`` on (flushed). A batch of task writes
only (no checkpoint) commits with ``SET LOCAL synchronous_commit = off``: committed, visible to
every connection and kept by a killed process, not waited for on the server's disk (see
:mod:`sagagraph.checkpoints.savers`); a batch that holds a checkpoint flushes its task writes
too. ``SET LOCAL`` ends with the transaction, so the pooled connection goes back as it was.

Reads (``aget_tuple``, ``alist``) and deletes are the parent's, each on a pooled connection.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from sagagraph.checkpoints.commit_batches import CommitBatches
from sagagraph.checkpoints.postgres_savers import (
    NO_FLUSH_IN_TRANSACTION,
    Row,
    Statements,
    checkpoint_rows,
    write_rows,
)

__all__ = ["NO_FLUSH_IN_TRANSACTION", "GroupCommitPostgresSaver"]


class _Rows:
    """The rows one ``aput`` or ``aput_writes`` stores, statement by statement."""

    __slots__ = ("checkpoint", "statements")

    def __init__(self, statements: Statements, *, checkpoint: bool) -> None:
        self.statements = statements
        self.checkpoint = checkpoint
        """A checkpoint: its transaction must wait for the flush."""


class GroupCommitPostgresSaver(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` with group commit (module docstring); use with ``ainvoke``.

    Open it with :func:`sagagraph.checkpoints.async_factory.open_async_checkpointer`, which
    waits for the last commit (:meth:`drain`) before the pool closes.
    """

    def __init__(self, conn: Any, **kwargs: Any) -> None:
        super().__init__(conn, **kwargs)
        self._batches: CommitBatches[_Rows] = CommitBatches(
            self._commit, name="sagagraph-postgres-group-commit"
        )

    @property
    def commits(self) -> int:
        """Transactions committed so far (each carries the writes that gathered meanwhile)."""
        return self._batches.commits

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Save a checkpoint; return once it is committed and flushed (as the parent's)."""
        # The blobs are dumped here, not on a thread: a few small values cost less than the hop.
        statements, named = checkpoint_rows(self, config, checkpoint, metadata, new_versions)
        await self._batches.write(_Rows(statements, checkpoint=True))
        return named

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes; return once they are committed (not waiting for the flush)."""
        if not writes:
            return
        query, params = write_rows(self, config, writes, task_id, task_path)
        await self._batches.write(_Rows([(query, params)], checkpoint=False))

    async def drain(self) -> None:
        """Wait until every write handed over so far is committed (or has failed)."""
        await self._batches.drain()

    async def _commit(self, batch: list[_Rows]) -> None:
        # One executemany per statement, rows in arrival order, so a later write of the same
        # key still wins (and a DO NOTHING insert keeps the first), as one call after another
        # would leave it. The statements touch different tables or rows (blobs, checkpoints,
        # ordinary writes, and errors and interrupts, whose writes index is negative), so
        # their order is free. (One multi-row ``unnest`` statement per table was measured
        # too: 10x fewer statements, but psycopg's time follows the bytes sent, and dumping
        # arrays made it about 10% slower at 500 sagas at once.)
        rows_by_sql: dict[str, list[Row]] = {}
        for rows in batch:
            for sql, params in rows.statements:
                rows_by_sql.setdefault(sql, []).extend(params)
        flush = any(rows.checkpoint for rows in batch)
        # BEGIN and COMMIT are statements of the pipeline, not psycopg's ``transaction()``,
        # which syncs the pipeline on entry and on exit: 0.27 ms of CPU a batch (0.73 against
        # 0.46 ms for a batch of four rows), and a saga run alone is one batch a write.
        async with self._cursor() as cur:
            conn = cur.connection
            try:
                async with conn.pipeline():
                    await cur.execute("BEGIN")
                    if not flush:
                        await cur.execute(NO_FLUSH_IN_TRANSACTION)
                    for sql, params in rows_by_sql.items():
                        await cur.executemany(sql, params)
                    await cur.execute("COMMIT")
            except BaseException:
                # A failed statement aborts the transaction and skips the rest of the
                # pipeline, COMMIT included: end it before the connection goes back (on a
                # lost connection that fails too, and the first error is the one to raise).
                with contextlib.suppress(psycopg.Error):
                    await conn.rollback()
                raise
