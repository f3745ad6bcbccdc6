"""Every saga a checkpointer holds, and the summary its latest checkpoint's metadata carries.

``list`` and ``recover`` start here instead of reading every saga's state.

The stamp. Every saver sagagraph opens passes the metadata of each checkpoint it stores
through :func:`stamp` before handing it to LangGraph's own ``put``: one key, :data:`KEY`
(``"sagagraph"``), holds a small summary of the saga read from the checkpoint's channel
values, so listing needs no checkpoint blob: a saga whose latest checkpoint says it finished
needs no other read. Never the paper's text, never a secret (the reason is redacted again).

- A checkpoint of a saga that has not ended says only that: the summary's version, the
  saga's status and the checkpoint's time. Nothing reads more of an unfinished saga's
  summary: ``list``, ``status`` and ``recover`` read such a saga in full anyway.
- The checkpoint that ends a saga (terminal status) carries the rest: its name, mode, label,
  the time of its last event, the steps committed and compensated, and the reason.

The index. One saga is one LangGraph thread (root namespace); its latest checkpoint is the one
with the greatest id, as LangGraph's ``get_tuple`` reads it. What :func:`stamp` put in that
checkpoint's metadata comes back as :attr:`SagaSummary.summary`.

- SQLite and PostgreSQL (the sync savers): ONE query per page of :data:`PAGE_SIZE` sagas,
  keyset-paged by thread id, over the saver's ``checkpoints`` table, reading the
  ``metadata`` column's :data:`KEY` only, never a blob. That table and column are
  LangGraph's schema, a dependency docs/architecture.md lists;
  ``tests/checkpoints/test_saver_schema.py`` fails when they move. The query runs on the
  saver's public connection: ``SqliteSaver.cursor()``, or ``PostgresSaver.conn`` under
  ``PostgresSaver.lock`` (a pool: a connection of its own). The saga ids alone
  (:func:`saga_ids`) are one ``SELECT DISTINCT`` on the same connection.
- Any other saver (memory, an async one, a user's own): its public ``list``, the latest
  checkpoint of each thread; when its metadata has no stamp, the summary is computed from the
  checkpoint. The in-memory saver's saga ids are the thread ids of its dict.

A saga whose summary is missing or whose status is None has to be read in full by the
caller. Storage only: the kernel's terminal statuses are mirrored here, not imported (a test
holds them equal), and terminal statuses are otherwise the caller's to judge.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard

from sagagraph.redaction import redact
from sagagraph.storable_text import replace_surrogates

if TYPE_CHECKING:  # LangGraph is loaded by the savers, not by a reader of the index
    from langgraph.checkpoint.base import (
        BaseCheckpointSaver,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
    )

__all__ = [
    "KEY",
    "PAGE_SIZE",
    "SUMMARY_KEYS",
    "SagaSummary",
    "latest_checkpoints",
    "read_summary",
    "saga_ids",
    "stamp",
    "summaries_by_sql",
    "summarize",
    "thread_ids",
]

SUMMARY_VERSION = 2
"""Bumped when the summary's form or meaning changes; :func:`stamp` writes this one."""
READABLE_VERSIONS = frozenset({SUMMARY_VERSION})
"""The versions a reader understands (a summary of any other is read in full)."""
KEY = "sagagraph"
"""The one metadata key the summary lives under."""
VERSION = "v"
STATUS = "status"
NAME = "name"
MODE = "mode"
LABEL = "label"
UPDATED = "updated"
COMPLETED = "completed"
COMPENSATED = "compensated"
REASON = "reason"
TS = "ts"
SUMMARY_KEYS = (VERSION, STATUS, NAME, MODE, LABEL, UPDATED, COMPLETED, COMPENSATED, REASON, TS)
"""Every key of a summary (:class:`SagaSummary`)."""
TERMINAL_STATUSES = frozenset({"completed", "rolled_back", "resolved_by_operator"})
"""The kernel's ``saga.names.TERMINAL_STATUSES``, mirrored (a test holds the two equal)."""


def stamp(checkpoint: Checkpoint, metadata: CheckpointMetadata) -> CheckpointMetadata:
    """``metadata`` with the saga's summary added under :data:`KEY` (a new dict: LangGraph's
    own is left as is)."""
    values = checkpoint.get("channel_values") or {}
    status = values.get("status")
    ts = checkpoint.get("ts")
    if not isinstance(status, str) or status not in TERMINAL_STATUSES:
        summary: dict[str, Any] = {
            VERSION: SUMMARY_VERSION,
            STATUS: status if isinstance(status, str) else None,
            TS: ts if isinstance(ts, str) else None,
        }
    else:
        summary = summary_of(values, ts)
        if not _encodes_cleanly(summary):  # a NUL in an error message, say
            summary = {k: _clean(v) for k, v in summary.items()}
    return {**metadata, KEY: summary}  # type: ignore[misc]


def summarize(checkpoint: Checkpoint | Mapping[str, Any]) -> dict[str, Any]:
    """The whole summary of the saga a checkpoint holds, from its channel values.

    A checkpoint with no saga state yet (the input checkpoint, a crash before the first step)
    has status None: readers then treat the saga as unfinished.
    """
    return summary_of(checkpoint.get("channel_values") or {}, checkpoint.get("ts"))


