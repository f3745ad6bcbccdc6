"""``open_checkpointer(url)``: LangGraph's savers, chosen by URL, tables created when missing.

The URLs (:mod:`sagagraph.checkpoints.urls`): ``sqlite:///path`` (the default), ``memory://``,
``postgresql://...``. A URL that cannot be used fails with one line, a ConfigurationError
that names the URL with any password hidden.

What a URL names and how its store is set up are written once, here, for
:func:`open_checkpointer` and :func:`~sagagraph.checkpoints.async_factory.open_async_checkpointer`
alike: :func:`target` reads the URL; the set-ups (a SQLite file found busy is tried again;
PostgreSQL's tables are created by one process at a time) are generators that yield what
they need done (:class:`Call`, :class:`Pause`), answered by :func:`set_up` with blocking calls
and by :func:`~sagagraph.checkpoints.async_factory.aset_up` with awaits.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from sagagraph.checkpoints.savers import SagaSqliteSaver
from sagagraph.checkpoints.urls import (
    SQLITE_BUSY_TIMEOUT,
    default_db_url,
    first_line,
    lease_file,
    redact_text,
    redact_url,
    setup_retry_pauses,
    sqlite_busy,
    sqlite_path,
)
from sagagraph.errors import ConfigurationError

SETUP_WAIT = 60.0
"""Seconds to wait for another process that is creating the PostgreSQL tables."""
_SETUP_LOCK = "SELECT pg_try_advisory_lock(hashtextextended('sagagraph:setup', 0)) AS ok"
_SETUP_UNLOCK = "SELECT pg_advisory_unlock(hashtextextended('sagagraph:setup', 0)) AS ok"


@dataclass(frozen=True)
class Target:
    """The store a URL names: its kind, and where it is."""

    kind: Literal["memory", "sqlite", "postgres"]
    url: str
    """The URL as given (shown redacted in errors)."""
    path: Path = Path()
    """The SQLite file (``sqlite`` only; else the working directory, unused)."""


def target(url: str | None) -> Target:
    """The store ``url`` names (default :func:`~sagagraph.checkpoints.urls.default_db_url`);
    ConfigurationError for a URL no checkpointer can use (a SQLite file whose folder is
    missing included)."""
    url = url or default_db_url()
    if url in ("memory", "memory://"):
        return Target("memory", url)
    if url.startswith("sqlite:///"):
        path = sqlite_path(url)
        if not path.parent.is_dir():
            raise ConfigurationError(f"checkpointer url {url!r}: folder {path.parent} is missing")
        if path.is_dir():
            raise ConfigurationError(f"checkpointer url {url!r}: {path} is a folder, not a file")
        return Target("sqlite", url, path)
    if url.split(":", 1)[0].lower() in ("postgresql", "postgres"):
        return Target("postgres", url)
    raise ConfigurationError(
        f"checkpointer url {redact_url(url)!r}: expected sqlite:///PATH, memory:// "
        "or postgresql://..."
    )


@contextmanager
def refused(where: Target, what: str, *errors: type[BaseException]) -> Iterator[None]:
    """Turn ``errors`` raised in the block into one ConfigurationError line:
    ``checkpointer url '<url>': <what>: <the driver's first line>``, passwords hidden."""
    try:
        yield
    except errors as error:
        cause = redact_text(first_line(error), where.url)
        raise ConfigurationError(
            f"checkpointer url {redact_url(where.url)!r}: {what}: {cause}"
        ) from None


def postgres_missing() -> ConfigurationError:
    return ConfigurationError(
        "postgres checkpointer needs the extra: pip install 'sagagraph[postgres]'"
    )


# --- set-ups, written once: generators of what they need done ---------------------------------


@dataclass(frozen=True)
class Call:
    """Call ``fn`` (blocking, or a coroutine function the async driver awaits); its value or
    its error is sent back."""

    fn: Callable[[], Any]


@dataclass(frozen=True)
class Pause:
    """Wait ``seconds``."""

    seconds: float


SetUp = Generator[Call | Pause, Any, None]


