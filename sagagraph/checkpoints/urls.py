"""Where a store is: ``sqlite:///path/to/file.sqlite`` (the default), ``memory://`` (one
process, nothing kept), ``postgresql://user@host:5432/db`` (shared by many processes on many
machines), and the group-commit savers' ``sqlite+group:///path`` and
``postgresql+group://...``; URLs shown with their password hidden; the SQLite settings
every SQLite store of sagagraph shares. No LangGraph here, so a command that needs only a
URL starts fast.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from sagagraph.errors import ConfigurationError
from sagagraph.redaction import MASK, redact, url_password

DEFAULT_DB_URL = "sqlite:///sagagraph.sqlite"
GROUP_SQLITE = "sqlite+group:///"
"""The scheme of a SQLite file kept by the group-commit saver
(:mod:`sagagraph.checkpoints.group_commit`): ``sqlite+group:///path``."""
GROUP_POSTGRES_SCHEMES = ("postgresql+group", "postgres+group")
"""The schemes of a PostgreSQL database kept by the group-commit saver
(:mod:`sagagraph.checkpoints.group_commit_pg`): ``postgresql+group://user@host/db``."""
DEFAULT_BUS_URL = "sqlite:///sagagraph-events.sqlite"
"""The event log of choreographed sagas when neither ``--bus`` nor a variable names one."""
SQLITE_BUSY_TIMEOUT = 30.0
"""Seconds a SQLite write waits for another process's write before failing."""

_SETUP_RETRY_DELAYS = (0.01, 0.02, 0.05, 0.1, 0.2)
"""Pauses between attempts of a SQLite setup that found the file busy (the last one repeats)."""


def default_db_url() -> str:
    """``SAGAGRAPH_DB`` if set, else a SQLite file in the working directory."""
    return os.environ.get("SAGAGRAPH_DB") or DEFAULT_DB_URL


def default_bus_url() -> str:
    """``SAGAGRAPH_BUS``, else ``SAGAGRAPH_AMQP_URL``, else a SQLite log in the working
    directory."""
    env = os.environ
    return env.get("SAGAGRAPH_BUS") or env.get("SAGAGRAPH_AMQP_URL") or DEFAULT_BUS_URL


def url_scheme(url: str) -> str:
    """The scheme of ``url``, lower case (``postgresql+group``)."""
    return url.split(":", 1)[0].lower()


def is_postgres_url(url: str) -> bool:
    """True for a PostgreSQL URL, kept by LangGraph's saver or by the group-commit one."""
    return url_scheme(url) in ("postgresql", "postgres", *GROUP_POSTGRES_SCHEMES)


def postgres_conninfo(url: str) -> str:
    """The URL psycopg connects with: a ``postgresql+group://`` URL without ``+group``."""
    scheme = url_scheme(url)
    if scheme in GROUP_POSTGRES_SCHEMES:
        return scheme.removesuffix("+group") + url[len(scheme) :]
    return url


def redact_url(url: str) -> str:
    """The URL with any password (``user:pw@`` or ``?password=``) replaced by ``***``.

    By pattern over the text, not by parsing: a malformed URL keeps its password hidden too.
    """
    return redact(url)


def redact_text(text: str, url: str) -> str:
    """``text`` (a driver's error message) with the URL's password, and any other, hidden."""
    password = url_password(url)
    if password:
        text = text.replace(password, MASK)
    return redact(text)


def first_line(error: BaseException) -> str:
    """The first line of an error's message (a driver's may run over several)."""
    lines = str(error).strip().splitlines()
    return lines[0].strip() if lines else type(error).__name__


def sqlite_path(url: str) -> Path:
    """The file a ``sqlite:///`` (or ``sqlite+group:///``) URL names (``sqlite:///rel.db`` or
    ``sqlite:////abs.db``).

    A query or fragment (``?mode=ro``, ``#...``) is refused: no parameter is supported, and
    taken as part of the path it would create a file literally named ``x.sqlite?mode=ro``.
    """
    path = url[len(GROUP_SQLITE if url.startswith(GROUP_SQLITE) else "sqlite:///") :]
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


LEASE_FILE_SUFFIX = ".leases"
"""The file of a SQLite database's saga leases sits beside it: ``sagas.sqlite.leases``."""


def lease_file(database: Path) -> str:
    """The file whose byte locks are the leases of the sagas ``database`` holds
    (:mod:`sagagraph.graph.leases`)."""
    return f"{database.resolve()}{LEASE_FILE_SUFFIX}"


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


def while_busy(action: Callable[[], object]) -> None:
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
    while_busy(lambda: conn.execute("PRAGMA journal_mode=WAL"))
