"""Reading saga summaries from a checkpointer's metadata with the database driver alone.

The CLI's reading commands (``list``, ``status``) start here: ``sqlite3`` or ``psycopg``, no
LangGraph, no saver, no graph. What the stamp (:mod:`sagagraph.checkpoints.saga_metadata`)
put in each saga's latest checkpoint is enough for a finished saga: its summary (``list``)
and its final state values (``status``). Anything else (an unfinished saga, one stored
before the stamp, a database this cannot read) is for the caller to read in full through
the saver, which gives it the same answer, only slower to start.

- ``sqlite:///`` and ``postgresql://`` URLs have a reader; ``memory://`` and other URLs have
  none (:func:`open_metadata_reader` yields None).
- A query the database refuses (no tables yet, not a database) raises :class:`Unreadable`:
  the full path then answers, with its own errors. A PostgreSQL server that cannot be reached
  fails at once, with the saver's one-line ConfigurationError.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterator
from contextlib import closing, contextmanager
from typing import Any

from sagagraph.checkpoints.factory import (
    SQLITE_BUSY_TIMEOUT,
    _first_line,
    _redact_text,
    redact_url,
    sqlite_path,
)
from sagagraph.checkpoints.saga_metadata import (
    FINAL,
    KEY,
    STATUS,
    TERMINAL_STATUSES,
    V1_FINAL,
    V1_KEYS,
    VERSION,
)
from sagagraph.checkpoints.summary_pages import (
    PAGE_SIZE,
    Cursor,
    Page,
    SagaSummary,
    pages,
    postgres_page,
    sqlite_page,
)
from sagagraph.errors import ConfigurationError


class Unreadable(Exception):
    """The database refused a query (no tables yet, not a database): read in full instead."""


_SQLITE_META = "CAST(metadata AS TEXT)"
_PATHS = (
    # Summary version 2 (one object), then version 1 (top-level keys, the final values as text).
    (KEY, VERSION),
    (KEY, STATUS),
    (KEY, FINAL),
    (V1_KEYS[VERSION],),
    (V1_KEYS[STATUS],),
    (V1_FINAL,),
)
_SQLITE_FINAL = (
    # The latest root checkpoint, as LangGraph's get_tuple picks it: the greatest id.
    f"SELECT checkpoint_id, json_extract({_SQLITE_META}, "
    + ", ".join("'$." + ".".join(path) + "'" for path in _PATHS)
    + ") FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
    "ORDER BY checkpoint_id DESC LIMIT 1"
)
_SQLITE_WRITES = (
    "SELECT 1 FROM writes WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ? LIMIT 1"
)
_POSTGRES_FINAL = (
    "SELECT checkpoint_id, jsonb_build_array("
    + ", ".join("metadata->" + "->".join(f"'{key}'" for key in path) for path in _PATHS)
    + ") AS summary FROM checkpoints "
    "WHERE thread_id = %s AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1"
)
_POSTGRES_WRITES = (
    "SELECT 1 FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_ns = '' "
    "AND checkpoint_id = %s LIMIT 1"
)


class MetadataReader:
    """Summaries and final states of one checkpointer's sagas, read from metadata only."""

    def __init__(
        self,
        cursor: Cursor,
        page: Page,
        *,
        final_sql: str,
        writes_sql: str,
        errors: tuple[type[Exception], ...],
    ) -> None:
        self._cursor = cursor
        self._page = page
        self._final_sql = final_sql
        self._writes_sql = writes_sql
        self._errors = errors

    def latest(
        self, *, page_size: int = PAGE_SIZE, skip: Collection[str] = ()
    ) -> list[SagaSummary]:
        """Each saga's latest checkpoint summary, ordered by saga id, as
        :func:`sagagraph.checkpoints.saga_index.latest_checkpoints` gives it."""
        try:
            return list(pages(self._cursor, self._page, page_size, sorted(set(skip))))
        except self._errors as error:
            raise Unreadable(_first_line(error)) from None

    def final_values(self, saga_id: str) -> dict[str, Any] | None:
        """The state values of saga ``saga_id`` when its latest checkpoint says it ended and
        carries them; None when the saga must be read in full (or is not stored)."""
        try:
            with self._cursor() as cur:
                cur.execute(self._final_sql, (saga_id,))
                latest = cur.fetchone()
                if latest is None:
                    return None
                checkpoint_id, extracted = _columns(latest)
                if isinstance(extracted, str):
                    extracted = json.loads(extracted)
                if not isinstance(extracted, list) or len(extracted) != len(_PATHS):
                    return None  # no metadata at all
                final = _final(extracted)
                if final is None:
                    return None
                # Writes stored after the checkpoint would be applied by a full read.
                cur.execute(self._writes_sql, (saga_id, checkpoint_id))
                if cur.fetchone() is not None:
                    return None
        except self._errors as error:
            raise Unreadable(_first_line(error)) from None
        return final


