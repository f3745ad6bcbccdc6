"""The fields of each finished saga, kept beside its checkpoints so that reading it needs no
LangGraph: ``status``, ``events`` and ``list`` of finished sagas read the database with its
driver alone (``sqlite3``, ``psycopg``).

The record. When a saver of sagagraph's (:mod:`sagagraph.checkpoints.savers`) stores the
checkpoint that ends a saga (a terminal status), it also stores that checkpoint's saga fields
as JSON in a table of sagagraph's own, ``sagagraph_finished`` (saga id, checkpoint id,
fields), beside LangGraph's tables, never in them. Only plain JSON data is recorded (dicts
with text keys, lists, text, numbers, booleans, None), so the fields read back are exactly
the ones the checkpoint holds; a saga whose fields are anything else is not recorded.

The reader (:func:`read_finished`, :func:`read_summaries`) trusts a record only while it
describes the saga's latest root checkpoint and nothing was written after that checkpoint
(no pending writes): both are checked in LangGraph's ``checkpoints`` and ``writes``
(PostgreSQL: ``checkpoint_writes``) tables, the columns docs/architecture.md lists. Whatever
it cannot answer (no record, an older one, a store an older sagagraph wrote, a database that
cannot be opened) it leaves to the full read through the saver, which says why.

Storage only, on SQLite (``sqlite:///``) and PostgreSQL; other stores have no record.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from sagagraph.checkpoints.locks import LockRow
from sagagraph.checkpoints.saga_index import TERMINAL_STATUSES, SagaSummary, summaries_by_sql
from sagagraph.checkpoints.urls import SQLITE_BUSY_TIMEOUT, sqlite_path

__all__ = [
    "CREATE",
    "TABLE",
    "Finished",
    "finished_record",
    "read_finished",
    "read_summaries",
    "record_finished",
]

TABLE = "sagagraph_finished"
"""The table of sagagraph's own that holds each finished saga's fields."""
CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (saga_id TEXT PRIMARY KEY, "
    "checkpoint_id TEXT NOT NULL, fields TEXT NOT NULL)"
)
"""Its schema, the same on SQLite and PostgreSQL (created with the saver's own tables)."""
_UPSERT = (
    f"INSERT INTO {TABLE} (saga_id, checkpoint_id, fields) VALUES (?, ?, ?) "
    "ON CONFLICT (saga_id) DO UPDATE SET checkpoint_id = excluded.checkpoint_id, "
    "fields = excluded.fields"
)


def _is_field(channel: str) -> bool:
    """False for LangGraph's own channels (``__start__``, ``__interrupt__``, the triggers
    ``branch:to:NODE`` and the barriers ``join:A+B:NODE`` of parallel steps): a saga's fields
    are plain names, and its view reads nothing else."""
    return not channel.startswith("__") and ":" not in channel


def finished_record(
    config: Mapping[str, Any], checkpoint: Mapping[str, Any]
) -> tuple[str, str, str] | None:
    """(saga id, checkpoint id, fields as JSON) of a root checkpoint that ends a saga; None
    for any other checkpoint, or when a field is not plain JSON data."""
    configurable = config.get("configurable") or {}
    if configurable.get("checkpoint_ns") or "thread_id" not in configurable:
        return None
    values: Mapping[str, Any] = checkpoint.get("channel_values") or {}
    if values.get("status") not in TERMINAL_STATUSES or "__start__" in values:
        return None
    fields = {k: v for k, v in values.items() if _is_field(k)}
    if not _plain(fields):
        return None
    try:
        text = json.dumps(fields, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return str(configurable["thread_id"]), str(checkpoint["id"]), text


def _plain(value: object, depth: int = 0) -> bool:
    """True when ``value`` is JSON data that reads back as the very same Python values."""
    if depth > 100:
        return False
    if value is None or type(value) in (str, int, float, bool):
        return True
    if type(value) is list:
        return all(_plain(item, depth + 1) for item in value)
    if type(value) is dict:
        return all(type(k) is str and _plain(v, depth + 1) for k, v in value.items())
    return False


def record_finished(cursor: Any, record: tuple[str, str, str], placeholder: str = "?") -> None:
    """Store ``record`` (:func:`finished_record`) with ``cursor``, replacing the saga's
    earlier one."""
    cursor.execute(_UPSERT.replace("?", placeholder), record)


@dataclass(frozen=True)
class Finished:
    """What the reader found of one saga id."""

    fields: dict[str, Any] | None
    """The finished saga's fields; None when the checkpointer holds no thread of that id."""
    locks: list[LockRow] = field(default_factory=list)
    """The locks the saga holds in the store's lock table (a finished saga holds none)."""


@dataclass(frozen=True)
class _Dialect:
    placeholder: str
    writes: str
    postgres: bool


_SQLITE = _Dialect("?", "writes", postgres=False)
_POSTGRES = _Dialect("%s", "checkpoint_writes", postgres=True)


@contextmanager
def _connection(url: str) -> Iterator[tuple[Any, _Dialect] | None]:
    """A connection of its own on the store ``url`` names, and its dialect; None when the
    store is not one this reader knows or cannot be opened (the full read reports why)."""
    if url.startswith("sqlite:///"):
        try:
            path = sqlite_path(url)
            # mode=rw: never create the file (a read creates nothing).
            conn = sqlite3.connect(
                f"file:{quote(str(path))}?mode=rw", uri=True, timeout=SQLITE_BUSY_TIMEOUT
            )
        except (sqlite3.Error, ValueError, OSError):
            yield None
            return
        with closing(conn):
            yield conn, _SQLITE
        return
    if url.split(":", 1)[0].lower() not in ("postgresql", "postgres"):
        yield None
        return
    try:
        import psycopg

        from sagagraph.checkpoints.pg_limits import with_connection_limits

        pg = psycopg.connect(with_connection_limits(url), autocommit=True)
    except Exception:  # ImportError (no extra), psycopg.Error: the full read says why
        yield None
        return
    with closing(pg):
        yield pg, _POSTGRES


def _errors() -> tuple[type[BaseException], ...]:
    """The drivers' errors a read leaves to the full read (a table missing, say)."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - the postgres extra is not installed
        return (sqlite3.Error,)
    return (sqlite3.Error, psycopg.Error)


def read_finished(url: str, saga_id: str) -> Finished | None:
    """``saga_id`` as the store ``url`` names keeps it: its fields when it finished and its
    record still describes its latest checkpoint, ``Finished(None)`` when the checkpointer
    holds no thread of that id; None when only the full read can tell."""
    with _connection(url) as opened:
        if opened is None:
            return None
        conn, dialect = opened
        try:
            return _read(conn, dialect, saga_id)
        except _errors():
            return None


def _read(conn: Any, dialect: _Dialect, saga_id: str) -> Finished | None:
    p = dialect.placeholder
    with closing(conn.cursor()) as cur:
        cur.execute(
            f"SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = {p} "
            "AND checkpoint_ns = ''",
            (saga_id,),
        )
        latest = cur.fetchone()[0]
        if latest is None:
            return Finished(None)
        cur.execute(f"SELECT checkpoint_id, fields FROM {TABLE} WHERE saga_id = {p}", (saga_id,))
        row = cur.fetchone()
        if row is None or str(row[0]) != str(latest):
            return None
        cur.execute(
            f"SELECT 1 FROM {dialect.writes} WHERE thread_id = {p} AND checkpoint_ns = '' "
            f"AND checkpoint_id = {p} LIMIT 1",
            (saga_id, latest),
        )
        if cur.fetchone() is not None:
            return None
        fields = json.loads(row[1])
        return Finished(fields if isinstance(fields, dict) else None, _locks(cur, dialect, saga_id))


def _locks(cur: Any, dialect: _Dialect, saga_id: str) -> list[LockRow]:
    """The locks ``saga_id`` holds (the lock table, when some saga ever took a lock)."""
    if dialect.postgres:
        cur.execute("SELECT to_regclass('sagagraph_locks') IS NOT NULL")
    else:
        cur.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'sagagraph_locks'"
        )
    if not cur.fetchone()[0]:
        return []
    p = dialect.placeholder
    cur.execute(
        f"SELECT key, saga_id, step, since FROM sagagraph_locks WHERE saga_id = {p} ORDER BY key",
        (saga_id,),
    )
    return [{"key": k, "saga_id": s, "step": st, "since": t} for k, s, st, t in cur.fetchall()]


def read_summaries(url: str) -> list[SagaSummary] | None:
    """Every saga's latest checkpoint summary (the saga index's query, ordered by saga id),
    read with the driver alone; None when only the full read can tell."""
    with _connection(url) as opened:
        if opened is None:
            return None
        conn, dialect = opened

        def cursor() -> AbstractContextManager[Any]:
            return closing(conn.cursor())

        opener: Callable[[], AbstractContextManager[Any]] = cursor
        try:
            return list(summaries_by_sql(opener, postgres=dialect.postgres))
        except _errors():
            return None
