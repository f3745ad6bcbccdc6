"""``open_checkpointer(url)``: LangGraph's savers, chosen by URL
(:mod:`sagagraph.checkpoints.urls`), tables created when missing. A URL that cannot be used
fails with one line, a ConfigurationError naming the URL with any password hidden.

The core is written once, here, for :func:`open_checkpointer` and
:func:`~sagagraph.checkpoints.async_factory.open_async_checkpointer`: what a URL names
(:func:`target`), its one-line errors (:func:`refused`), and the schedules of the set-ups (a
busy SQLite file is tried again: :func:`~sagagraph.checkpoints.urls.setup_retry_pauses`; one
process at a time creates PostgreSQL's tables: :func:`setup_lock_polls`). The two drivers only
connect and wait, one blocking, one awaiting.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from sagagraph.checkpoints.savers import SagaSqliteSaver
from sagagraph.checkpoints.urls import (
    GROUP_POSTGRES_SCHEMES,
    GROUP_SQLITE,
    SQLITE_BUSY_TIMEOUT,
    default_db_url,
    first_line,
    lease_file,
    postgres_conninfo,
    redact_text,
    redact_url,
    sqlite_path,
    while_busy,
)
from sagagraph.errors import ConfigurationError

SETUP_WAIT = 60.0
"""Seconds to wait for another process that is creating the PostgreSQL tables."""
SETUP_LOCK = "SELECT pg_try_advisory_lock(hashtextextended('sagagraph:setup', 0)) AS ok"
SETUP_UNLOCK = "SELECT pg_advisory_unlock(hashtextextended('sagagraph:setup', 0))"


@dataclass(frozen=True)
class Target:
    """The store a URL names: its kind, and where it is."""

    kind: Literal["memory", "sqlite", "postgres"]
    url: str
    """The URL as given (shown redacted in errors)."""
    path: Path = Path()
    """The SQLite file (``sqlite`` only; else the working directory, unused)."""
    group: bool = False
    """``sqlite+group:///`` or ``postgresql+group://``: a group-commit saver keeps the
    store."""


def target(url: str | None) -> Target:
    """The store ``url`` names (default :func:`~sagagraph.checkpoints.urls.default_db_url`);
    ConfigurationError for a URL no checkpointer can use (a SQLite file whose folder is
    missing included)."""
    url = url or default_db_url()
    if url in ("memory", "memory://"):
        return Target("memory", url)
    if url.startswith(("sqlite:///", GROUP_SQLITE)):
        path = sqlite_path(url)
        if not path.parent.is_dir():
            raise ConfigurationError(f"checkpointer url {url!r}: folder {path.parent} is missing")
        if path.is_dir():
            raise ConfigurationError(f"checkpointer url {url!r}: {path} is a folder, not a file")
        return Target("sqlite", url, path, url.startswith(GROUP_SQLITE))
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("postgresql", "postgres", *GROUP_POSTGRES_SCHEMES):
        return Target("postgres", url, group=scheme in GROUP_POSTGRES_SCHEMES)
    raise ConfigurationError(
        f"checkpointer url {redact_url(url)!r}: expected sqlite:///PATH, "
        "sqlite+group:///PATH, memory://, postgresql://... or postgresql+group://..."
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
    """The error of a PostgreSQL URL where the postgres extra is not installed."""
    return ConfigurationError(
        "postgres checkpointer needs the extra: make extra EXTRA=postgres, in the checkout"
    )


def setup_lock_polls() -> Iterator[float]:
    """The pauses between polls of the lock under which one process at a time creates the
    PostgreSQL tables; ConfigurationError after :data:`SETUP_WAIT` seconds.

    Concurrent first-time setups on a fresh database race (duplicate key in
    checkpoint_migrations or pg_type). The lock is polled, not awaited: a session blocked in
    pg_advisory_lock deadlocks with the migrations' CREATE INDEX CONCURRENTLY.
    """
    deadline = time.monotonic() + SETUP_WAIT
    while time.monotonic() <= deadline:
        yield 0.05
    raise ConfigurationError("postgres checkpointer: another process is still creating the tables")


def took_lock(row: Mapping[str, object] | None) -> bool:
    """True when :data:`SETUP_LOCK`'s row says the lock was taken."""
    return bool(row and row["ok"])


def set_up_under_lock(conn: Any, setup: Callable[[], None]) -> None:
    """Run ``setup`` while this connection holds the PostgreSQL setup lock
    (:func:`setup_lock_polls`), so one process at a time creates the tables."""
    for pause in setup_lock_polls():
        if took_lock(conn.execute(SETUP_LOCK).fetchone()):
            break
        time.sleep(pause)
    try:
        setup()
    finally:
        conn.execute(SETUP_UNLOCK)


# --- the sync checkpointers --------------------------------------------------------------------


@contextmanager
def open_checkpointer(url: str | None = None) -> Iterator[BaseCheckpointSaver[str]]:
    """Open the checkpointer a URL names (default: ``SAGAGRAPH_DB``, else a SQLite file in the
    working directory); close it on exit. Tables are created when missing. Errors name the
    URL (with its password hidden)."""
    where = target(url)
    if where.kind == "memory":
        yield InMemorySaver()
    elif where.group:
        with opened_group_saver(where) as group_saver:
            yield group_saver
    elif where.kind == "sqlite":
        with _open_sqlite(where) as sqlite_saver:
            yield sqlite_saver
    else:
        with _open_postgres(where) as postgres_saver:
            yield postgres_saver


@contextmanager
def opened_group_saver(where: Target) -> Iterator[BaseCheckpointSaver[str]]:
    """The group-commit saver of ``where``'s file or database (sync and async methods
    alike), closed on exit after its last commit."""
    if where.kind == "postgres":
        with _open_postgres_group(where) as postgres_saver:
            yield postgres_saver
        return
    from sagagraph.checkpoints.group_commit import SagaGroupCommitSqliteSaver

    with refused(where, "not a usable SQLite database", sqlite3.Error):
        saver = SagaGroupCommitSqliteSaver(str(where.path))
    try:
        saver.lease_file = lease_file(where.path)
        yield saver
    finally:
        saver.close()


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
            while_busy(saver.setup)
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
            assert isinstance(saver.conn, Connection)  # from_conn_string: one connection
            set_up_under_lock(saver.conn, saver.setup)
        yield saver


@contextmanager
def _open_postgres_group(where: Target) -> Iterator[BaseCheckpointSaver[str]]:
    try:  # the postgres extra
        from psycopg import Error as PsycopgError
        from psycopg_pool import PoolTimeout

        from sagagraph.checkpoints.group_commit_pg import SagaGroupCommitPostgresSaver
        from sagagraph.checkpoints.pg_limits import with_connection_limits
    except ImportError:  # pragma: no cover - depends on installed extras
        raise postgres_missing() from None
    conninfo = with_connection_limits(postgres_conninfo(where.url))
    with refused(where, "cannot connect", PsycopgError, PoolTimeout):
        saver = SagaGroupCommitPostgresSaver(conninfo)
    try:
        with refused(where, "cannot connect", PsycopgError, PoolTimeout):
            set_up_under_lock(saver.lease_connection, saver.setup)
        yield saver
    finally:
        saver.close()
