"""Every saga a checkpointer holds, with the summary its latest checkpoint's metadata carries.

``list`` and ``recover`` start here instead of reading every saga's state. One saga is one
LangGraph thread (root namespace); its latest checkpoint is the one with the greatest id, as
LangGraph's ``get_tuple`` reads it. What :func:`sagagraph.checkpoints.saga_metadata.stamp`
put in that checkpoint's metadata comes back as :attr:`SagaSummary.summary`.

- SQLite and PostgreSQL: ONE query per page of :data:`PAGE_SIZE` sagas, keyset-paged by
  thread id, reading the metadata column only (``json_extract`` / ``->``), never a blob
  (:mod:`sagagraph.checkpoints.summary_pages`, which the CLI also runs on a plain driver
  connection). On PostgreSQL a checkpoint stored before the stamp still says its status: the
  saver inlines primitive channel values in the ``checkpoint`` jsonb.
- Any other saver (memory, a user's own): ``checkpointer.list()``, one latest checkpoint per
  thread; when its metadata has no stamp, the summary is computed from the checkpoint itself.

A saga whose summary is missing (stored before the stamp) or whose status is None has to be
read in full by the caller. Terminal statuses are the caller's to judge (storage does not
import the kernel).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from functools import partial
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from sagagraph.checkpoints.saga_metadata import READABLE_VERSIONS, VERSION, read_summary, summarize
from sagagraph.checkpoints.summary_pages import (
    PAGE_SIZE,
    SagaSummary,
    pages,
    postgres_page,
    sqlite_page,
)

__all__ = ["PAGE_SIZE", "SagaSummary", "latest_checkpoints"]


def latest_checkpoints(
    checkpointer: BaseCheckpointSaver[Any],
    *,
    page_size: int = PAGE_SIZE,
    skip: Collection[str] = (),
) -> Iterator[SagaSummary]:
    """Each saga's latest checkpoint summary, ordered by saga id (SQL savers; memory too).

    Sagas whose status is in ``skip`` are left out; on SQLite and PostgreSQL the database
    drops them, so they cost no Python work at all (``recover`` skips the finished ones).
    """
    skipped = sorted(set(skip))
    if isinstance(checkpointer, SqliteSaver):
        # cursor() takes the saver's lock, so this is safe beside running sagas.
        cursor = partial(checkpointer.cursor, transaction=False)
        yield from pages(cursor, sqlite_page, page_size, skipped)
        return
    postgres = _postgres_saver_type()
    if postgres is not None and isinstance(checkpointer, postgres):
        # _cursor() is how the saver itself takes its lock and a connection (pool or not).
        yield from pages(checkpointer._cursor, postgres_page, page_size, skipped)
        return
    yield from (s for s in _generic(checkpointer) if s.status not in skipped)


def _postgres_saver_type() -> type[Any] | None:
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:  # pragma: no cover - the postgres extra is not installed
        return None
    return PostgresSaver


def _generic(checkpointer: BaseCheckpointSaver[Any]) -> Iterator[SagaSummary]:
    """Any other saver: its ``list``, the latest root checkpoint of each thread."""
    latest: dict[str, CheckpointTuple] = {}
    if isinstance(checkpointer, InMemorySaver):
        threads = sorted(str(t) for t, spaces in checkpointer.storage.items() if "" in spaces)
        for thread_id in threads:
            config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
            for item in checkpointer.list(config, limit=1):  # type: ignore[arg-type]
                latest[thread_id] = item
    else:
        for item in checkpointer.list(None):
            configurable = item.config["configurable"]
            if configurable.get("checkpoint_ns"):
                continue
            thread_id = str(configurable["thread_id"])
            best = latest.get(thread_id)
            if best is None or _id(item) > _id(best):
                latest[thread_id] = item
    for thread_id in sorted(latest):
        item = latest[thread_id]
        summary = read_summary(item.metadata)
        if summary.get(VERSION) not in READABLE_VERSIONS:
            # Not stamped (the saver does not stamp): the checkpoint is already read.
            summary = summarize(item.checkpoint)
        yield SagaSummary(thread_id, _id(item), summary)


def _id(item: CheckpointTuple) -> str:
    return str(item.config["configurable"]["checkpoint_id"])
