"""The PostgreSQL savers: task writes commit without waiting for the WAL flush.

Why that is safe: :mod:`sagagraph.checkpoints.savers`. A module of its own, since PostgreSQL
is an extra (``pip install 'sagagraph[postgres]'``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from sagagraph.checkpoints.saga_metadata import stamp
from sagagraph.checkpoints.savers import writes_conflict

_NO_FLUSH = "SET LOCAL synchronous_commit = off"


class SagaPostgresSaver(PostgresSaver):
    """``PostgresSaver`` whose task writes commit without waiting for the WAL flush."""

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
        query = (
            self.UPSERT_CHECKPOINT_WRITES_SQL
            if writes_conflict(writes) == "REPLACE"
            else self.INSERT_CHECKPOINT_WRITES_SQL
        )
        configurable = config["configurable"]
        params = self._dump_writes(
            configurable["thread_id"],
            configurable["checkpoint_ns"],
            configurable["checkpoint_id"],
            task_id,
            task_path,
            writes,
        )
        # One round trip: the transaction's statements go out in one pipeline.
        with self._cursor(pipeline=True) as cur, cur.connection.transaction():
            cur.execute(_NO_FLUSH)
            cur.executemany(query, params)


class SagaAsyncPostgresSaver(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` whose task writes commit without waiting for the WAL flush."""

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
        query = (
            self.UPSERT_CHECKPOINT_WRITES_SQL
            if writes_conflict(writes) == "REPLACE"
            else self.INSERT_CHECKPOINT_WRITES_SQL
        )
        configurable = config["configurable"]
        params = self._dump_writes(
            configurable["thread_id"],
            configurable["checkpoint_ns"],
            configurable["checkpoint_id"],
            task_id,
            task_path,
            writes,
        )
        async with self._cursor(pipeline=True) as cur, cur.connection.transaction():
            await cur.execute(_NO_FLUSH)
            await cur.executemany(query, params)
