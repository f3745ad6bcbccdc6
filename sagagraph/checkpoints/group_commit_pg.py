"""A PostgreSQL checkpointer made for many sagas at once: group commit, reads from a pool.

:class:`GroupCommitPostgresSaver` is the PostgreSQL sibling of
:class:`~sagagraph.checkpoints.group_commit.GroupCommitSqliteSaver`, written the same way on
``BaseCheckpointSaver``'s public interface with its own SQL on its own tables
(:data:`TABLES`, never LangGraph's ``checkpoints``, ``checkpoint_blobs`` and
``checkpoint_writes``):

- **Group commit.** Every write (``put``, ``put_writes``, ``delete_thread``, ``prune``) is a
  job handed to one writer thread with a connection of its own. While one transaction
  commits, the jobs that arrive gather; the next transaction carries them all, its
  statements sent in one pipeline (no round trip per statement). A call returns once the
  transaction holding its job has committed, which PostgreSQL (``synchronous_commit=on``,
  its default) acknowledges after flushing its WAL: concurrent sagas share one flush and
  one round trip instead of paying one each. A batch that fails is run again job by job, each
  in a transaction of its own, so a job that fails raises in its caller only.
- **Reads beside writes.** A read takes a connection of a pool and reads in one statement
  (the checkpoint, its values and its writes together, one snapshot); it never waits for
  the writer, and reads run side by side up to the pool's size. The async methods run the
  same reads on a thread of the saver's own, one per pooled connection, so the event loop
  never blocks on the network.
- **Values stored once**, keyed by channel and version (``ON CONFLICT DO NOTHING``), and a
  task's writes in one row, as the SQLite saver stores them
  (:func:`~sagagraph.checkpoints.group_commit.pack_writes`).
- **Leases.** A third connection, :attr:`lease_connection`, holds the session advisory locks
  of :mod:`sagagraph.graph.leases`: a saga run on this saver, sync or async, is refused to
  every other process, and a killed process's lock goes with its connection.

Open it with ``open_checkpointer("postgresql+group://...")`` (or the async factory); call
:meth:`close` when done.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing, contextmanager, suppress
from typing import Any, cast

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from sagagraph.checkpoints.group_commit import (
    BatchedWrites,
    checkpoint_config,
    pack_writes,
    pending_writes,
    writes_verb,
)
from sagagraph.checkpoints.savers import Stamping

CHECKPOINTS = "sg_checkpoints"
BLOBS = "sg_blobs"
WRITES = "sg_writes"
TABLES = (CHECKPOINTS, BLOBS, WRITES)
"""The saver's own tables (the names of the SQLite group-commit saver's)."""
POOL_SIZE = 16
"""Connections the read pool keeps open at most (and threads for the async reads)."""

SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {CHECKPOINTS} (thread_id TEXT NOT NULL, checkpoint_ns TEXT "
    "NOT NULL DEFAULT '', checkpoint_id TEXT NOT NULL, parent_checkpoint_id TEXT, type TEXT, "
    "checkpoint BYTEA, versions JSONB NOT NULL, metadata JSONB NOT NULL DEFAULT '{}', "
    "PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id))",
    f"CREATE TABLE IF NOT EXISTS {BLOBS} (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL "
    "DEFAULT '', channel TEXT NOT NULL, version TEXT NOT NULL, type TEXT NOT NULL, blob BYTEA, "
    "PRIMARY KEY (thread_id, checkpoint_ns, channel, version))",
    f"CREATE TABLE IF NOT EXISTS {WRITES} (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL "
    "DEFAULT '', checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, slot INTEGER NOT NULL, "
    "task_path TEXT NOT NULL DEFAULT '', type TEXT NOT NULL, value BYTEA NOT NULL, "
    "PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, slot))",
)
"""The tables, created when missing (:meth:`GroupCommitPostgresSaver.setup`)."""

_SELECT = (
    "SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, c.type, "
    "c.checkpoint, c.metadata, b.channels, b.types, b.blobs, w.tasks, w.paths, w.types, w.vals "
    f"FROM {CHECKPOINTS} AS c "
    "LEFT JOIN LATERAL (SELECT array_agg(x.channel) AS channels, array_agg(x.type) AS types, "
    f"array_agg(x.blob) AS blobs FROM jsonb_each_text(c.versions) AS v JOIN {BLOBS} AS x "
    "ON x.thread_id = c.thread_id AND x.checkpoint_ns = c.checkpoint_ns "
    "AND x.channel = v.key AND x.version = v.value) AS b ON true "
    "LEFT JOIN LATERAL (SELECT array_agg(y.task_id) AS tasks, array_agg(y.task_path) AS paths, "
    f"array_agg(y.type) AS types, array_agg(y.value) AS vals FROM {WRITES} AS y "
    "WHERE y.thread_id = c.thread_id AND y.checkpoint_ns = c.checkpoint_ns "
    "AND y.checkpoint_id = c.checkpoint_id) AS w ON true"
)
"""A checkpoint with its values and its pending writes, in one statement (one snapshot)."""

_PUT_BLOB = (
    f"INSERT INTO {BLOBS} (thread_id, checkpoint_ns, channel, version, type, blob) "
    "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
)
_PUT_CHECKPOINT = (
    f"INSERT INTO {CHECKPOINTS} (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
    "type, checkpoint, versions, metadata) VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb) "
    "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET "
    "parent_checkpoint_id = EXCLUDED.parent_checkpoint_id, type = EXCLUDED.type, "
    "checkpoint = EXCLUDED.checkpoint, versions = EXCLUDED.versions, "
    "metadata = EXCLUDED.metadata"
)
_PUT_WRITES = {
    "INSERT OR IGNORE": f"INSERT INTO {WRITES} VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT DO NOTHING",
    "INSERT OR REPLACE": f"INSERT INTO {WRITES} VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, slot) DO UPDATE SET "
    "task_path = EXCLUDED.task_path, type = EXCLUDED.type, value = EXCLUDED.value",
}
_PRUNE = (
    # Every checkpoint of the threads but each namespace's latest...
    f"DELETE FROM {CHECKPOINTS} AS c USING (SELECT thread_id, checkpoint_ns, "
    f"max(checkpoint_id) AS keep FROM {CHECKPOINTS} WHERE thread_id = ANY(%s) "
    "GROUP BY thread_id, checkpoint_ns) AS k WHERE c.thread_id = k.thread_id "
    "AND c.checkpoint_ns = k.checkpoint_ns AND c.checkpoint_id <> k.keep",
    # ...the writes of checkpoints no longer there...
    f"DELETE FROM {WRITES} AS y WHERE y.thread_id = ANY(%s) AND NOT EXISTS (SELECT 1 FROM "
    f"{CHECKPOINTS} AS c WHERE c.thread_id = y.thread_id AND c.checkpoint_ns = y.checkpoint_ns "
    "AND c.checkpoint_id = y.checkpoint_id)",
    # ...and the values no kept checkpoint refers to.
    f"DELETE FROM {BLOBS} AS x WHERE x.thread_id = ANY(%s) AND NOT EXISTS (SELECT 1 FROM "
    f"{CHECKPOINTS} AS c, jsonb_each_text(c.versions) AS v WHERE c.thread_id = x.thread_id "
    "AND c.checkpoint_ns = x.checkpoint_ns AND v.key = x.channel AND v.value = x.version)",
)

Job = Callable[[psycopg.Cursor[Any]], None]
"""A write: SQL on the writer's cursor, inside the batch's transaction."""
Waiter = Future[None] | asyncio.Future[None]
"""Who hears a write's outcome: a sync caller's thread future, an async caller's future."""
Outcome = tuple[Waiter, BaseException | None]
"""A write's waiter and its error (None: committed)."""


