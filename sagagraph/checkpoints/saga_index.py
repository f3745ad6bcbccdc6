"""Every saga a checkpointer holds, with the summary its latest checkpoint's metadata carries.

``list`` and ``recover`` start here instead of reading every saga's state. One saga is one
LangGraph thread (root namespace); its latest checkpoint is the one with the greatest id, as
LangGraph's ``get_tuple`` reads it. What :func:`sagagraph.checkpoints.saga_metadata.stamp`
put in that checkpoint's metadata comes back as :attr:`SagaSummary.summary`.

- SQLite and PostgreSQL: ONE query per page of :data:`PAGE_SIZE` sagas, keyset-paged by
  thread id, reading the metadata column only (``json_extract`` / ``->``), never a blob. On
  PostgreSQL a checkpoint stored before the stamp still says its status: the saver inlines
  primitive channel values in the ``checkpoint`` jsonb.
- Any other saver (memory, a user's own): ``checkpointer.list()``, one latest checkpoint per
  thread; when its metadata has no stamp, the summary is computed from the checkpoint itself.

A saga whose summary is missing (stored before the stamp) or whose status is None has to be
read in full by the caller. Terminal statuses are the caller's to judge (storage does not
import the kernel).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from sagagraph.checkpoints.saga_metadata import (
    STATUS,
    SUMMARY_KEYS,
    SUMMARY_VERSION,
    TS,
    VERSION,
    summarize,
)

PAGE_SIZE = 1_000
"""Sagas per query."""


@dataclass(frozen=True, slots=True)
class SagaSummary:
    """One saga (thread) and what its latest checkpoint's metadata says of it."""

    saga_id: str
    checkpoint_id: str
    summary: Mapping[str, Any] = field(default_factory=dict)
    """The stamp's keys (``saga_status``...); empty when the checkpoint was never stamped."""
    legacy_status: str | None = None
    """A status read some other way from an unstamped checkpoint (PostgreSQL's inline values)."""

    @property
    def stamped(self) -> bool:
        """True when the summary is one this version of sagagraph wrote and understands."""
        return self.summary.get(VERSION) == SUMMARY_VERSION

    @property
    def status(self) -> str | None:
        """The saga's status at its latest checkpoint; None when unknown or not set yet."""
        if self.stamped:
            status = self.summary.get(STATUS)
            return status if isinstance(status, str) else None
        return self.legacy_status

    @property
    def ts(self) -> str | None:
        """When the latest checkpoint was written (ISO 8601), if it says."""
        ts = self.summary.get(TS)
        return ts if isinstance(ts, str) else None


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
        yield from _pages(checkpointer, _sqlite_page, page_size, skipped)
        return
    postgres = _postgres_saver_type()
    if postgres is not None and isinstance(checkpointer, postgres):
        yield from _pages(checkpointer, _postgres_page, page_size, skipped)
        return
    yield from (s for s in _generic(checkpointer) if s.status not in skipped)


def _postgres_saver_type() -> type[Any] | None:
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:  # pragma: no cover - the postgres extra is not installed
        return None
    return PostgresSaver


Page = Callable[[Any, str, int, list[str]], tuple[list[SagaSummary], int, str]]
"""(saver, after, limit, skip) -> (summaries kept, sagas the page walked, its last saga id)."""


def _pages(checkpointer: Any, page: Page, page_size: int, skip: list[str]) -> Iterator[SagaSummary]:
    after = ""
    while True:
        kept, walked, last = page(checkpointer, after, page_size, skip)
        yield from kept
        if walked < page_size:
            return
        after = last


_LATEST = (
    "SELECT thread_id, max(checkpoint_id) AS last FROM checkpoints "
    "WHERE checkpoint_ns = '' AND thread_id > {mark} GROUP BY thread_id "
    "ORDER BY thread_id LIMIT {mark}"
)
"""The latest checkpoint id of each thread of a page: an index-only walk of the primary key."""

