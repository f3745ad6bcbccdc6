"""The journal of a stepwise rollback: compensations recorded as they end, inside one superstep.

A stepwise rollback runs in one superstep (:mod:`sagagraph.graph.compensation`), as a plain
graph's single compensation node does. So that a crash mid-rollback does not undo again what
was already undone, the node journals each committed step's compensation before it starts the
next one: a task write (``put_writes``, synchronous) on the checkpoint the superstep runs from,
under an id made from the ``compensate`` task's own, holding the entries not journaled yet.
When the superstep runs again after a crash (same checkpoint, same task id), the node reads the
journal back and replays its entries instead of running them.

LangGraph keeps a task write whose task id matches no task of the superstep with its
checkpoint and applies it to nothing: the journal never reaches the state, and it goes with its
checkpoint (``delete_thread``, pruning). A graph compiled without a checkpointer has no journal
(nothing survives a crash anyway).

A run that started the saga (``run_saga``) says so in its config (``NEW_RUN``): every
checkpoint of such a run is new, so no journal can exist yet and none is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph._internal._constants import CONFIG_KEY_CHECKPOINTER, CONFIG_KEY_RUNTIME
from langgraph.checkpoint.base import BaseCheckpointSaver

from sagagraph.graph.runner import NEW_RUN
from sagagraph.saga.view import Event

CHANNEL = "sagagraph:rollback_journal"
"""The channel of journal writes (no state channel has this name)."""


class JournalEntry(TypedDict):
    """One compensation that ended well: its step and its events."""

    step: str
    events: list[Event]


@dataclass(frozen=True)
class RollbackJournal:
    """Where one ``compensate`` superstep journals, and whether an earlier attempt may have."""

    checkpointer: BaseCheckpointSaver[Any]
    config: RunnableConfig
    """The checkpoint the superstep runs from, as ``put_writes`` takes it."""
    task_id: str
    new_run: bool

    def _prefix(self) -> str:
        return f"{self.task_id}:journal:"

    def _entries(self, writes: Sequence[tuple[str, str, Any]] | None) -> list[JournalEntry]:
        prefix = self._prefix()
        mine = [
            (int(task_id[len(prefix) :]), value)
            for task_id, channel, value in writes or []
            if channel == CHANNEL and task_id.startswith(prefix)
        ]
        return [entry for _, batch in sorted(mine) for entry in batch]

    def read(self) -> list[JournalEntry]:
        """The entries an earlier attempt of this superstep journaled, in order."""
        if self.new_run:
            return []
        saved = self.checkpointer.get_tuple(self.config)
        return self._entries(saved.pending_writes if saved else None)

    async def aread(self) -> list[JournalEntry]:
        if self.new_run:
            return []
        saved = await self.checkpointer.aget_tuple(self.config)
        return self._entries(saved.pending_writes if saved else None)

    def _write(self, at: int, entries: list[JournalEntry]) -> tuple[list[tuple[str, Any]], str]:
        return [(CHANNEL, entries)], f"{self._prefix()}{at}"

    def append(self, at: int, entries: list[JournalEntry]) -> None:
        """Journal ``entries``, the ones after the first ``at`` entries, before going on."""
        writes, task_id = self._write(at, entries)
        self.checkpointer.put_writes(self.config, writes, task_id)

    async def aappend(self, at: int, entries: list[JournalEntry]) -> None:
        writes, task_id = self._write(at, entries)
        await self.checkpointer.aput_writes(self.config, writes, task_id)


def rollback_journal(config: RunnableConfig) -> RollbackJournal | None:
    """The journal of the ``compensate`` superstep running under ``config`` (a node's config),
    or None without a checkpointer."""
    configurable = config.get("configurable") or {}
    checkpointer = configurable.get(CONFIG_KEY_CHECKPOINTER)
    runtime = configurable.get(CONFIG_KEY_RUNTIME)
    info = getattr(runtime, "execution_info", None)
    if not isinstance(checkpointer, BaseCheckpointSaver) or info is None:
        return None
    # The task's namespace is the graph's plus "|node:task_id"; writes go under the graph's.
    graph_ns = str(info.checkpoint_ns).rpartition("|")[0]
    where: RunnableConfig = {
        "configurable": {
            "thread_id": info.thread_id,
            "checkpoint_ns": graph_ns,
            "checkpoint_id": info.checkpoint_id,
        }
    }
    return RollbackJournal(
        checkpointer=checkpointer,
        config=where,
        task_id=str(info.task_id),
        new_run=bool(configurable.get(NEW_RUN)),
    )
