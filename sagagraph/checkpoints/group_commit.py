"""An async SQLite checkpointer whose concurrent writes share one commit (group commit).

LangGraph's ``AsyncSqliteSaver`` commits every checkpoint and every task's writes on its own,
one after the other under one lock. Each commit waits for the disk (an fsync: milliseconds),
so with many sagas in flight the sagas queue behind the disk, not behind their models:
500 three-step sagas make about 4,000 commits. Here a write joins the commit in preparation:
while one commit reaches the disk, the writes that arrive meanwhile gather, and the next
commit carries them all. Durability does not change: each ``aput`` / ``aput_writes`` returns
only after the commit that holds its rows has returned, and SQLite's ``synchronous`` setting
is left as it is (a commit is on disk when it returns). The queue, and how a failed batch's
errors reach their writers, is :mod:`sagagraph.checkpoints.commit_batches` (shared with the
PostgreSQL saver).

Reading a saga's latest checkpoint (``aget_tuple``: every run, resume and status asks for
it) goes to a second, plain ``sqlite3`` connection, on the event loop: no hop to a thread
(aiosqlite makes six), and no wait behind a commit, since in WAL mode a reader runs beside
the writer. A read sees every write whose ``aput`` has returned. ``alist`` and deletes are
the parent's.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from sagagraph.checkpoints.commit_batches import CommitBatches
from sagagraph.checkpoints.savers import SQLITE_CHECKPOINT, sqlite_checkpoint, sqlite_writes

Row = tuple[Any, ...]


class _Write:
    """Rows for one statement."""

    __slots__ = ("rows", "sql")

    def __init__(self, sql: str, rows: list[Row]) -> None:
        self.sql = sql
        self.rows = rows


class GroupCommitSqliteSaver(AsyncSqliteSaver):
    """``AsyncSqliteSaver`` with group commit (see the module docstring); use with ``ainvoke``.

    Open it with :func:`sagagraph.checkpoints.async_factory.open_async_checkpointer`, which
    also waits for the last commit before the connection closes.
    """

    def __init__(
        self,
        conn: Any,
        read_conn: sqlite3.Connection | None = None,
        patient_read_conn: sqlite3.Connection | None = None,
        *,
        database: str | None = None,
    ) -> None:
        """``conn`` (aiosqlite) writes. ``read_conn`` serves ``aget_tuple`` on the event loop
        and should not wait for locks (``timeout=0``); when SQLite says it is busy, the read
        goes to ``patient_read_conn`` (``check_same_thread=False``, the usual busy timeout)
        on the read thread. Without them, reads are the parent's, on ``conn``.

        The caller closes the connections, after :meth:`drain` and :meth:`close_reader`.
        """
        super().__init__(conn)
        self.database = database
        """The database file, resolved (None: unknown); saga leases lock a file beside it."""
        self._reader = SqliteSaver(read_conn, serde=self.serde) if read_conn is not None else None
        patient = patient_read_conn if patient_read_conn is not None else read_conn
        self._patient_reader = (
            SqliteSaver(patient, serde=self.serde) if patient is not None else None
        )
        for reader in (self._reader, self._patient_reader):
            if reader is not None:
                # aget_tuple runs this saver's setup first; a reader's own setup would write
                # (PRAGMA, CREATE TABLE), and the one on the loop must not wait for a lock.
                reader.is_setup = True
        self._read_thread = ThreadPoolExecutor(1, thread_name_prefix="sagagraph-sqlite-read")
        self._batches: CommitBatches[_Write] = CommitBatches(
            self._commit, name="sagagraph-group-commit"
        )

    @property
    def commits(self) -> int:
        """Commits made so far (each carries the writes that gathered while the last one ran)."""
        return self._batches.commits

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._read(config)

    async def _read(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, else the thread's latest; None when there is none."""
        if self._reader is None or self._patient_reader is None:
            return await super().aget_tuple(config)
        await self._ready()
        try:
            # In WAL mode a reader does not wait for writers: a point read from the page
            # cache takes tens of microseconds, less than a hop to another thread.
            return self._reader.get_tuple(config)
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) and "busy" not in str(error):
                raise
        loop = asyncio.get_running_loop()  # busy (a recovery, a checkpoint): wait off the loop
        return await loop.run_in_executor(self._read_thread, self._patient_reader.get_tuple, config)

    async def _ready(self) -> None:
        """``setup()`` when the tables are not known to exist yet; else nothing.

        The parent's ``setup`` takes the saver's lock even when it has nothing left to do,
        and a commit holds that lock while it waits for the disk: every read and every write
        (about ten a saga) would queue behind the commit in flight, one lock hand-over each.
        """
        if not self.is_setup:
            await self.setup()

    def close_reader(self) -> None:
        """Stop the read thread (before its connection is closed)."""
        self._read_thread.shutdown(wait=True)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Save a checkpoint; return once it is committed (as ``AsyncSqliteSaver.aput``)."""
        await self._ready()
        row, named = sqlite_checkpoint(self.serde, config, checkpoint, metadata)
        await self._write(SQLITE_CHECKPOINT, [row])
        return named

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes; return once they are committed (as the parent's)."""
        await self._ready()
        sql, rows = sqlite_writes(self.serde, config, writes, task_id, task_path)
        if rows:
            await self._write(sql, rows)

    async def drain(self) -> None:
        """Wait until every write handed over so far is committed (or has failed)."""
        await self._batches.drain()

    async def _write(self, sql: str, rows: list[Row]) -> None:
        # The queue (commit_batches) says how a failed batch's errors reach their writers.
        await self._batches.write(_Write(sql, rows))

    async def _commit(self, batch: list[_Write]) -> None:
        # One executemany per statement, rows in arrival order, so a later write of the same
        # key still wins. The statements touch different rows (checkpoints; ordinary writes;
        # errors and interrupts, whose writes index is negative), so their order is free.
        rows_by_sql: dict[str, list[Row]] = {}
        for write in batch:
            rows_by_sql.setdefault(write.sql, []).extend(write.rows)
        async with self.lock:
            try:
                for sql, rows in rows_by_sql.items():
                    await self.conn.executemany(sql, rows)
                await self.conn.commit()
            except BaseException:
                await self.conn.rollback()
                raise