_SQLITE_META = "CAST(c.metadata AS TEXT)"
_SQLITE_PAGE = (
    # A skipped saga comes back as its id alone (the page still walked it); several paths
    # make json_extract answer with a JSON array, one value per path.
    f"SELECT c.thread_id, c.checkpoint_id, CASE WHEN coalesce(json_extract({_SQLITE_META}, "
    f"'$.{STATUS}'), '') IN (SELECT value FROM json_each(?)) THEN NULL "
    f"ELSE json_extract({_SQLITE_META}, "
    + ", ".join(f"'$.{key}'" for key in SUMMARY_KEYS)
    + f") END FROM ({_LATEST.format(mark='?')}) AS l JOIN checkpoints AS c "
    "ON c.thread_id = l.thread_id AND c.checkpoint_ns = '' AND c.checkpoint_id = l.last "
    "ORDER BY c.thread_id"
)


def _sqlite_page(
    saver: SqliteSaver, after: str, limit: int, skip: list[str]
) -> tuple[list[SagaSummary], int, str]:
    # cursor() takes the saver's lock, so this is safe beside running sagas.
    with saver.cursor(transaction=False) as cur:
        cur.execute(_SQLITE_PAGE, (json.dumps(skip), after, limit))
        fetched = cur.fetchall()
    out = []
    for thread_id, checkpoint_id, extracted in fetched:
        if extracted is None:
            continue  # skipped
        values = json.loads(extracted)
        summary = {k: v for k, v in zip(SUMMARY_KEYS, values, strict=False) if v is not None}
        out.append(SagaSummary(str(thread_id), str(checkpoint_id), summary))
    return out, len(fetched), str(fetched[-1][0]) if fetched else after


_POSTGRES_STATUS = (
    f"coalesce(c.metadata->>'{STATUS}', c.checkpoint->'channel_values'->>'status', '')"
)
_POSTGRES_PAGE = (
    # A skipped saga comes back as its id alone (the page still walked it).
    "SELECT thread_id, checkpoint_id, skipped, "
    "CASE WHEN skipped THEN NULL ELSE summary END AS summary, "
    "CASE WHEN skipped THEN NULL ELSE inline_status END AS inline_status, "
    "CASE WHEN skipped THEN NULL ELSE ts END AS ts FROM ("
    f"SELECT c.thread_id, c.checkpoint_id, {_POSTGRES_STATUS} = ANY(%s::text[]) AS skipped, "
    "jsonb_build_array("
    + ", ".join(f"c.metadata->'{key}'" for key in SUMMARY_KEYS)
    + ") AS summary, c.checkpoint->'channel_values'->>'status' AS inline_status, "
    "c.checkpoint->>'ts' AS ts "
    f"FROM ({_LATEST.format(mark='%s')}) AS l JOIN checkpoints AS c "
    "ON c.thread_id = l.thread_id AND c.checkpoint_ns = '' AND c.checkpoint_id = l.last "
    ") AS page ORDER BY thread_id"
)


def _postgres_page(
    saver: Any, after: str, limit: int, skip: list[str]
) -> tuple[list[SagaSummary], int, str]:
    # _cursor() is how the saver itself takes its lock and a connection (pool or not).
    with saver._cursor() as cur:
        cur.execute(_POSTGRES_PAGE, (skip, after, limit))
        fetched = cur.fetchall()
    out = []
    for row in fetched:
        if row["skipped"]:
            continue
        summary = {
            k: v for k, v in zip(SUMMARY_KEYS, row["summary"] or [], strict=False) if v is not None
        }
        summary.setdefault(TS, row["ts"])
        status = row["inline_status"]
        out.append(
            SagaSummary(
                str(row["thread_id"]),
                str(row["checkpoint_id"]),
                summary,
                legacy_status=status if isinstance(status, str) else None,
            )
        )
    return out, len(fetched), str(fetched[-1]["thread_id"]) if fetched else after


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
        summary = {k: item.metadata[k] for k in SUMMARY_KEYS if k in item.metadata}  # type: ignore[literal-required]
        if summary.get(VERSION) != SUMMARY_VERSION:
            # Not stamped (the saver does not stamp): the checkpoint is already read.
            summary = summarize(item.checkpoint)
        yield SagaSummary(thread_id, _id(item), summary)


def _id(item: CheckpointTuple) -> str:
    return str(item.config["configurable"]["checkpoint_id"])
