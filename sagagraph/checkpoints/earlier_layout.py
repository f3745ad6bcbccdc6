"""Sagas stored by an earlier sagagraph, read back in today's channel layout.

Before the ``record`` channel (:mod:`sagagraph.state_layout`), a saga's checkpoints held one
channel a field: ``events``, ``results``, ``failure``... A saga graph of today has no such
channels, and LangGraph drops the values of channels a graph lacks when it loads a
checkpoint: a saga stored then, resumed now, would lose its results and its audit trail.
sagagraph's savers (SQLite, PostgreSQL, sync and async) pass every checkpoint they read
through :func:`in_current_layout`, so such a saga is listed, shown and resumed as it was
left. Nothing is written back: the next checkpoint a run saves is in today's layout.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from sagagraph.state_layout import (
    earlier_saga,
    needs_upgrade,
    upgraded_values,
    upgraded_writes,
)

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import CheckpointTuple


def in_current_layout(saved: CheckpointTuple | None) -> CheckpointTuple | None:
    """``saved`` in today's layout: its channel values, versions and pending writes."""
    if saved is None:
        return None
    checkpoint = saved.checkpoint
    values = checkpoint.get("channel_values") or {}
    writes = saved.pending_writes or ()
    if not earlier_saga(values) or not needs_upgrade(values, writes):
        return saved  # today's layout, or another graph's checkpoint: as it is
    new_values, versions = upgraded_values(values, checkpoint.get("channel_versions") or {})
    return saved._replace(
        checkpoint={**checkpoint, "channel_values": new_values, "channel_versions": versions},
        pending_writes=upgraded_writes(writes),
    )


def listed_in_current_layout(items: Iterator[CheckpointTuple]) -> Iterator[CheckpointTuple]:
    """A saver's ``list``, each checkpoint in today's layout."""
    for item in items:
        upgraded = in_current_layout(item)
        assert upgraded is not None
        yield upgraded


async def alisted_in_current_layout(
    items: AsyncIterator[CheckpointTuple],
) -> AsyncIterator[CheckpointTuple]:
    """A saver's ``alist``, each checkpoint in today's layout."""
    async for item in items:
        upgraded = in_current_layout(item)
        assert upgraded is not None
        yield upgraded


class ReadsEarlierLayout(BaseCheckpointSaver[Any]):
    """A saver's ``list`` and ``alist``, each checkpoint in today's layout; put it before the
    LangGraph saver it extends (``class S(ReadsEarlierLayout, SqliteSaver)``), whose own
    ``get_tuple`` / ``aget_tuple`` pass their checkpoint through :func:`in_current_layout`."""

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        items = super().list(config, filter=filter, before=before, limit=limit)
        return listed_in_current_layout(items)

    def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        items = super().alist(config, filter=filter, before=before, limit=limit)
        return alisted_in_current_layout(items)