def sqlite_setup(setup: Callable[[], Any]) -> SetUp:
    """``setup`` (the saver's), tried again while the file is busy: LangGraph's ``setup``
    starts with ``PRAGMA journal_mode=WAL``, which SQLite may refuse at once
    (:func:`~sagagraph.checkpoints.urls.setup_retry_pauses` says when and why)."""
    for pause in setup_retry_pauses():
        try:
            yield Call(setup)
            return
        except sqlite3.OperationalError as error:
            if not sqlite_busy(error):
                raise
        yield Pause(pause)
    yield Call(setup)


def postgres_setup(setup: Callable[[], Any], query: Callable[[str], Any]) -> SetUp:
    """``setup`` (the saver's) one process at a time, under an advisory lock ``query`` takes.

    Concurrent first-time setups on a fresh database race (duplicate key in
    checkpoint_migrations or pg_type). The lock is polled, not awaited: a session blocked in
    pg_advisory_lock deadlocks with the migrations' CREATE INDEX CONCURRENTLY.
    """
    deadline = time.monotonic() + SETUP_WAIT
    while not (yield Call(lambda: query(_SETUP_LOCK)))["ok"]:
        if time.monotonic() > deadline:
            raise ConfigurationError(
                "postgres checkpointer: another process is still creating the tables"
            )
        yield Pause(0.05)
    try:
        yield Call(setup)
    finally:
        yield Call(lambda: query(_SETUP_UNLOCK))


def next_request(steps: SetUp, sent: Any, error: BaseException | None) -> Call | Pause | None:
    """The set-up's next request, sent what the last one returned or thrown what it raised;
    None once the set-up is done."""
    try:
        return steps.send(sent) if error is None else steps.throw(error)
    except StopIteration:
        return None


def set_up(steps: SetUp) -> None:
    """The sync driver of a set-up: each :class:`Call` made, each :class:`Pause` slept."""
    sent: Any = None
    error: BaseException | None = None
    while (request := next_request(steps, sent, error)) is not None:
        sent, error = None, None
        if isinstance(request, Pause):
            time.sleep(request.seconds)
            continue
        try:
            sent = request.fn()
        except Exception as raised:
            error = raised


# --- the sync checkpointers --------------------------------------------------------------------


@contextmanager
def open_checkpointer(url: str | None = None) -> Iterator[BaseCheckpointSaver[str]]:
    """Open the checkpointer a URL names (default: ``SAGAGRAPH_DB``, else a SQLite file in the
    working directory); close it on exit. Tables are created when missing. Errors name the
    URL (with its password hidden)."""
    where = target(url)
    if where.kind == "memory":
        yield InMemorySaver()
    elif where.kind == "sqlite":
        with _open_sqlite(where) as sqlite_saver:
            yield sqlite_saver
    else:
        with _open_postgres(where) as postgres_saver:
            yield postgres_saver


@contextmanager
def _open_sqlite(where: Target) -> Iterator[SagaSqliteSaver]:
    with refused(where, "cannot open", sqlite3.Error):
        # check_same_thread=False: the saver serialises use of the connection with its lock,
        # and sagas run from worker threads (timeouts, concurrent sagas).
        conn = sqlite3.connect(
            str(where.path), check_same_thread=False, timeout=SQLITE_BUSY_TIMEOUT
        )
    with closing(conn):
        saver = SagaSqliteSaver(conn)
        saver.lease_file = lease_file(where.path)
        with refused(where, "not a usable SQLite database", sqlite3.Error):
            set_up(sqlite_setup(saver.setup))
        yield saver


@contextmanager
def _open_postgres(where: Target) -> Iterator[BaseCheckpointSaver[str]]:
    try:  # the postgres extra
        from psycopg import Connection
        from psycopg import Error as PsycopgError

        from sagagraph.checkpoints.pg_limits import with_connection_limits
        from sagagraph.checkpoints.postgres_savers import SagaPostgresSaver
    except ImportError:  # pragma: no cover - depends on installed extras
        raise postgres_missing() from None
    with ExitStack() as stack:
        with refused(where, "cannot connect", PsycopgError):
            saver = stack.enter_context(
                SagaPostgresSaver.from_conn_string(with_connection_limits(where.url))
            )
            conn = saver.conn
            assert isinstance(conn, Connection)  # from_conn_string: one connection, no pool
            set_up(postgres_setup(saver.setup, lambda sql: conn.execute(sql).fetchone()))
        yield saver
