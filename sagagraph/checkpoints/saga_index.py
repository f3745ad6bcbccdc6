"""Every saga a checkpointer holds, with the summary its latest checkpoint's metadata carries.

``list`` and ``recover`` start here instead of reading every saga's state. One saga is one
LangGraph thread (root namespace); its latest checkpoint is the one with the greatest id, as
LangGraph's ``get_tuple`` reads it. What :func:`sagagraph.checkpoints.saga_metadata.stamp`
put in that checkpoint's metadata comes back as :attr:`SagaSummary.summary`.

- SQLite and PostgreSQL (the sync savers): ONE query per page of :data:`PAGE_SIZE` sagas,
  keyset-paged by thread id, over the saver's ``checkpoints`` table, reading the
  ``metadata`` column's :data:`~sagagraph.checkpoints.saga_metadata.KEY` only, never a
  blob. That table and column are LangGraph's schema, a dependency docs/architecture.md
  lists; ``tests/checkpoints/test_saver_schema.py`` fails when they move. The query runs on
  the saver's public connection: ``SqliteSaver.cursor()``, or ``PostgresSaver.conn`` under
  ``PostgresSaver.lock`` (a pool: a connection of its own).
- Any other saver (memory, an async one, a user's own): its public ``list``, the latest
  checkpoint of each thread; when its metadata has no stamp, the summary is computed from the
  checkpoint.

A saga whose summary is missing or whose status is None has to be read in full by the
caller. Terminal statuses are the caller's to judge (storage does not import the kernel).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.sqlite import SqliteSaver

from sagagraph.checkpoints.group_commit import GroupCommitSqliteSaver
from sagagraph.checkpoints.saga_metadata import (
    KEY,
    READABLE_VERSIONS,
    STATUS,
    SUMMARY_KEYS,
    TS,
    VERSION,
    read_summary,
    summarize,
)

__all__ = ["PAGE_SIZE", "SagaSummary", "latest_checkpoints", "thread_ids"]

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

    @property
    def stamped(self) -> bool:
        """True when the summary is of a version this sagagraph understands."""
        return self.summary.get(VERSION) in READABLE_VERSIONS

    @property
    def status(self) -> str | None:
        """The saga's status at its latest checkpoint; None when unknown or not set yet."""
        status = self.summary.get(STATUS) if self.stamped else None
        return status if isinstance(status, str) else None

    @property
    def ts(self) -> str | None:
        """When the latest checkpoint was written (ISO 8601), if it says."""
        ts = self.summary.get(TS)
        return ts if isinstance(ts, str) else None


Cursor = Callable[[], AbstractContextManager[Any]]
"""Opens a cursor on the saver's database for one query, then closes it."""

_LATEST = (
    "SELECT thread_id, max(checkpoint_id) AS last FROM checkpoints "
    "WHERE checkpoint_ns = '' AND thread_id > {mark} GROUP BY thread_id "
    "ORDER BY thread_id LIMIT {mark}"
)
"""The latest checkpoint id of each thread of a page: a walk of the primary key."""

_SQLITE_PAGE = (
    "SELECT c.thread_id, c.checkpoint_id, "
    f"json_extract(CAST(c.metadata AS TEXT), '$.{KEY}') FROM ({_LATEST.format(mark='?')}) AS l "
    "JOIN checkpoints AS c ON c.thread_id = l.thread_id AND c.checkpoint_ns = '' "
    "AND c.checkpoint_id = l.last ORDER BY c.thread_id"
)
_POSTGRES_PAGE = (
    f"SELECT c.thread_id, c.checkpoint_id, c.metadata->'{KEY}' AS summary "
    f"FROM ({_LATEST.format(mark='%s')}) AS l JOIN checkpoints AS c "
    "ON c.thread_id = l.thread_id AND c.checkpoint_ns = '' AND c.checkpoint_id = l.last "
    "ORDER BY c.thread_id"
)
_THREADS = "SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = ''"


