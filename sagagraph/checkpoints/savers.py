"""LangGraph's savers, each checkpoint's metadata stamped with its saga's summary, and the
saver a saga lives in, lent to its steps while a process holds the saga's lease.

A saver here adds one thing to LangGraph's: before LangGraph's own ``put`` / ``aput`` stores a
checkpoint, its metadata gets the saga's summary
(:func:`sagagraph.checkpoints.saga_index.stamp`), which ``list`` and ``recover`` read
(:mod:`sagagraph.checkpoints.saga_index`). The sync SQLite and PostgreSQL savers also keep
the fields of the checkpoint that ends a saga in a table of sagagraph's own
(:mod:`sagagraph.checkpoints.finished`), so reading a finished saga needs no LangGraph.
Everything else, LangGraph's tables and their SQL included, is LangGraph's.
The PostgreSQL savers, an extra, are in :mod:`sagagraph.checkpoints.postgres_savers`.

LangGraph gives a node no public handle on the saver its graph runs with. A step that reads
its own saga's history (an agent step's rollback reads its agent's checkpoints) asks
:func:`lent_checkpointer`; the saga's lease (:func:`sagagraph.graph.leases.saga_lease`), which
every run, resume, resolve and rollback holds, lends it (:func:`lending`) for as long as it is
held. It is a context variable, so it follows LangGraph's tasks into their threads and asyncio
tasks, and two sagas run side by side each see their own.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
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

from sagagraph.checkpoints.finished import CREATE, TABLE, finished_record, record_finished
from sagagraph.checkpoints.saga_index import stamp


class Stamping(BaseCheckpointSaver[str]):
    """Put before a saver's class: its ``put`` and ``aput`` stamp the metadata, then store."""

    lease_file: str | None = None
    """A SQLite saver's: the file whose byte locks are its sagas' leases
    (:mod:`sagagraph.graph.leases`), set by the factory that opened it."""
    keeps_finished: bool = False
    """True for a saver that keeps finished sagas' fields (:meth:`keep_finished`)."""

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saved = super().put(config, checkpoint, stamp(checkpoint, metadata), new_versions)
        record = finished_record(config, checkpoint) if self.keeps_finished else None
        if record is not None:
            self.keep_finished(record)
        return saved

    def keep_finished(self, record: tuple[str, str, str]) -> None:
        """Keep a finished saga's fields (:mod:`sagagraph.checkpoints.finished`); a saver
        with no table for them keeps none (its finished sagas are read through it)."""

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)
        self.forget_finished(str(thread_id))

    def forget_finished(self, saga_id: str) -> None:
        """Drop a deleted saga's kept fields (a saver with no table for them has none)."""

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await super().aput(config, checkpoint, stamp(checkpoint, metadata), new_versions)


class SagaSqliteSaver(Stamping, SqliteSaver):
    """``SqliteSaver`` that stamps the saga's summary into each checkpoint's metadata and
    keeps each finished saga's fields."""

    keeps_finished = True

    def setup(self) -> None:
        if self.is_setup:
            return
        super().setup()
        try:
            self.conn.execute(CREATE)
        except sqlite3.OperationalError as error:
            if "readonly" not in str(error):  # a read-only store is still read through the saver
                raise

    def keep_finished(self, record: tuple[str, str, str]) -> None:
        # A record that cannot be written (a full disk) only leaves the saga to the full read.
        with suppress(sqlite3.Error), self.cursor() as cur:
            record_finished(cur, record)

    def forget_finished(self, saga_id: str) -> None:
        with suppress(sqlite3.Error), self.cursor() as cur:
            cur.execute(f"DELETE FROM {TABLE} WHERE saga_id = ?", (saga_id,))


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