def summary_of(fields: Mapping[str, Any], ts: object) -> dict[str, Any]:
    """:func:`summarize` of a saga's fields and its checkpoint's time."""
    get = fields.get
    events = get("events") or []
    label = get("label")
    status, name, mode, reason = get("status"), get("saga"), get("mode"), get("reason")
    last = events[-1] if events else None
    updated = last.get("ts") if _is_mapping(last) else None
    return {
        VERSION: SUMMARY_VERSION,
        STATUS: status if isinstance(status, str) else None,
        NAME: name if isinstance(name, str) else None,
        MODE: mode if isinstance(mode, str) else None,
        LABEL: label if isinstance(label, str) else None,
        UPDATED: updated if isinstance(updated, str) else None,
        COMPLETED: [str(s) for s in get("completed") or []],
        COMPENSATED: [str(s) for s in get("compensated") or []],
        REASON: redact(reason) if isinstance(reason, str) else None,
        TS: ts if isinstance(ts, str) else None,
    }


def _encodes_cleanly(value: object) -> bool:
    """True when ``value`` stores as metadata on every saver: JSON with no NaN, no NUL
    (PostgreSQL refuses it) and no lone surrogate (not UTF-8; PostgreSQL refuses its escape)."""
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    if "u0000" in text:
        return False
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _clean(value: Any) -> Any:
    """A summary value with NULs and lone surrogates taken out of its text."""
    if isinstance(value, str):
        return replace_surrogates(value.replace("\x00", ""))
    if isinstance(value, list):
        return [_clean(item) for item in value]
    return value


def read_summary(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The summary a checkpoint's metadata carries; empty when it carries none."""
    nested = metadata.get(KEY)
    if _is_mapping(nested):
        return {k: nested[k] for k in SUMMARY_KEYS if k in nested}
    return {}


def _is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    return type(value) is dict or isinstance(value, Mapping)


PAGE_SIZE = 1_000
"""Sagas per query."""


@dataclass(frozen=True, slots=True)
class SagaSummary:
    """One saga (thread) and what its latest checkpoint's metadata says of it."""

    saga_id: str
    checkpoint_id: str
    summary: Mapping[str, Any] = field(default_factory=dict)
    """The stamp's keys (``status``..., :data:`SUMMARY_KEYS`;
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
    table = getattr(checkpointer, "checkpoints_table", "checkpoints")
    yield from summaries_by_sql(
        cursor, postgres=_is_postgres(checkpointer), table=table, page_size=page_size, skip=skip
    )


def summaries_by_sql(
    cursor: Cursor,
    *,
    postgres: bool,
    table: str = "checkpoints",
    page_size: int = PAGE_SIZE,
    skip: Collection[str] = (),
) -> Iterator[SagaSummary]:
    """:func:`latest_checkpoints` by the index's query on any connection to the database
    (PostgreSQL's or SQLite's), on ``table``: one query per page of ``page_size`` sagas."""
    sql = _POSTGRES_PAGE if postgres else _SQLITE_PAGE
    sql = sql.replace("FROM checkpoints", f"FROM {table}").replace(
        "JOIN checkpoints", f"JOIN {table}"
    )
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


def saga_ids(checkpointer: BaseCheckpointSaver[Any]) -> list[str]:
    """Every saga id (root thread id) the checkpointer holds, sorted, each once: one query on
    the SQLite and PostgreSQL sync savers, the in-memory saver's dict, or else a walk of
    ``list(None)``, which reads every checkpoint and is kept only as the fallback."""
    from langgraph.checkpoint.memory import InMemorySaver

    if isinstance(checkpointer, InMemorySaver):
        return sorted(str(t) for t, spaces in checkpointer.storage.items() if "" in spaces)
    ids = thread_ids(checkpointer)
    if ids is None:
        ids = {
            str(item.config["configurable"]["thread_id"])
            for item in checkpointer.list(None)
            if not item.config["configurable"].get("checkpoint_ns")
        }
    return sorted(ids)


def _on_table(sql: str, checkpointer: BaseCheckpointSaver[Any]) -> str:
    """``sql`` on the saver's table of checkpoints (the group-commit saver has its own)."""
    table = getattr(checkpointer, "checkpoints_table", "checkpoints")
    return sql.replace("FROM checkpoints", f"FROM {table}").replace(
        "JOIN checkpoints", f"JOIN {table}"
    )


def _is_postgres(checkpointer: BaseCheckpointSaver[Any]) -> bool:
    if _group_commit(checkpointer):
        return getattr(checkpointer, "sql_dialect", "sqlite") == "postgres"
    from langgraph.checkpoint.sqlite import SqliteSaver

    return not isinstance(checkpointer, SqliteSaver)


def _group_commit(checkpointer: BaseCheckpointSaver[Any]) -> bool:
    """True for a group-commit saver, SQLite or PostgreSQL (it names its own table of
    checkpoints, and its ``sql_dialect`` when PostgreSQL; it is not imported here, since it
    stamps its checkpoints with this module's summary)."""
    return hasattr(checkpointer, "checkpoints_table") and hasattr(checkpointer, "read_cursor")


def sql_cursor(checkpointer: BaseCheckpointSaver[Any]) -> Cursor | None:
    """Opens a cursor on the database of a sync SQLite or PostgreSQL saver, through its
    public connection (safe beside running sagas: the saver's own lock is held), or on the
    group-commit saver's read connection; None for any other saver."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    if _group_commit(checkpointer):
        read_cursor: Cursor = checkpointer.read_cursor  # type: ignore[attr-defined]
        return read_cursor
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
