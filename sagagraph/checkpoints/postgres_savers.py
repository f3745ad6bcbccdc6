"""The PostgreSQL savers: task writes commit without waiting for the WAL flush.

Why that is safe: :mod:`sagagraph.checkpoints.savers`. A module of its own, since PostgreSQL
is an extra (``pip install 'sagagraph[postgres]'``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from sagagraph.checkpoints.new_runs import refuse_used_thread
from sagagraph.checkpoints.saga_metadata import stamp
from sagagraph.checkpoints.savers import writes_conflict

_NO_FLUSH = "SET synchronous_commit = off"
_FLUSH = "SET synchronous_commit = on"
_NO_FLUSH_LOCAL = "SET LOCAL synchronous_commit = off"
"""Inside a transaction: its commit only (a pooled connection goes back as it came)."""


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
    """``PostgresSaver`` whose task writes commit without waiting for the WAL flush."""

    sagagraph_checks_new_runs = True
    """:mod:`sagagraph.checkpoints.new_runs`: a new run's read of a used thread is refused."""

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        saved = super().get_tuple(config)
        refuse_used_thread(config, saved)
        return saved

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return super().put(config, checkpoint, stamp(checkpoint, metadata), new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if not writes:
            return
        query, params = write_rows(self, config, writes, task_id, task_path)
        # One round trip: the session stops waiting for the flush, the rows go in (each its
        # own autocommitted statement, as LangGraph's saver does), and the session waits again,
        # all in one pipeline, so checkpoints keep full durability.
        try:
            with self._cursor(pipeline=True) as cur:
                cur.execute(_NO_FLUSH)
                cur.executemany(query, params)
                cur.execute(_FLUSH)
        except BaseException:
            # A failed statement aborts the rest of its pipeline, the reset included.
            with self._cursor() as cur:
                cur.execute(_FLUSH)
            raise


class SagaAsyncPostgresSaver(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` whose task writes commit without waiting for the WAL flush."""

    sagagraph_checks_new_runs = True
    """:mod:`sagagraph.checkpoints.new_runs`: a new run's read of a used thread is refused."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        saved = await super().aget_tuple(config)
        refuse_used_thread(config, saved)
        return saved

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await super().aput(config, checkpoint, stamp(checkpoint, metadata), new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if not writes:
            return
        query, params = write_rows(self, config, writes, task_id, task_path)
        async with self._cursor(pipeline=True) as cur, cur.connection.transaction():
            await cur.execute(_NO_FLUSH_LOCAL)
            await cur.executemany(query, params)
