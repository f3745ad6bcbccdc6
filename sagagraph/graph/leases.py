"""Saga leases: at most one process (and one thread) drives a saga at a time.

A process holds a saga's lease while it runs, resumes, resolves or rolls back that saga, so
``recover`` in another process skips a saga that is still alive instead of running it twice.
The lease dies with the process that holds it: a crash releases it at once, and there is no
expiry to tune.

- PostgreSQL: a session advisory lock on the saver's own connection, its public ``conn``
  used under its public ``lock`` as the saver uses them (the group-commit saver's
  ``lease_connection`` under its ``lease_lock``, sync and async alike)
  (``pg_try_advisory_lock(hashtextextended('sagagraph:<id>', 0))``); the server drops it
  when the connection closes, which a killed process's connection does.
- SQLite: a POSIX record lock on one byte of ``<database>.leases``, at an offset hashed from
  the saga id; the kernel drops it when the process exits (SQLite is one machine's store,
  and so is this lock). The file is the one a saver names in its ``lease_file`` attribute,
  as the factories' sync and async savers do (so each refuses a saga the other drives), or a
  plain ``SqliteSaver``'s database's.
- Any other saver (memory, the async PostgreSQL one on a pool, LangGraph's own
  ``AsyncSqliteSaver``, which does not say its file): this process only.

Threads of one process are told apart by an in-process registry, because the locks above
belong to a process (SQLite) or a connection (PostgreSQL), not to a thread.
"""

from __future__ import annotations

import hashlib
import os
import struct
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver

from sagagraph.checkpoints.savers import lending
from sagagraph.checkpoints.urls import lease_file
from sagagraph.errors import SagaBusyError
from sagagraph.saga.names import validate_saga_id

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: SQLite leases fall back to this process
    fcntl = None  # type: ignore[assignment]

_held: set[tuple[str, str]] = set()
_held_lock = threading.Lock()
_lease_files: dict[str, int] = {}
_lease_files_lock = threading.Lock()

Release = Callable[[], None]


@contextmanager
def saga_lease(checkpointer: Any, saga_id: str) -> Iterator[None]:
    """Hold ``saga_id``'s lease for the block; SagaBusyError at once when someone else has it.

    ``checkpointer`` is the saver the saga lives in (``app.checkpointer``); the block's steps
    may read the saga's history from it (:mod:`sagagraph.checkpoints.savers`). Never blocks:
    a saga that is busy is reported, not waited for.
    """
    saga_id = validate_saga_id(saga_id)
    scope, acquire = _backend(checkpointer)
    key = (scope, saga_id)
    with _held_lock:
        if key in _held:
            raise _busy(saga_id, "this process")
        _held.add(key)
    try:
        release = acquire(saga_id)
        if release is None:
            raise _busy(saga_id, "another process")
        try:
            if isinstance(checkpointer, BaseCheckpointSaver):
                with lending(saga_id, checkpointer):
                    yield
            else:
                yield
        finally:
            release()
    finally:
        with _held_lock:
            _held.discard(key)


def lease_is_held(checkpointer: Any, saga_id: str) -> bool:
    """True when a live process, or a thread of this one, holds ``saga_id``'s lease.

    It only looks (``F_GETLK``, ``pg_locks``) and takes no lock, so a ``recover`` trying the
    lease at the same moment is never turned away by a reader's probe. A saver whose leases
    reach no other process (memory, a pool) sees this process's only.
    """
    saga_id = validate_saga_id(saga_id)
    scope, _ = _backend(checkpointer)
    with _held_lock:
        if (scope, saga_id) in _held:
            return True
    kind, path = _kind(checkpointer)
    if kind == "file":
        return _byte_locked(path, saga_id)
    if kind == "postgres":
        return _advisory_locked(checkpointer, saga_id)
    return False


def _busy(saga_id: str, where: str) -> SagaBusyError:
    return SagaBusyError(
        f"saga {saga_id!r}: in use by {where} (it is still running); try again when it stops"
    )


Acquire = Callable[[str], Release | None]


def _backend(checkpointer: Any) -> tuple[str, Acquire]:
    """The registry scope of ``checkpointer`` and how to take a cross-process lock on it."""
    kind, path = _kind(checkpointer)
    if kind == "file":
        return f"file:{path}", lambda saga_id: _lock_byte(path, saga_id)
    if kind == "postgres":
        return f"postgres:{id(checkpointer)}", lambda saga_id: _advisory_lock(checkpointer, saga_id)
    return f"process:{id(checkpointer)}", _no_lock


_kinds: weakref.WeakKeyDictionary[Any, tuple[str, str]] = weakref.WeakKeyDictionary()
"""Each saver's kind of lease (and lease file), found once: every saga run takes a lease."""


def _kind(checkpointer: Any) -> tuple[str, str]:
    """``("file", lease file)``, ``("postgres", "")`` or ``("process", "")``."""
    with suppress(KeyError, TypeError):  # TypeError: not weakly referenceable, found each time
        return _kinds[checkpointer]
    path = _lease_file(checkpointer)
    if path is not None and fcntl is not None:
        kind = "file", path
    else:
        kind = ("postgres" if _has_own_postgres_connection(checkpointer) else "process"), ""
    with suppress(TypeError):
        _kinds[checkpointer] = kind
    return kind


