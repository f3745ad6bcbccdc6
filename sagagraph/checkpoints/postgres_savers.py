"""The sync PostgreSQL saver, and the rows both PostgreSQL savers write (the async one is
:mod:`sagagraph.checkpoints.postgres_group_commit`): task writes commit without waiting for
the WAL flush, checkpoints wait for one flush each.

Why that is safe: :mod:`sagagraph.checkpoints.savers`. A module of its own, since PostgreSQL
is an extra (``pip install 'sagagraph[postgres]'``).

LangGraph's ``PostgresSaver`` sends a checkpoint's blobs and its row in one pipeline, but on its
autocommit connection each statement is a transaction of its own that waits for the WAL flush:
a step that changed four channels waits for five flushes, and a task's writes for one flush a
row. The sync saver here runs its connection with ``synchronous_commit = off`` (set on its first
write), so those statements commit without waiting, and ends each checkpoint's pipeline with
the checkpoint's row written by :func:`durable_row_sql`'s statement, whose own commit waits for
the flush, which makes every WAL record before it durable too (the WAL is flushed in order). So
``put`` returns once its checkpoint is on disk, as before, after one flush instead of one a
statement, and neither the checkpoint nor a task's writes need a statement of their own around
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from psycopg.types.json import Jsonb

from sagagraph.checkpoints.saga_metadata import stamped_text
from sagagraph.checkpoints.savers import writes_conflict

_NO_FLUSH = "SET synchronous_commit = off"
DURABLE_RETURNING = " RETURNING set_config('synchronous_commit', 'on', true)"
"""What makes a statement's own commit wait for the WAL flush on a session that does not: it
turns the setting on for its own transaction only, while it runs (PostgreSQL reads the setting
at commit, and flushes then for a transaction that wrote WAL, as an upsert does)."""


def durable_row_sql(upsert: str) -> str:
    """LangGraph's checkpoint-row upsert, its commit waiting for the flush: one statement a
    checkpoint fewer than a flush statement after it."""
    return upsert.strip().removesuffix(";") + DURABLE_RETURNING


NO_FLUSH_IN_TRANSACTION = "SET LOCAL synchronous_commit = off"
"""Inside a transaction: its commit does not wait for the WAL flush (that commit only, so a
pooled connection goes back as it came)."""


def _already_json(text: str) -> str:
    """psycopg's ``dumps`` for a value that is JSON text already (the stamped metadata)."""
    return text


Row = tuple[Any, ...]
Statements = list[tuple[str, list[Row]]]
"""Statements, each with the rows of its ``executemany``."""


def checkpoint_rows(
    saver: PostgresSaver | AsyncPostgresSaver,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> tuple[Statements, RunnableConfig]:
    """The statements that store a checkpoint (its changed blobs, then its row, the metadata
    stamped), as LangGraph's ``put`` builds them, and the config that names it."""
    configurable = config["configurable"]
    thread_id = configurable["thread_id"]
    checkpoint_ns = configurable["checkpoint_ns"]
    # Channel values as LangGraph's put splits them: primitives inline in the checkpoint row,
    # the rest in the blobs table.
    copy = checkpoint.copy()
    values = copy["channel_values"] = copy["channel_values"].copy()
    blob_values: dict[str, Any] = {}
    for key, value in checkpoint["channel_values"].items():
        if isinstance(value, _DeltaSnapshot):
            blob_values[key] = values.pop(key)
            values[key] = True
        elif value is not None and not isinstance(value, (str, int, float, bool)):
            blob_values[key] = values.pop(key)
    statements: Statements = []
    blob_versions = {k: v for k, v in new_versions.items() if k in blob_values}
    if blob_versions:
        blobs = saver._dump_blobs(thread_id, checkpoint_ns, blob_values, blob_versions)
        statements.append((saver.UPSERT_CHECKPOINT_BLOBS_SQL, list(blobs)))
    # The final values as JSON text: jsonb would reorder their objects' keys.
    metadata_text = stamped_text(
        checkpoint, get_serializable_checkpoint_metadata(config, metadata), final_as_text=True
    )
    row = (
        thread_id,
        checkpoint_ns,
        checkpoint["id"],
        configurable.get("checkpoint_id"),
        Jsonb(copy),
        Jsonb(metadata_text, dumps=_already_json),
    )
    statements.append((durable_row_sql(saver.UPSERT_CHECKPOINTS_SQL), [row]))
    named: RunnableConfig = {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint["id"],
        }
    }
    return statements, named


def write_rows(
    saver: PostgresSaver | AsyncPostgresSaver,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> tuple[str, list[tuple[Any, ...]]]:
    """The statement and parameters that store a task's writes, as LangGraph's saver builds them."""
    query = (
        saver.UPSERT_CHECKPOINT_WRITES_SQL
        if writes_conflict(writes) == "REPLACE"
        else saver.INSERT_CHECKPOINT_WRITES_SQL
    )
    configurable = config["configurable"]
    params = saver._dump_writes(
        configurable["thread_id"],
        configurable["checkpoint_ns"],
        configurable["checkpoint_id"],
        task_id,
        task_path,
        writes,
    )
    return query, params


class SagaPostgresSaver(PostgresSaver):
    """``PostgresSaver`` whose statements commit without waiting for the WAL flush, except one
    at the end of each checkpoint (module docstring)."""

    _no_flush_session = False
    """True once the connection runs with ``synchronous_commit = off`` (the first write)."""

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Save a checkpoint: its blobs, then its row, whose commit waits for the flush, in one
        pipeline (one round trip); it returns once the checkpoint is flushed."""
        statements, named = checkpoint_rows(self, config, checkpoint, metadata, new_versions)
        with self._cursor(pipeline=True) as cur:
            self._stop_waiting_for_flushes(cur)
            for sql, rows in statements:
                cur.executemany(sql, rows)
        return named

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes: committed when it returns, not waited for on the disk (the
        next checkpoint's flush takes them along)."""
        if not writes:
            return
        query, params = write_rows(self, config, writes, task_id, task_path)
        with self._cursor(pipeline=True) as cur:
            self._stop_waiting_for_flushes(cur)
            cur.executemany(query, params)

    def _stop_waiting_for_flushes(self, cur: Any) -> None:
        # Called under the saver's lock (``_cursor``), so once per connection.
        if not self._no_flush_session:
            cur.execute(_NO_FLUSH)
            self._no_flush_session = True
