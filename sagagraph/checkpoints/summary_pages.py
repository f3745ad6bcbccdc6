"""The SQL that pages through each saga's latest checkpoint summary, on a database cursor.

One query per page of sagas, keyset-paged by thread id, reading the metadata column only
(``json_extract`` on SQLite, ``->`` on PostgreSQL), never a blob. Used on a saver's own
connection (:mod:`sagagraph.checkpoints.saga_index`) and on a plain driver connection
(:mod:`sagagraph.checkpoints.metadata_reader`, the CLI's reading commands): no LangGraph here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from sagagraph.checkpoints.saga_metadata import (
    STATUS,
    SUMMARY_KEYS,
    SUMMARY_VERSION,
    TS,
    VERSION,
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


Cursor = Callable[[], AbstractContextManager[Any]]
"""Opens a cursor (SQLite: tuples; PostgreSQL: dict rows) for one query, then closes it."""
Page = Callable[[Cursor, str, int, list[str]], tuple[list[SagaSummary], int, str]]
"""(cursor, after, limit, skip) -> (summaries kept, sagas the page walked, its last saga id)."""


def pages(cursor: Cursor, page: Page, page_size: int, skip: list[str]) -> Iterator[SagaSummary]:
    """Every page's summaries, ordered by saga id, until a page comes back short."""
    after = ""
    while True:
        kept, walked, last = page(cursor, after, page_size, skip)
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


def sqlite_page(
    cursor: Cursor, after: str, limit: int, skip: list[str]
) -> tuple[list[SagaSummary], int, str]:
    """One page from LangGraph's SQLite ``checkpoints`` table."""
    with cursor() as cur:
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


def postgres_page(
    cursor: Cursor, after: str, limit: int, skip: list[str]
) -> tuple[list[SagaSummary], int, str]:
    """One page from LangGraph's PostgreSQL ``checkpoints`` table (a cursor of dict rows).

    A checkpoint stored before the stamp still says its status: the saver inlines primitive
    channel values in the ``checkpoint`` jsonb.
    """
    with cursor() as cur:
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
