"""LangGraph's savers, each checkpoint's metadata stamped with its saga's summary, and the
saver a saga lives in, lent to its steps while a process holds the saga's lease.

A saver here adds one thing to LangGraph's: before LangGraph's own ``put`` / ``aput`` stores a
checkpoint, its metadata gets the saga's summary
(:func:`sagagraph.checkpoints.saga_index.stamp`), which ``list`` and ``recover`` read
(:mod:`sagagraph.checkpoints.saga_index`). Everything else, the SQL included, is LangGraph's.
The PostgreSQL savers, an extra, are in :mod:`sagagraph.checkpoints.postgres_savers`.

LangGraph gives a node no public handle on the saver its graph runs with. A step that reads
its own saga's history (an agent step's rollback reads its agent's checkpoints) asks
:func:`lent_checkpointer`; the saga's lease (:func:`sagagraph.graph.leases.saga_lease`), which
every run, resume, resolve and rollback holds, lends it (:func:`lending`) for as long as it is
held. It is a context variable, so it follows LangGraph's tasks into their threads and asyncio
tasks, and two sagas run side by side each see their own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from sagagraph.checkpoints.saga_index import stamp


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


_lent: ContextVar[Mapping[str, BaseCheckpointSaver[Any]]] = ContextVar(
    "sagagraph_lent_checkpointers", default=MappingProxyType({})
)


@contextmanager
def lending(saga_id: str, checkpointer: BaseCheckpointSaver[Any]) -> Iterator[None]:
    """Lend ``checkpointer`` to the steps of ``saga_id`` that run in this context, for the block."""
    token = _lent.set({**_lent.get(), saga_id: checkpointer})
    try:
        yield
    finally:
        _lent.reset(token)


def lent_checkpointer(saga_id: str) -> BaseCheckpointSaver[Any] | None:
    """The checkpointer ``saga_id`` lives in, when this context holds its lease; else None."""
    return _lent.get().get(saga_id)
