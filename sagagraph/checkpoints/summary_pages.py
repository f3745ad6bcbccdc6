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
    FINAL,
    KEY,
    READABLE_VERSIONS,
    STATUS,
    SUMMARY_KEYS,
    TS,
    V1_KEYS,
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
    """The stamp's keys (``status``..., :data:`~sagagraph.checkpoints.saga_metadata.SUMMARY_KEYS`;
    an unfinished saga's holds its version, status and time only); empty when the checkpoint
    was never stamped."""
    legacy_status: str | None = None
    """A status read some other way from an unstamped checkpoint (PostgreSQL's inline values)."""

    @property
    def stamped(self) -> bool:
        """True when the summary is of a version this sagagraph understands."""
        return self.summary.get(VERSION) in READABLE_VERSIONS

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
_SQLITE_STATUS = (
    f"coalesce(json_extract(m, '$.{KEY}.{STATUS}'), json_extract(m, '$.{V1_KEYS[STATUS]}'), '')"
)
_SQLITE_PAGE = (
    # A skipped saga comes back as its id alone (the page still walked it). Version 2's
    # summary is one object (its final values left out); version 1's ten keys come back as
    # one JSON array (several paths make json_extract answer with an array).
    "SELECT thread_id, checkpoint_id, "
    f"CASE WHEN skipped THEN NULL ELSE json_remove(json_extract(m, '$.{KEY}'), '$.{FINAL}') END, "
    f"CASE WHEN skipped OR json_type(m, '$.{KEY}') IS NOT NULL THEN NULL ELSE json_extract(m, "
    + ", ".join(f"'$.{V1_KEYS[key]}'" for key in SUMMARY_KEYS)
    + ") END FROM ("
    f"SELECT thread_id, checkpoint_id, m, {_SQLITE_STATUS} IN (SELECT value FROM json_each(?)) "
    f"AS skipped FROM (SELECT c.thread_id, c.checkpoint_id, {_SQLITE_META} AS m FROM "
    f"({_LATEST.format(mark='?')}) AS l JOIN checkpoints AS c "
    "ON c.thread_id = l.thread_id AND c.checkpoint_ns = '' AND c.checkpoint_id = l.last)"
    ") ORDER BY thread_id"
)


def sqlite_page(
    cursor: Cursor, after: str, limit: int, skip: list[str]
) -> tuple[list[SagaSummary], int, str]:
    """One page from LangGraph's SQLite ``checkpoints`` table."""
    with cursor() as cur:
        cur.execute(_SQLITE_PAGE, (json.dumps(skip), after, limit))
        fetched = cur.fetchall()
    out = []
    for thread_id, checkpoint_id, nested, v1 in fetched:
        if nested is not None:
            summary = _kept(json.loads(nested))
        elif v1 is not None:
            summary = _kept(dict(zip(SUMMARY_KEYS, json.loads(v1), strict=False)))
        else:
            continue  # skipped
        out.append(SagaSummary(str(thread_id), str(checkpoint_id), summary))
    return out, len(fetched), str(fetched[-1][0]) if fetched else after


def _kept(summary: Any) -> dict[str, Any]:
    """A summary's keys that have a value (an unknown form gives an empty summary)."""
    if not isinstance(summary, dict):
        return {}
    return {k: summary[k] for k in SUMMARY_KEYS if summary.get(k) is not None}


_POSTGRES_STATUS = (
    f"coalesce(c.metadata->'{KEY}'->>'{STATUS}', c.metadata->>'{V1_KEYS[STATUS]}', "
    "c.checkpoint->'channel_values'->>'status', '')"
)
_POSTGRES_PAGE = (
    # A skipped saga comes back as its id alone (the page still walked it).
    "SELECT thread_id, checkpoint_id, skipped, "
    "CASE WHEN skipped THEN NULL ELSE nested END AS nested, "
    "CASE WHEN skipped THEN NULL ELSE summary END AS summary, "
    "CASE WHEN skipped THEN NULL ELSE inline_status END AS inline_status, "
    "CASE WHEN skipped THEN NULL ELSE ts END AS ts FROM ("
    f"SELECT c.thread_id, c.checkpoint_id, {_POSTGRES_STATUS} = ANY(%s::text[]) AS skipped, "
    f"(c.metadata->'{KEY}') - '{FINAL}' AS nested, jsonb_build_array("
    + ", ".join(f"c.metadata->'{V1_KEYS[key]}'" for key in SUMMARY_KEYS)
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
        if row["nested"] is not None:
            summary = _kept(row["nested"])
        else:
            summary = _kept(dict(zip(SUMMARY_KEYS, row["summary"] or [], strict=False)))
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
