"""LangGraph's savers, each checkpoint's metadata stamped with its saga's summary.

A saver here adds one thing to LangGraph's: before LangGraph's own ``put`` / ``aput`` stores a
checkpoint, its metadata gets the saga's summary
(:func:`sagagraph.checkpoints.saga_metadata.stamp`), which ``list`` and ``recover`` read
(:mod:`sagagraph.checkpoints.saga_index`). Everything else, the SQL included, is LangGraph's.
The PostgreSQL savers, an extra, are in :mod:`sagagraph.checkpoints.postgres_savers`.
"""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from sagagraph.checkpoints.saga_metadata import stamp


class Stamping(BaseCheckpointSaver[str]):
    """Put before a saver's class: its ``put`` and ``aput`` stamp the metadata, then store."""

    lease_file: str | None = None
    """A SQLite saver's: the file whose byte locks are its sagas' leases
    (:mod:`sagagraph.graph.leases`), set by the factory that opened it."""

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return super().put(config, checkpoint, stamp(checkpoint, metadata), new_versions)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await super().aput(config, checkpoint, stamp(checkpoint, metadata), new_versions)


class SagaSqliteSaver(Stamping, SqliteSaver):
    """``SqliteSaver`` that stamps the saga's summary into each checkpoint's metadata."""


class SagaAsyncSqliteSaver(Stamping, AsyncSqliteSaver):
    """``AsyncSqliteSaver`` that stamps the saga's summary into each checkpoint's metadata."""