def _no_lock(saga_id: str) -> Release:
    return lambda: None


# --- SQLite: a byte-range lock in a file beside the database ---------------------------------


LEASE_FILE_ATTRIBUTE = "lease_file"
"""A saver names the file to lock in this attribute (``<database>.leases``) to get
cross-process leases: sagagraph's SQLite savers do; any saver of a local file may."""


def _lease_file(checkpointer: Any) -> str | None:
    """The file whose byte locks hold this checkpointer's leases; None: no such file."""
    named = getattr(checkpointer, LEASE_FILE_ATTRIBUTE, None)
    if isinstance(named, str) and named:
        return str(Path(named).resolve())
    if isinstance(checkpointer, SqliteSaver):
        with checkpointer.cursor(transaction=False) as cur:
            rows = cur.execute("PRAGMA database_list").fetchall()
        # The main database's file; none for an in-memory database.
        return next(
            (lease_file(Path(file)) for _, name, file in rows if name == "main" and file), None
        )
    return None


def _lease_fd(path: str) -> int:
    """One descriptor per lease file for the life of the process.

    POSIX drops every lock a process holds on a file when it closes *any* descriptor of that
    file, so the descriptor is opened once and never closed.
    """
    with _lease_files_lock:
        fd = _lease_files.get(path)
        if fd is None:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            _lease_files[path] = fd
        return fd


def _offset(saga_id: str) -> int:
    """A byte offset for the saga's lock: 62 bits of a hash, so two ids practically never meet."""
    digest = hashlib.blake2b(saga_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 2


def _lock_byte(path: str, saga_id: str) -> Release | None:
    assert fcntl is not None
    fd = _lease_fd(path)
    offset = _offset(saga_id)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
    except OSError:
        return None

    def release() -> None:
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)

    return release


_FLOCK = "@hhqqi4x"
"""Linux's ``struct flock``: type, whence, start, length, pid (and padding)."""


def _byte_locked(path: str, saga_id: str) -> bool:
    """True when another process holds the saga's byte (``F_GETLK``: nothing is locked)."""
    assert fcntl is not None
    if not sys.platform.startswith("linux"):  # another struct layout: try the lock instead
        release = _lock_byte(path, saga_id)
        if release is None:
            return True
        release()
        return False
    query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, _offset(saga_id), 1, 0)
    answer = fcntl.fcntl(_lease_fd(path), fcntl.F_GETLK, query)
    return bool(struct.unpack_from("@h", answer)[0] != fcntl.F_UNLCK)


# --- PostgreSQL: a session advisory lock on the saver's connection ---------------------------


def _has_own_postgres_connection(checkpointer: Any) -> bool:
    """True for a PostgresSaver on one psycopg connection (not a pool, not a pipeline), or a
    saver with a connection for leases.

    A pool hands out a different connection for each call, and a session lock taken on one
    would stay with that connection after it went back to the pool.
    """
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import Connection
    except ImportError:  # pragma: no cover - the postgres extra is not installed
        return False
    return _has_lease_connection(checkpointer) or (
        isinstance(checkpointer, PostgresSaver)
        and isinstance(checkpointer.conn, Connection)
        and checkpointer.pipe is None
    )


def _has_lease_connection(checkpointer: Any) -> bool:
    """True for a saver that keeps a connection for leases (``lease_connection``, used under
    ``lease_lock``): the PostgreSQL group-commit saver, sync and async alike."""
    return hasattr(checkpointer, "lease_connection") and hasattr(checkpointer, "lease_lock")


_LOCK_SQL = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0)) AS ok"
_UNLOCK_SQL = "SELECT pg_advisory_unlock(hashtextextended(%s, 0)) AS ok"


# A one-bigint advisory lock shows in pg_locks as classid (high 32 bits), objid (low 32
# bits) and objsubid 1.
_HELD_SQL = (
    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted "
    "AND objsubid = 1 AND database = (SELECT oid FROM pg_database "
    "WHERE datname = current_database()) "
    "AND ((classid::bigint << 32) | objid::bigint) = hashtextextended(%s, 0)) AS held"
)


def _session(saver: Any) -> tuple[Any, Any]:
    """The connection the advisory locks go on, and the lock that serialises its use: the
    group-commit saver's lease connection, or a ``PostgresSaver``'s own connection (its lock
    serialises every use of it, the saver's own included)."""
    if _has_lease_connection(saver):
        return saver.lease_connection, saver.lease_lock
    return saver.conn, saver.lock


def _advisory_locked(saver: Any, saga_id: str) -> bool:
    conn, lock = _session(saver)
    with lock:
        row = conn.execute(_HELD_SQL, (f"sagagraph:{saga_id}",)).fetchone()
    return bool(row and row["held"])


def _advisory_lock(saver: Any, saga_id: str) -> Release | None:
    key = f"sagagraph:{saga_id}"
    conn, lock = _session(saver)
    with lock:
        row = conn.execute(_LOCK_SQL, (key,)).fetchone()
    if not row or not row["ok"]:
        return None

    def release() -> None:
        try:
            with lock:
                conn.execute(_UNLOCK_SQL, (key,))
        except Exception:  # a lost connection has released the lock already
            pass

    return release
