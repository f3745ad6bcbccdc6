"""``open_checkpointer(url)``: the real LangGraph checkpointers, chosen by URL.

- ``sqlite:///path/to/file.sqlite`` (the default: ``sqlite:///sagagraph.sqlite``),
- ``memory://`` (one process, nothing kept),
- ``postgresql://user@host:5432/db`` (shared by many processes on many machines).

A URL that cannot be used fails with one line, a ConfigurationError that names the URL with
any password hidden.

LangGraph is imported only when a checkpointer is opened: ``default_db_url``, ``redact_url``
and ``sqlite_path`` serve the CLI's reading commands, which often need no LangGraph at all.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sagagraph.errors import ConfigurationError
from sagagraph.redaction import MASK, redact, url_password

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

DEFAULT_DB_URL = "sqlite:///sagagraph.sqlite"
SQLITE_BUSY_TIMEOUT = 30.0
"""Seconds a SQLite write waits for another process's write before failing."""


_SETUP_RETRY_DELAYS = (0.01, 0.02, 0.05, 0.1, 0.2)
"""Pauses between attempts of a SQLite setup that found the file busy (the last one repeats)."""


def sqlite_busy(error: sqlite3.Error) -> bool:
    """True for SQLITE_BUSY: another connection holds the lock this statement needs."""
    return getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY


def setup_retry_pauses() -> Iterator[float]:
    """The pauses between attempts of a SQLite ``setup`` that found the file busy, for up to
    :data:`SQLITE_BUSY_TIMEOUT` seconds; then the last attempt's error stands.

    LangGraph's ``setup`` starts with ``PRAGMA journal_mode=WAL``, which SQLite answers with
    SQLITE_BUSY at once, without its busy handler (the connection's timeout), while another
    connection holds a write transaction on a file still in rollback-journal mode: what a
    worker sees while another one, started with it on a fresh file, creates the tables.
    ``setup`` is idempotent (``IF NOT EXISTS``), so it is tried again.
    """
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT
    for attempt in itertools.count():
        pause = _SETUP_RETRY_DELAYS[min(attempt, len(_SETUP_RETRY_DELAYS) - 1)]
        if time.monotonic() + pause > deadline:
            return
        yield pause


def _while_busy(action: Callable[[], object]) -> None:
    """Run ``action``, again after a pause while SQLite answers SQLITE_BUSY
    (:func:`setup_retry_pauses`); past the busy timeout the last error stands."""
    for pause in setup_retry_pauses():
        try:
            action()
            return
        except sqlite3.OperationalError as error:
            if not sqlite_busy(error):
                raise
        time.sleep(pause)
    action()