def _final(extracted: list[Any]) -> dict[str, Any] | None:
    """The final values the summary (either version) says a saga ended with; None when it
    does not say (not ended, not stamped, or stamped without them)."""
    version, status, final, v1_version, v1_status, v1_final = extracted
    if version == 2:
        # An object on SQLite; JSON text on PostgreSQL, whose jsonb would reorder its keys.
        values = json.loads(final) if isinstance(final, str) else final
    elif version is None and v1_version == 1 and isinstance(v1_final, str):
        status, values = v1_status, json.loads(v1_final)
    else:
        return None
    if status not in TERMINAL_STATUSES or not isinstance(values, dict):
        return None
    return values if values.get("status") == status else None


def _columns(row: Any) -> tuple[Any, Any]:
    """(checkpoint id, summary array) of a row: a tuple (SQLite) or a dict (PostgreSQL)."""
    if isinstance(row, dict):
        return row["checkpoint_id"], row["summary"]
    return row[0], row[1]


@contextmanager
def open_metadata_reader(url: str) -> Iterator[MetadataReader | None]:
    """A reader of the checkpointer ``url`` names, closed on exit; None when it has none.

    Creates nothing: the caller checks first that a SQLite file exists.
    """
    scheme = url.split(":", 1)[0].lower()
    if url.startswith("sqlite:///"):
        with _sqlite_reader(url) as reader:
            yield reader
    elif scheme in ("postgresql", "postgres"):
        with _postgres_reader(url) as reader:
            yield reader
    else:
        yield None


@contextmanager
def _sqlite_reader(url: str) -> Iterator[MetadataReader]:
    try:
        conn = sqlite3.connect(
            str(sqlite_path(url)), timeout=SQLITE_BUSY_TIMEOUT, isolation_level=None
        )
    except sqlite3.Error as error:
        raise Unreadable(_first_line(error)) from None
    with closing(conn):

        def cursor() -> Any:
            return closing(conn.cursor())

        yield MetadataReader(
            cursor,
            sqlite_page,
            final_sql=_SQLITE_FINAL,
            writes_sql=_SQLITE_WRITES,
            errors=(sqlite3.Error,),
        )


@contextmanager
def _postgres_reader(url: str) -> Iterator[MetadataReader]:
    try:
        import psycopg
        from psycopg.rows import dict_row

        from sagagraph.checkpoints.pg_limits import with_connection_limits
    except ImportError:  # pragma: no cover - depends on installed extras
        raise ConfigurationError(
            "postgres checkpointer needs the extra: pip install 'sagagraph[postgres]'"
        ) from None
    try:
        # As LangGraph's PostgresSaver connects (autocommit, no prepared statements).
        conn = psycopg.connect(
            with_connection_limits(url), autocommit=True, prepare_threshold=0, row_factory=dict_row
        )
    except psycopg.Error as error:
        cause = _redact_text(_first_line(error), url)
        raise ConfigurationError(
            f"checkpointer url {redact_url(url)!r}: cannot connect: {cause}"
        ) from None
    with conn:
        yield MetadataReader(
            conn.cursor,
            postgres_page,
            final_sql=_POSTGRES_FINAL,
            writes_sql=_POSTGRES_WRITES,
            errors=(psycopg.Error,),
        )