def latest_checkpoints(
    checkpointer: BaseCheckpointSaver[Any],
    *,
    page_size: int = PAGE_SIZE,
    skip: Collection[str] = (),
) -> Iterator[SagaSummary]:
    """Each saga's latest checkpoint summary, ordered by saga id; sagas whose status is in
    ``skip`` are left out (``recover`` skips the finished ones)."""
    cursor = sql_cursor(checkpointer)
    if cursor is None:
        yield from (s for s in _generic(checkpointer) if s.status not in skip)
        return
    sql = _POSTGRES_PAGE if _is_postgres(checkpointer) else _SQLITE_PAGE
    sql = _on_table(sql, checkpointer)
    after = ""
    while True:
        with cursor() as cur:
            cur.execute(sql, (after, page_size))
            rows = [_row(row) for row in cur.fetchall()]
        for thread_id, checkpoint_id, summary in rows:
            found = SagaSummary(thread_id, checkpoint_id, summary)
            if found.status not in skip:
                yield found
        if len(rows) < page_size:
            return
        after = rows[-1][0]


def thread_ids(checkpointer: BaseCheckpointSaver[Any]) -> set[str] | None:
    """Every root thread id, by one query on the SQLite and PostgreSQL sync savers; None for
    any other saver."""
    cursor = sql_cursor(checkpointer)
    if cursor is None:
        return None
    with cursor() as cur:
        cur.execute(_on_table(_THREADS, checkpointer))
        return {str(_first(row)) for row in cur.fetchall()}


def _on_table(sql: str, checkpointer: BaseCheckpointSaver[Any]) -> str:
    """``sql`` on the saver's table of checkpoints (the group-commit saver has its own)."""
    table = getattr(checkpointer, "checkpoints_table", "checkpoints")
    return sql.replace("FROM checkpoints", f"FROM {table}").replace(
        "JOIN checkpoints", f"JOIN {table}"
    )


def _is_postgres(checkpointer: BaseCheckpointSaver[Any]) -> bool:
    return not isinstance(checkpointer, SqliteSaver | GroupCommitSqliteSaver)


def sql_cursor(checkpointer: BaseCheckpointSaver[Any]) -> Cursor | None:
    """Opens a cursor on the database of a sync SQLite or PostgreSQL saver, through its
    public connection (safe beside running sagas: the saver's own lock is held), or on the
    group-commit saver's read connection; None for any other saver."""
    if isinstance(checkpointer, GroupCommitSqliteSaver):
        return checkpointer.read_cursor
    if isinstance(checkpointer, SqliteSaver):
        saver = checkpointer

        def sqlite_cursor() -> AbstractContextManager[Any]:
            return saver.cursor(transaction=False)

        return sqlite_cursor
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import Connection
    except ImportError:  # pragma: no cover - the postgres extra is not installed
        return None
    if not isinstance(checkpointer, PostgresSaver):
        return None
    pg = checkpointer

    @contextmanager
    def postgres_cursor() -> Iterator[Any]:
        if isinstance(pg.conn, Connection):
            with pg.lock, closing(pg.conn.cursor()) as cur:
                yield cur
        else:  # a pool: a connection of its own for the query
            with pg.conn.connection() as conn, closing(conn.cursor()) as cur:
                yield cur

    return postgres_cursor


def _first(row: Any) -> Any:
    return row["thread_id"] if isinstance(row, dict) else row[0]


def _row(row: Any) -> tuple[str, str, dict[str, Any]]:
    """(thread id, checkpoint id, summary) of a row: a tuple (SQLite) or a dict (PostgreSQL)."""
    if isinstance(row, dict):
        thread_id, checkpoint_id, summary = row["thread_id"], row["checkpoint_id"], row["summary"]
    else:
        thread_id, checkpoint_id, summary = row
    if isinstance(summary, str | bytes):
        summary = json.loads(summary)
    kept = (
        {k: summary[k] for k in SUMMARY_KEYS if summary.get(k) is not None}
        if isinstance(summary, dict)
        else {}
    )
    return str(thread_id), str(checkpoint_id), kept


def _generic(checkpointer: BaseCheckpointSaver[Any]) -> Iterator[SagaSummary]:
    """Any other saver: its ``list``, the latest root checkpoint of each thread."""
    latest: dict[str, CheckpointTuple] = {}
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
