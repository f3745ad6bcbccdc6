"""A SQLite checkpointer made for many sagas at once: group commit, reads beside writes.

:class:`GroupCommitSqliteSaver` is written on ``BaseCheckpointSaver``'s public interface, with
its own SQL on its own tables (:data:`TABLES`), so it bends nothing of LangGraph's:

- **Group commit.** Every write (``put``, ``put_writes``, ``delete_thread``, ``prune``) is a
  job handed to one writer thread. While one transaction commits, the jobs that arrive
  gather; the next transaction carries them all, each in a savepoint of its own (a job that
  fails raises in its caller only). A call returns once the transaction holding its job has
  committed: with ``journal_mode=WAL`` and ``synchronous=FULL`` the commit has been written
  to the WAL and flushed (``fsync``), so a killed process or a power cut loses no write that
  returned. Concurrent sagas share one flush instead of paying one each.
- **Reads beside writes.** A read takes an idle connection of its own (opened when every one
  is busy, kept for the next read) and reads in one read transaction; WAL lets it read the
  last committed state while the writer writes, so a read never waits for a commit.
- **Values stored once.** A checkpoint row holds the checkpoint without its channel values;
  each value is a row of :data:`BLOBS` keyed by channel and version, written only when its
  version is new (as LangGraph's PostgreSQL saver does). A saga's events list, which grows
  every step, is no longer written again whole by each checkpoint of every other field.
- **Fewer, smaller rows.** A task's writes are one row (LangGraph's savers write one a
  field), and each special write (error, interrupt, resume) one of its own. Values and
  writes are small and many, so their tables are ``WITHOUT ROWID``: a row lives in its
  primary key's tree instead of in a table plus an index repeating its key. Checkpoints,
  being large, keep a rowid table.
- **Prune.** ``prune(strategy="keep_latest")`` keeps each namespace's latest checkpoint and
  the values it refers to; ``"delete"`` deletes the threads.

Values are serialised by the caller's thread; the writer thread runs SQL only.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import closing, contextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from sagagraph.checkpoints.savers import Stamping

CHECKPOINTS = "sg_checkpoints"
BLOBS = "sg_blobs"
WRITES = "sg_writes"
TABLES = (CHECKPOINTS, BLOBS, WRITES)
"""The saver's own tables (never LangGraph's ``checkpoints`` and ``writes``)."""
BUSY_TIMEOUT = 30.0
"""Seconds a statement waits for another process's write lock."""

_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {CHECKPOINTS} (thread_id TEXT NOT NULL, checkpoint_ns TEXT "
    "NOT NULL DEFAULT '', checkpoint_id TEXT NOT NULL, parent_checkpoint_id TEXT, type TEXT, "
    "checkpoint BLOB, metadata BLOB, PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id))",
    f"CREATE TABLE IF NOT EXISTS {BLOBS} (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL "
    "DEFAULT '', channel TEXT NOT NULL, version TEXT NOT NULL, type TEXT NOT NULL, blob BLOB, "
    "PRIMARY KEY (thread_id, checkpoint_ns, channel, version)) WITHOUT ROWID",
    f"CREATE TABLE IF NOT EXISTS {WRITES} (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL "
    "DEFAULT '', checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, slot INTEGER NOT NULL, "
    "task_path TEXT NOT NULL DEFAULT '', type TEXT NOT NULL, value BLOB NOT NULL, "
    "PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, slot)) WITHOUT ROWID",
)
_SELECT = (
    f"SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, "
    f"metadata FROM {CHECKPOINTS}"
)

Job = Callable[[sqlite3.Connection], Any]
"""A write: SQL on the writer's connection, inside the batch's transaction."""


