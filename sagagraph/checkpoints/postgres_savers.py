"""LangGraph's PostgreSQL savers, each checkpoint's metadata stamped with its saga's summary.

As :mod:`sagagraph.checkpoints.savers` for SQLite: the savers add the stamp
(:func:`sagagraph.checkpoints.saga_metadata.stamp`) and hand the checkpoint to LangGraph's own
``put`` / ``aput``. A module of its own, since PostgreSQL is an extra
(``pip install 'sagagraph[postgres]'``).
"""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from sagagraph.checkpoints.saga_metadata import stamp


class SagaPostgresSaver(PostgresSaver):
    """``PostgresSaver`` that stamps the saga's summary into each checkpoint's metadata."""

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return super().put(config, checkpoint, stamp(checkpoint, metadata), new_versions)


class SagaAsyncPostgresSaver(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` that stamps the saga's summary into each checkpoint's metadata."""

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await super().aput(config, checkpoint, stamp(checkpoint, metadata), new_versions)