def enable_wal(conn: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode=WAL`` on ``conn``, tried again while the file is busy
    (:func:`setup_retry_pauses` says why SQLite does not wait there itself)."""
    _while_busy(lambda: conn.execute("PRAGMA journal_mode=WAL"))


def _setup_sqlite(saver: Any) -> None:
    """``saver.setup()``, tried again while the file is busy (:func:`setup_retry_pauses`)."""
    _while_busy(saver.setup)


def default_db_url() -> str:
    """``SAGAGRAPH_DB`` if set, else a SQLite file in the working directory."""
    return os.environ.get("SAGAGRAPH_DB") or DEFAULT_DB_URL


def redact_url(url: str) -> str:
    """The URL with any password (``user:pw@`` or ``?password=``) replaced by ``***``.

    By pattern over the text, not by parsing: a malformed URL keeps its password hidden too.
    """
    return redact(url)


def _redact_text(text: str, url: str) -> str:
    """``text`` (a driver's error message) with the URL's password, and any other, hidden."""
    password = url_password(url)
    if password:
        text = text.replace(password, MASK)
    return redact(text)


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0].strip() if lines else type(error).__name__


def sqlite_path(url: str) -> Path:
    """The file a ``sqlite:///`` URL names (``sqlite:///rel.db`` or ``sqlite:////abs.db``).

    A query or fragment (``?mode=ro``, ``#...``) is refused: no parameter is supported, and
    taken as part of the path it would create a file literally named ``x.sqlite?mode=ro``.
    """
    path = url[len("sqlite:///") :]
    extra = next((mark for mark in ("?", "#") if mark in path), None)
    if extra is not None:
        part = path[path.index(extra) :]
        raise ConfigurationError(
            f"checkpointer url {url!r}: parameters ({part!r}) are not supported on a SQLite "
            f"url; give the file path only: sqlite:///{path[: path.index(extra)]}"
        )
    if not path:
        raise ConfigurationError(f"checkpointer url {url!r}: no file path after sqlite:///")
    return Path(path)


@contextmanager
def open_checkpointer(url: str | None = None) -> Iterator[BaseCheckpointSaver[str]]:
    """Open the checkpointer a URL names (default :func:`default_db_url`); close it on exit.

    Tables are created when missing. Errors name the URL (with its password hidden).
    """
    url = url or default_db_url()
    scheme = url.split(":", 1)[0].lower()
    if url in ("memory", "memory://"):
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
    elif url.startswith("sqlite:///"):
        with _open_sqlite(url) as sqlite_saver:
            yield sqlite_saver
    elif scheme in ("postgresql", "postgres"):
        with _open_postgres(url) as postgres_saver:
            yield postgres_saver
    else:
        raise ConfigurationError(
            f"checkpointer url {redact_url(url)!r}: expected sqlite:///PATH, memory:// "
            "or postgresql://..."
        )


@contextmanager
def _open_sqlite(url: str) -> Iterator[BaseCheckpointSaver[str]]:
    from sagagraph.checkpoints.savers import SagaSqliteSaver

    path = sqlite_path(url)
    if not path.parent.is_dir():
        raise ConfigurationError(f"checkpointer url {url!r}: folder {path.parent} is missing")
    if path.is_dir():
        raise ConfigurationError(f"checkpointer url {url!r}: {path} is a folder, not a file")
    try:
        # check_same_thread=False: the saver serialises use of the connection with its lock,
        # and sagas run from worker threads (timeouts, concurrent sagas).
        conn = sqlite3.connect(str(path), check_same_thread=False, timeout=SQLITE_BUSY_TIMEOUT)
    except sqlite3.Error as error:
        raise ConfigurationError(
            f"checkpointer url {url!r}: cannot open: {_first_line(error)}"
        ) from None
    try:
        saver = SagaSqliteSaver(conn)
        try:
            _setup_sqlite(saver)
        except sqlite3.Error as error:
            raise ConfigurationError(
                f"checkpointer url {url!r}: not a usable SQLite database: {_first_line(error)}"
            ) from None
        yield saver
    finally:
        conn.close()


_SETUP_LOCK = "SELECT pg_try_advisory_lock(hashtextextended('sagagraph:setup', 0)) AS ok"
_SETUP_UNLOCK = "SELECT pg_advisory_unlock(hashtextextended('sagagraph:setup', 0))"
SETUP_WAIT = 60.0
"""Seconds to wait for another process that is creating the tables."""


def _setup_once(saver: Any) -> None:
    """``saver.setup()``, one process at a time.

    Concurrent first-time setups on a fresh database race (duplicate key in
    checkpoint_migrations or pg_type). The lock is polled, not awaited: a session blocked in
    pg_advisory_lock deadlocks with the migrations' CREATE INDEX CONCURRENTLY.
    """
    deadline = time.monotonic() + SETUP_WAIT
    while not saver.conn.execute(_SETUP_LOCK).fetchone()["ok"]:
        if time.monotonic() > deadline:
            raise ConfigurationError(
                "postgres checkpointer: another process is still creating the tables"
            )
        time.sleep(0.05)
    try:
        saver.setup()
    finally:
        saver.conn.execute(_SETUP_UNLOCK)


@contextmanager
def _open_postgres(url: str) -> Iterator[BaseCheckpointSaver[str]]:
    try:
        from psycopg import Error as PsycopgError

        from sagagraph.checkpoints.pg_limits import with_connection_limits
        from sagagraph.checkpoints.postgres_savers import SagaPostgresSaver
    except ImportError:  # pragma: no cover - depends on installed extras
        raise ConfigurationError(
            "postgres checkpointer needs the extra: pip install 'sagagraph[postgres]'"
        ) from None
    with ExitStack() as stack:
        try:
            saver = stack.enter_context(
                SagaPostgresSaver.from_conn_string(with_connection_limits(url))
            )
            _setup_once(saver)
        except PsycopgError as error:
            cause = _redact_text(_first_line(error), url)
            raise ConfigurationError(
                f"checkpointer url {redact_url(url)!r}: cannot connect: {cause}"
            ) from None
        yield saver