class BatchedWrites(BaseCheckpointSaver[str]):
    """The public write side every group-commit saver shares.

    Each write becomes a job (SQL on the writer's connection) that the subclass hands to its
    writer (:meth:`_write`, :meth:`_awrite`), which runs it in a commit shared with the other
    writes of its batch. A subclass says how each job is built and how it is handed over.
    """

    def _write(self, job: Any) -> Any:
        raise NotImplementedError

    async def _awrite(self, job: Any) -> Any:
        raise NotImplementedError

    def _put_job(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> tuple[Any, RunnableConfig]:
        raise NotImplementedError

    def _writes_job(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> Any:
        raise NotImplementedError

    def _delete_job(self, threads: Sequence[str]) -> Any:
        """Deletes every row of ``threads``."""
        raise NotImplementedError

    def _keep_latest_job(self, threads: Sequence[str]) -> Any:
        """Keeps only each namespace's latest checkpoint of ``threads`` (and what it needs)."""
        raise NotImplementedError

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        job, saved = self._put_job(config, checkpoint, metadata, new_versions)
        self._write(job)
        return saved

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        job, saved = self._put_job(config, checkpoint, metadata, new_versions)
        await self._awrite(job)
        return saved

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._write(self._writes_job(config, writes, task_id, task_path))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self._awrite(self._writes_job(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self._write(self._delete_job([str(thread_id)]))

    async def adelete_thread(self, thread_id: str) -> None:
        await self._awrite(self._delete_job([str(thread_id)]))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._write(self._prune_job(thread_ids, strategy))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._awrite(self._prune_job(thread_ids, strategy))

    def _prune_job(self, thread_ids: Sequence[str], strategy: str) -> Any:
        threads = [str(t) for t in thread_ids]
        if strategy == "delete":
            return self._delete_job(threads)
        if strategy != "keep_latest":
            raise ValueError(f"prune strategy {strategy!r}: expected 'keep_latest' or 'delete'")
        return self._keep_latest_job(threads)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """A version sorts by its counter; the random tail keeps two forks of one
        checkpoint (time travel) from naming different values alike."""
        return next_version(current)


def connect(path: str) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, flushed commits."""
    conn = sqlite3.connect(
        path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT
    )
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    return conn


class GroupCommitSqliteSaver(BatchedWrites):
    """A SQLite checkpointer whose concurrent writes share commits (module docstring).

    Open it with :meth:`open` (or ``open_checkpointer("sqlite+group:///path")``); call
    :meth:`close` when done.
    """

    checkpoints_table = CHECKPOINTS
    """The table :mod:`sagagraph.checkpoints.saga_index` reads the summaries from."""

    def __init__(self, path: str, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        self.path = path
        self._writer_conn = connect(path)
        for statement in _SCHEMA:
            self._writer_conn.execute(statement)
        self._readers: list[sqlite3.Connection] = []
        self._idle: list[sqlite3.Connection] = []
        self._idle_lock = threading.Lock()
        self._jobs: list[tuple[Job, Future[Any]]] = []
        self._wake = threading.Condition()
        self._closed = False
        self._pid = os.getpid()
        self.commits = 0
        """Transactions committed so far (each carries one or more writes)."""
        self._writer = threading.Thread(
            target=self._write_batches, name="sagagraph-group-commit", daemon=True
        )
        self._writer.start()

    # -- the writer ---------------------------------------------------------------------

    def _submit(self, job: Job) -> Future[Any]:
        done: Future[Any] = Future()
        if os.getpid() != self._pid:  # a forked child has no writer thread: it would hang
            raise RuntimeError(
                f"checkpointer {self.path}: opened in process {self._pid}, used in a fork; "
                "open it in the process that writes"
            )
        with self._wake:
            if self._closed:
                raise RuntimeError(f"checkpointer {self.path}: closed")
            self._jobs.append((job, done))
            self._wake.notify()
        return done

    def _write_batches(self) -> None:
        conn = self._writer_conn
        while True:
            with self._wake:
                while not self._jobs and not self._closed:
                    self._wake.wait()
                if not self._jobs:
                    return
                batch, self._jobs = self._jobs, []
            self._commit(conn, batch)

    def _commit(self, conn: sqlite3.Connection, batch: list[tuple[Job, Future[Any]]]) -> None:
        outcomes: list[tuple[Future[Any], Any, BaseException | None]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for job, done in batch:
                conn.execute("SAVEPOINT job")
                try:
                    result = job(conn)
                except Exception as error:
                    conn.execute("ROLLBACK TO job")
                    outcomes.append((done, None, error))
                else:
                    outcomes.append((done, result, None))
                conn.execute("RELEASE job")
            conn.execute("COMMIT")
            self.commits += 1
        except Exception as error:  # the batch did not commit: every writer hears why
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            for _, done in batch:
                done.set_exception(error)
            return
        for done, result, failure in outcomes:
            if failure is None:
                done.set_result(result)
            else:
                done.set_exception(failure)

    def _write(self, job: Job) -> Any:
        return self._submit(job).result()

    async def _awrite(self, job: Job) -> Any:
        return await asyncio.wrap_future(self._submit(job))

    def close(self) -> None:
        """Commit what is queued, stop the writer, close every connection."""
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._writer.join()
        self._writer_conn.close()
        with self._idle_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
            self._idle.clear()

    # -- reads --------------------------------------------------------------------------

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """An idle read connection (a new one when every one is busy) inside a read
        transaction: the statements of one read see one committed state."""
        with self._idle_lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = connect(self.path)
            with self._idle_lock:
                self._readers.append(conn)
        try:
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")
        finally:
            with self._idle_lock:
                self._idle.append(conn)

    @contextmanager
    def read_cursor(self) -> Iterator[sqlite3.Cursor]:
        """A cursor on a read connection, for one query (the saga index's)."""
        with self._snapshot() as conn, closing(conn.cursor()) as cur:
            yield cur

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = str(configurable.get("checkpoint_ns", ""))
        checkpoint_id = get_checkpoint_id(config)
        with self._snapshot() as conn:
            if checkpoint_id:
                sql = f"{_SELECT} WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
                row = conn.execute(sql, (thread_id, ns, checkpoint_id)).fetchone()
            else:
                sql = (
                    f"{_SELECT} WHERE thread_id = ? AND checkpoint_ns = ? "
                    "ORDER BY checkpoint_id DESC LIMIT 1"
                )
                row = conn.execute(sql, (thread_id, ns)).fetchone()
            return None if row is None else self._tuple(conn, row)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        wheres: list[str] = []
        params: list[Any] = []
        if config is not None:
            configurable = config["configurable"]
            wheres.append("thread_id = ?")
            params.append(str(configurable["thread_id"]))
            ns = configurable.get("checkpoint_ns")
            if ns is not None:
                wheres.append("checkpoint_ns = ?")
                params.append(str(ns))
            if checkpoint_id := get_checkpoint_id(config):
                wheres.append("checkpoint_id = ?")
                params.append(checkpoint_id)
        if before is not None:
            wheres.append("checkpoint_id < ?")
            params.append(get_checkpoint_id(before))
        where = f" WHERE {' AND '.join(wheres)}" if wheres else ""
        found: list[CheckpointTuple] = []
        with self._snapshot() as conn:  # read whole, so no connection is held between items
            rows = conn.execute(f"{_SELECT}{where} ORDER BY checkpoint_id DESC", params)
            for row in rows.fetchall():
                if limit is not None and len(found) >= limit:
                    break
                metadata = json.loads(row[6]) if row[6] else {}
                if filter and any(metadata.get(k) != v for k, v in filter.items()):
                    continue
                found.append(self._tuple(conn, row))
        yield from found

    def _tuple(self, conn: sqlite3.Connection, row: Sequence[Any]) -> CheckpointTuple:
        thread_id, ns, checkpoint_id, parent_id, kind, blob, metadata = row
        checkpoint: Checkpoint = self.serde.loads_typed((kind, blob))
        versions = checkpoint.get("channel_versions") or {}
        values: dict[str, Any] = {}
        if versions:
            pairs = ", ".join("(?, ?)" for _ in versions)
            flat = [item for pair in versions.items() for item in (pair[0], str(pair[1]))]
            sql = (
                f"SELECT channel, type, blob FROM {BLOBS} WHERE thread_id = ? AND "
                f"checkpoint_ns = ? AND (channel, version) IN (VALUES {pairs})"
            )
            for channel, value_kind, value in conn.execute(sql, (thread_id, ns, *flat)):
                if value_kind != "empty":
                    values[channel] = self.serde.loads_typed((value_kind, value))
        rows = conn.execute(
            f"SELECT task_id, task_path, type, value FROM {WRITES} "
            "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
            (thread_id, ns, checkpoint_id),
        )
        pending = pending_writes(
            [
                (task_id, task_path, self.serde.loads_typed((value_kind, packed)))
                for task_id, task_path, value_kind, packed in rows
            ]
        )
        return CheckpointTuple(
            config=checkpoint_config(thread_id, ns, checkpoint_id),
            checkpoint={**checkpoint, "channel_values": values},
            metadata=json.loads(metadata) if metadata else {},
            parent_config=checkpoint_config(thread_id, ns, parent_id) if parent_id else None,
            pending_writes=pending,
        )

    # -- writes -------------------------------------------------------------------------

    def _put_job(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> tuple[Job, RunnableConfig]:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = str(configurable.get("checkpoint_ns", ""))
        parent_id = configurable.get("checkpoint_id")
        values = checkpoint["channel_values"]
        # A channel with a version and no value (an edge's trigger, a value consumed) has no
        # row: reading finds nothing for it, which is what it holds.
        blobs = [
            (thread_id, ns, channel, str(version), *self.serde.dumps_typed(values[channel]))
            for channel, version in new_versions.items()
            if channel in values
        ]
        bare = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        kind, blob = self.serde.dumps_typed(bare)
        meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False).encode(
            "utf-8", "ignore"
        )
        row = (thread_id, ns, checkpoint["id"], parent_id, kind, blob, meta)

        def job(conn: sqlite3.Connection) -> None:
            if blobs:
                conn.executemany(f"INSERT OR REPLACE INTO {BLOBS} VALUES (?, ?, ?, ?, ?, ?)", blobs)
            conn.execute(f"INSERT OR REPLACE INTO {CHECKPOINTS} VALUES (?, ?, ?, ?, ?, ?, ?)", row)

        return job, checkpoint_config(thread_id, ns, checkpoint["id"])

    def _writes_job(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> Job:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = str(configurable.get("checkpoint_ns", ""))
        checkpoint_id = str(configurable["checkpoint_id"])
        verb = writes_verb(writes)
        rows = [
            (
                thread_id,
                ns,
                checkpoint_id,
                task_id,
                slot,
                task_path,
                *self.serde.dumps_typed(packed),
            )
            for slot, packed in pack_writes(writes).items()
        ]

        def job(conn: sqlite3.Connection) -> None:
            conn.executemany(f"{verb} INTO {WRITES} VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)

        return job

    def _delete_job(self, threads: Sequence[str]) -> Job:
        return _delete_threads(threads)

    def _keep_latest_job(self, threads: Sequence[str]) -> Job:
        serde = self.serde

        def job(conn: sqlite3.Connection) -> None:
            for thread_id in threads:
                latest = conn.execute(
                    f"SELECT checkpoint_ns, max(checkpoint_id) FROM {CHECKPOINTS} "
                    "WHERE thread_id = ? GROUP BY checkpoint_ns",
                    (thread_id,),
                ).fetchall()
                for ns, keep in latest:
                    for table in (CHECKPOINTS, WRITES):
                        conn.execute(
                            f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns = ? "
                            "AND checkpoint_id != ?",
                            (thread_id, ns, keep),
                        )
                    kind, blob = conn.execute(
                        f"SELECT type, checkpoint FROM {CHECKPOINTS} WHERE thread_id = ? "
                        "AND checkpoint_ns = ? AND checkpoint_id = ?",
                        (thread_id, ns, keep),
                    ).fetchone()
                    versions = serde.loads_typed((kind, blob)).get("channel_versions") or {}
                    kept = {(str(c), str(v)) for c, v in versions.items()}
                    stored = conn.execute(
                        f"SELECT channel, version FROM {BLOBS} WHERE thread_id = ? "
                        "AND checkpoint_ns = ?",
                        (thread_id, ns),
                    ).fetchall()
                    gone = [(thread_id, ns, c, v) for c, v in stored if (c, v) not in kept]
                    conn.executemany(
                        f"DELETE FROM {BLOBS} WHERE thread_id = ? AND checkpoint_ns = ? "
                        "AND channel = ? AND version = ?",
                        gone,
                    )
                namespaces = [ns for ns, _ in latest]
                marks = ", ".join("?" for _ in namespaces) or "''"
                conn.execute(  # values of namespaces left with no checkpoint
                    f"DELETE FROM {BLOBS} WHERE thread_id = ? AND checkpoint_ns NOT IN ({marks})",
                    (thread_id, *namespaces),
                )

        return job

    # -- async reads --------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        # The event loop's own connection: a read takes well under a millisecond and never
        # waits for the writer (WAL), so handing it to a thread would cost more than it saves.
        return self.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item


def _delete_threads(threads: Sequence[str]) -> Job:
    def job(conn: sqlite3.Connection) -> None:
        for table in TABLES:
            conn.executemany(f"DELETE FROM {table} WHERE thread_id = ?", [(t,) for t in threads])

    return job


def next_version(current: str | None) -> str:
    """A channel's next version: it sorts by its counter; the random tail keeps two forks of
    one checkpoint (time travel) from naming different values alike."""
    counter = 0 if current is None else int(str(current).split(".")[0])
    return f"{counter + 1:010d}.{random.getrandbits(32):08x}"


def writes_verb(writes: Sequence[tuple[str, Any]]) -> str:
    """``INSERT OR REPLACE`` when every write is special (error, interrupt, resume: stored
    again as LangGraph's savers store them), else ``INSERT OR IGNORE``."""
    if all(channel in WRITES_IDX_MAP for channel, _ in writes):
        return "INSERT OR REPLACE"
    return "INSERT OR IGNORE"


def pack_writes(writes: Sequence[tuple[str, Any]]) -> dict[int, list[tuple[int, str, Any]]]:
    """A task's writes by row: slot 0 holds its ordinary writes, each special write (its
    negative index from WRITES_IDX_MAP) a slot of its own. A task's writes arrive in one
    call, and a call again with the same writes is ignored (replaced, when all are special)
    as a row."""
    slots: dict[int, list[tuple[int, str, Any]]] = {}
    for idx, (channel, value) in enumerate(writes):
        special = WRITES_IDX_MAP.get(channel)
        key = 0 if special is None else special
        slots.setdefault(key, []).append((WRITES_IDX_MAP.get(channel, idx), channel, value))
    return slots


def pending_writes(
    rows: Sequence[tuple[str, str, Sequence[tuple[int, str, Any]]]],
) -> list[tuple[str, str, Any]]:
    """A checkpoint's pending writes from its rows (task id, task path, unpacked slot), in
    the order LangGraph's savers return them."""
    writes = [
        (task_path, task_id, idx, channel, value)
        for task_id, task_path, packed in rows
        for idx, channel, value in packed
    ]
    writes.sort(key=lambda w: writes_sort_key(w[0], w[1], w[2]))
    return [(task_id, channel, value) for _, task_id, _, channel, value in writes]


def checkpoint_config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


class SagaGroupCommitSqliteSaver(Stamping, GroupCommitSqliteSaver):
    """:class:`GroupCommitSqliteSaver` that stamps each checkpoint's metadata with its saga's
    summary (:mod:`sagagraph.checkpoints.savers`), as every saver sagagraph opens does."""
