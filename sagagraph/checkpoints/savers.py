"""LangGraph's SQLite savers, each checkpoint's metadata stamped with its saga's summary.

The savers add one thing to LangGraph's ``SqliteSaver`` and ``AsyncSqliteSaver``: before
LangGraph's own ``put`` / ``aput`` stores a checkpoint, its metadata gets the saga's summary
(:func:`sagagraph.checkpoints.saga_metadata.stamp`), which ``list`` and ``recover`` read
(:mod:`sagagraph.checkpoints.saga_index`). Everything else, the SQL included, is LangGraph's.
"""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from sagagraph.checkpoints.saga_metadata import stamp


class SagaSqliteSaver(SqliteSaver):
    """``SqliteSaver`` that stamps the saga's summary into each checkpoint's metadata."""

    lease_file: str | None = None
    """The file whose byte locks are its sagas' leases (:mod:`sagagraph.graph.leases`), set by
    the factory that opened it."""

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return super().put(config, checkpoint, stamp(checkpoint, metadata), new_versions)


class SagaAsyncSqliteSaver(AsyncSqliteSaver):
    """``AsyncSqliteSaver`` that stamps the saga's summary into each checkpoint's metadata."""

    lease_file: str | None = None
    """As :attr:`SagaSqliteSaver.lease_file` (an async connection cannot be asked its file)."""

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await super().aput(config, checkpoint, stamp(checkpoint, metadata), new_versions)