def _settle(outcomes: list[Outcome]) -> None:
    """Tell each waiter its outcome: thread futures at once, asyncio futures on their loop,
    all of one loop in one call."""
    by_loop: dict[asyncio.AbstractEventLoop, list[Outcome]] = {}
    for waiter, error in outcomes:
        if isinstance(waiter, asyncio.Future):
            by_loop.setdefault(waiter.get_loop(), []).append((waiter, error))
        elif error is None:
            waiter.set_result(None)
        else:
            waiter.set_exception(error)
    for loop, settled in by_loop.items():
        with suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
            loop.call_soon_threadsafe(_settle_on_loop, settled)


def _settle_on_loop(settled: list[Outcome]) -> None:
    for waiter, error in settled:
        if waiter.done():  # its caller was cancelled; the write committed all the same
            continue
        if error is None:
            waiter.set_result(None)
        else:
            waiter.set_exception(error)


class GroupCommitPostgresSaver(BatchedWrites):
    """A PostgreSQL checkpointer whose concurrent writes share commits (module docstring)."""

    checkpoints_table = CHECKPOINTS
    """The table :mod:`sagagraph.checkpoints.saga_index` reads the summaries from."""
    sql_dialect = "postgres"
    """How :mod:`sagagraph.checkpoints.saga_index` queries :attr:`checkpoints_table`."""

    def __init__(
        self,
        conninfo: str,
        *,
        pool_size: int = POOL_SIZE,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self.conninfo = conninfo
        """The database (a URL or ``key=value`` string), as psycopg takes it."""
        self.lease_connection = psycopg.Connection.connect(
            conninfo, autocommit=True, row_factory=dict_row
        )
        """The connection of the sagas' advisory locks (:mod:`sagagraph.graph.leases`), used
        under :attr:`lease_lock`; it also creates the tables (:meth:`setup`)."""
        self.lease_lock = threading.Lock()
        self._writer_conn: psycopg.Connection[Any] | None = None
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            conninfo, min_size=1, max_size=pool_size, kwargs={"autocommit": True}, open=False
        )
        self._reads = ThreadPoolExecutor(pool_size, thread_name_prefix="sagagraph-pg-read")
        self._jobs: list[tuple[Job, Waiter]] = []
        self._wake = threading.Condition()
        self._closed = False
        self._pid = os.getpid()
        self.commits = 0
        """Transactions committed so far (each carries one or more writes)."""
        self._writer = threading.Thread(
            target=self._write_batches, name="sagagraph-pg-group-commit", daemon=True
        )
        self._started = False

    def setup(self) -> None:
        """Create the tables when missing (the caller keeps concurrent set-ups apart), then
        open the pool and start the writer."""
        with self.lease_lock:
            for statement in SCHEMA:
                self.lease_connection.execute(statement)
        if not self._started:
            self._pool.open(wait=True, timeout=30.0)
            self._writer_conn = psycopg.Connection.connect(self.conninfo)
            self._writer.start()
            self._started = True

    # -- the writer ---------------------------------------------------------------------

    def _submit(self, job: Job, waiter: Waiter | None = None) -> Waiter:
        """Queue ``job`` for the next batch; ``waiter`` (a new thread future by default)
        hears its outcome once the batch has committed."""
        done: Waiter = Future() if waiter is None else waiter
        if os.getpid() != self._pid:  # a forked child has no writer thread: it would hang
            raise RuntimeError(
                f"checkpointer: opened in process {self._pid}, used in a fork; "
                "open it in the process that writes"
            )
        with self._wake:
            if self._closed or not self._started:
                raise RuntimeError("checkpointer: closed, or not set up")
            self._jobs.append((job, done))
            self._wake.notify()
        return done

    def _write_batches(self) -> None:
        while True:
            with self._wake:
                while not self._jobs and not self._closed:
                    self._wake.wait()
                if not self._jobs:
                    return
                batch, self._jobs = self._jobs, []
            _settle(self._commit(batch))

    def _connection(self) -> psycopg.Connection[Any]:
        """The writer's connection, opened again when the last one broke."""
        conn = self._writer_conn
        if conn is None or conn.closed or conn.broken:
            if conn is not None:
                conn.close()
            conn = self._writer_conn = psycopg.Connection.connect(self.conninfo)
        return conn

    def _commit(self, batch: list[tuple[Job, Waiter]]) -> list[Outcome]:
        try:
            conn = self._connection()
            with conn.pipeline(), conn.transaction(), conn.cursor() as cur:
                for job, _ in batch:
                    job(cur)
        except Exception as error:
            if len(batch) == 1 or self._writer_conn is None or self._writer_conn.broken:
                return [(done, error) for _, done in batch]  # not committed: all hear why
            return self._one_by_one(batch)
        self.commits += 1
        return [(done, None) for _, done in batch]

    def _one_by_one(self, batch: list[tuple[Job, Waiter]]) -> list[Outcome]:
        """Each job of a batch that failed in a transaction of its own: the failing one
        raises in its caller, the others are committed."""
        outcomes: list[Outcome] = []
        for job, done in batch:
            try:
                conn = self._connection()
                with conn.transaction(), conn.cursor() as cur:
                    job(cur)
            except Exception as error:
                outcomes.append((done, error))
            else:
                self.commits += 1
                outcomes.append((done, None))
        return outcomes

    def _write(self, job: Job) -> None:
        done = self._submit(job)
        assert isinstance(done, Future)
        done.result()

    async def _awrite(self, job: Job) -> None:
        # An asyncio future, settled on its loop with the rest of its batch: one wake-up of
        # the loop a batch, not one a write.
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._submit(job, waiter)
        await waiter

    def close(self) -> None:
        """Commit what is queued, stop the writer, close every connection."""
        with self._wake:
            self._closed = True
            self._wake.notify()
        if self._started:
            self._writer.join()
        if self._writer_conn is not None:
            self._writer_conn.close()
        self._reads.shutdown(wait=True)
        self._pool.close()
        self.lease_connection.close()

    # -- reads --------------------------------------------------------------------------

    @contextmanager
    def read_cursor(self) -> Iterator[psycopg.Cursor[Any]]:
        """A cursor on a pooled connection, for one query (the saga index's)."""
        with self._pool.connection() as conn, closing(conn.cursor()) as cur:
            yield cur

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = config["configurable"]
        params: list[Any] = [
            str(configurable["thread_id"]),
            str(configurable.get("checkpoint_ns", "")),
        ]
        where = "c.thread_id = %s AND c.checkpoint_ns = %s"
        if checkpoint_id := get_checkpoint_id(config):
            where += " AND c.checkpoint_id = %s"
            params.append(checkpoint_id)
        sql = f"{_SELECT} WHERE {where} ORDER BY c.checkpoint_id DESC LIMIT 1"
        with self.read_cursor() as cur:
            row = cur.execute(sql, params).fetchone()
        return None if row is None else self._tuple(row)

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
            wheres.append("c.thread_id = %s")
            params.append(str(configurable["thread_id"]))
            ns = configurable.get("checkpoint_ns")
            if ns is not None:
                wheres.append("c.checkpoint_ns = %s")
                params.append(str(ns))
            if checkpoint_id := get_checkpoint_id(config):
                wheres.append("c.checkpoint_id = %s")
                params.append(checkpoint_id)
        if filter:
            wheres.append("c.metadata @> %s::jsonb")
            params.append(_json(filter))
        if before is not None:
            wheres.append("c.checkpoint_id < %s")
            params.append(get_checkpoint_id(before))
        where = f" WHERE {' AND '.join(wheres)}" if wheres else ""
        sql = f"{_SELECT}{where} ORDER BY c.checkpoint_id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self.read_cursor() as cur:  # read whole, so no connection is held between items
            rows = cur.execute(sql, params).fetchall()
        yield from (self._tuple(row) for row in rows)

    def _tuple(self, row: Sequence[Any]) -> CheckpointTuple:
        thread_id, ns, checkpoint_id, parent_id, kind, blob, metadata = row[:7]
        channels, kinds, blobs, tasks, paths, write_kinds, packed = row[7:]
        checkpoint: Checkpoint = self.serde.loads_typed((kind, bytes(blob)))
        values = {
            channel: self.serde.loads_typed((value_kind, bytes(value)))
            for channel, value_kind, value in zip(
                channels or (), kinds or (), blobs or (), strict=True
            )
            if value_kind != "empty"
        }
        stored = [
            (task_id, task_path, self.serde.loads_typed((value_kind, bytes(value))))
            for task_id, task_path, value_kind, value in zip(
                tasks or (), paths or (), write_kinds or (), packed or (), strict=True
            )
        ]
        return CheckpointTuple(
            config=checkpoint_config(thread_id, ns, checkpoint_id),
            checkpoint={**checkpoint, "channel_values": values},
            metadata=cast(CheckpointMetadata, metadata or {}),
            parent_config=checkpoint_config(thread_id, ns, parent_id) if parent_id else None,
            pending_writes=pending_writes(stored),
        )

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._reads, self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        def read() -> list[CheckpointTuple]:
            return list(self.list(config, filter=filter, before=before, limit=limit))

        for item in await asyncio.get_running_loop().run_in_executor(self._reads, read):
            yield item

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
        values = checkpoint["channel_values"]
        blobs = [
            (thread_id, ns, channel, str(version), *self.serde.dumps_typed(values[channel]))
            for channel, version in new_versions.items()
            if channel in values
        ]
        bare = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        kind, blob = self.serde.dumps_typed(bare)
        versions = {str(c): str(v) for c, v in (checkpoint.get("channel_versions") or {}).items()}
        row = (
            thread_id,
            ns,
            checkpoint["id"],
            configurable.get("checkpoint_id"),
            kind,
            blob,
            json.dumps(versions),
            _json(get_checkpoint_metadata(config, metadata)),
        )

        def job(cur: psycopg.Cursor[Any]) -> None:
            if blobs:
                cur.executemany(_PUT_BLOB, blobs)
            cur.execute(_PUT_CHECKPOINT, row)

        return job, checkpoint_config(thread_id, ns, checkpoint["id"])

    def _writes_job(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> Job:
        configurable = config["configurable"]
        key = (
            str(configurable["thread_id"]),
            str(configurable.get("checkpoint_ns", "")),
            str(configurable["checkpoint_id"]),
            task_id,
        )
        sql = _PUT_WRITES[writes_verb(writes)]
        rows = [
            (*key, slot, task_path, *self.serde.dumps_typed(packed))
            for slot, packed in pack_writes(writes).items()
        ]

        def job(cur: psycopg.Cursor[Any]) -> None:
            cur.executemany(sql, rows)

        return job

    def _delete_job(self, threads: Sequence[str]) -> Job:
        return _delete_threads(threads)

    def _keep_latest_job(self, threads: Sequence[str]) -> Job:
        def job(cur: psycopg.Cursor[Any]) -> None:
            for statement in _PRUNE:
                cur.execute(statement, (list(threads),))

        return job


def _json(value: Any) -> str:
    """``value`` as JSON that PostgreSQL's ``jsonb`` takes: no NUL, no lone surrogate."""
    text = json.dumps(value, ensure_ascii=False).replace("\\u0000", "")
    return text.encode("utf-8", "ignore").decode("utf-8")


def _delete_threads(threads: Sequence[str]) -> Job:
    def job(cur: psycopg.Cursor[Any]) -> None:
        for table in TABLES:
            cur.execute(f"DELETE FROM {table} WHERE thread_id = ANY(%s)", (list(threads),))

    return job


class SagaGroupCommitPostgresSaver(Stamping, GroupCommitPostgresSaver):
    """:class:`GroupCommitPostgresSaver` that stamps each checkpoint's metadata with its
    saga's summary (:mod:`sagagraph.checkpoints.savers`), as every saver sagagraph opens does."""
