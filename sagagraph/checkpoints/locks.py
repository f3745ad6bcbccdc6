"""The saga store's lock tables: semantic locks that outlive the process that took them.

A lock is a row of ``sagagraph_locks`` (key, saga, step, since) in the database the saga's
checkpoints live in, a saga waiting for a key is a row of ``sagagraph_lock_waits``, and a gated
tool call an operator approved is a row of ``sagagraph_approvals`` (call key, saga, since),
written before the call runs and kept until the saga ends: the tables are sagagraph's own,
beside LangGraph's (never in them), created on first use. A process killed while its saga holds
a lock leaves the row: the saga is unfinished, and the lock is released when the saga ends,
whichever process finishes or compensates it (:mod:`sagagraph.graph.locking`).

:func:`open_lock_table` finds the database from the saver the way the saga leases do
(:mod:`sagagraph.graph.leases`): a SQLite saver's database (named by its ``lease_file``, or
its main database), a ``PostgresSaver``'s connection (or pool) parameters. Any other saver
(memory) has none here; the graph then keeps locks in the process
(:mod:`sagagraph.graph.locking`).
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from pathlib import Path
from typing import Any, TypedDict

from sagagraph.checkpoints.urls import LEASE_FILE_SUFFIX


class LockRow(TypedDict):
    """One held lock (the kernel's ``LockRecord``, spelt here: storage names no kernel)."""

    key: str
    saga_id: str
    step: str
    since: str


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sagagraph_locks (key TEXT PRIMARY KEY, saga_id TEXT NOT NULL, "
    "step TEXT NOT NULL, since TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sagagraph_lock_waits (saga_id TEXT PRIMARY KEY, key TEXT NOT NULL)",
)
_APPROVALS = (
    "CREATE TABLE IF NOT EXISTS sagagraph_approvals (call_key TEXT PRIMARY KEY, "
    "saga_id TEXT NOT NULL, since TEXT NOT NULL)"
)
"""Created apart from the lock tables: a store whose lock tables predate it gains it on the
first approval."""
_NOW_SQLITE = "strftime('%Y-%m-%dT%H:%M:%SZ', 'now')"
_NOW_PG = "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"


class SqlLockTable:
    """A lock table (:class:`~sagagraph.saga.locks.LockTable`) on one connection of its own
    (autocommit), with the placeholder and clock of its database."""

    def __init__(
        self,
        connection: Any,
        placeholder: str,
        now_sql: str,
        exists_sql: str,
        approvals_exist_sql: str,
    ) -> None:
        self._conn = connection
        self._p = placeholder
        self._now = now_sql
        self._exists_sql = exists_sql
        self._approvals_exist_sql = approvals_exist_sql
        self._ready = False
        self._approvals_ready = False
        self._mutex = threading.Lock()
        # The connection closes with the table (its saver gone), not at the interpreter's end.
        self._closer = weakref.finalize(self, connection.close)

    def _created(self) -> None:
        """Create the tables before the first write: reading a store (``status``) or ending a
        saga that took no lock writes nothing."""
        if not self._ready:
            for statement in _SCHEMA:
                try:
                    self._run(statement, ())
                except Exception:
                    # PostgreSQL: two processes creating a table at once, one of them fails
                    # although the table now exists.
                    if not self._exist():
                        raise
            self._ready = True

    def _exist(self) -> bool:
        """True when the tables exist (some process took a lock in this store)."""
        if not self._ready:
            self._ready = bool(self._run(self._exists_sql, ())[0][0])
        return self._ready

    def close(self) -> None:
        """Close the table's connection."""
        self._closer()

    def _run(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        sql = sql.replace("?", self._p)
        with self._mutex:
            cursor = self._conn.execute(sql, params)
            rows = cursor.fetchall() if cursor.description is not None else []
        return [tuple(row) for row in rows]

    def try_acquire(self, key: str, saga_id: str, step: str) -> str | None:
        self._created()
        for _ in range(3):
            self._run(
                "INSERT INTO sagagraph_locks (key, saga_id, step, since) "
                f"VALUES (?, ?, ?, {self._now}) ON CONFLICT (key) DO NOTHING",
                (key, saga_id, step),
            )
            holder = self.holder(key)
            if holder is not None:
                return None if holder == saga_id else holder
            # Released between the two statements: free now, so insert again.
        return ""

    def holder(self, key: str) -> str | None:
        if not self._exist():
            return None
        rows = self._run("SELECT saga_id FROM sagagraph_locks WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def release_saga(self, saga_id: str) -> int:
        if not self._exist():
            return 0
        held = len(self.held(saga_id))
        self._run("DELETE FROM sagagraph_locks WHERE saga_id = ?", (saga_id,))
        self._run("DELETE FROM sagagraph_lock_waits WHERE saga_id = ?", (saga_id,))
        if self._approvals_exist():
            self._run("DELETE FROM sagagraph_approvals WHERE saga_id = ?", (saga_id,))
        return held

    def release(self, key: str, saga_id: str, step: str) -> bool:
        if not self._exist():
            return False
        rows = self._run(
            "DELETE FROM sagagraph_locks WHERE key = ? AND saga_id = ? AND step = ? RETURNING key",
            (key, saga_id, step),
        )
        return bool(rows)

    def held(self, saga_id: str | None = None) -> list[LockRow]:
        if not self._exist():
            return []
        columns = "SELECT key, saga_id, step, since FROM sagagraph_locks"
        if saga_id is None:
            rows = self._run(f"{columns} ORDER BY key", ())
        else:
            rows = self._run(f"{columns} WHERE saga_id = ? ORDER BY key", (saga_id,))
        return [{"key": k, "saga_id": s, "step": st, "since": t} for k, s, st, t in rows]

    def set_waiting(self, saga_id: str, key: str | None) -> None:
        if key is None:
            if not self._exist():
                return
            self._run("DELETE FROM sagagraph_lock_waits WHERE saga_id = ?", (saga_id,))
            return
        self._created()
        self._run(
            "INSERT INTO sagagraph_lock_waits (saga_id, key) VALUES (?, ?) "
            "ON CONFLICT (saga_id) DO UPDATE SET key = excluded.key",
            (saga_id, key),
        )

    def waiting_for(self, saga_id: str) -> str | None:
        if not self._exist():
            return None
        rows = self._run("SELECT key FROM sagagraph_lock_waits WHERE saga_id = ?", (saga_id,))
        return str(rows[0][0]) if rows else None

    def _approvals_exist(self) -> bool:
        if not self._approvals_ready:
            self._approvals_ready = bool(self._run(self._approvals_exist_sql, ())[0][0])
        return self._approvals_ready

    def note_approved(self, call: str, saga_id: str) -> None:
        if not self._approvals_ready:
            self._created()  # the lock tables too: release_saga reads them first
            try:
                self._run(_APPROVALS, ())
            except Exception:
                if not self._approvals_exist():  # PostgreSQL: created at once elsewhere
                    raise
            self._approvals_ready = True
        # Autocommit: the mark is durable before the call runs.
        self._run(
            "INSERT INTO sagagraph_approvals (call_key, saga_id, since) "
            f"VALUES (?, ?, {self._now}) ON CONFLICT (call_key) DO NOTHING",
            (call, saga_id),
        )

    def approved(self, call: str) -> bool:
        if not self._approvals_exist():
            return False
        return bool(self._run("SELECT 1 FROM sagagraph_approvals WHERE call_key = ?", (call,)))


def sqlite_lock_table(path: str | Path) -> SqlLockTable:
    """The lock tables in the SQLite database at ``path`` (WAL, as the savers set it)."""
    conn = sqlite3.connect(str(path), timeout=60, isolation_level=None, check_same_thread=False)
    exists = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '{}'"
    return SqlLockTable(
        conn,
        "?",
        _NOW_SQLITE,
        exists.format("sagagraph_locks"),
        exists.format("sagagraph_approvals"),
    )


def postgres_lock_table(conninfo: str) -> SqlLockTable:
    """The lock tables in the PostgreSQL database ``conninfo`` names."""
    import psycopg

    conn = psycopg.connect(conninfo, autocommit=True)
    exists = "SELECT to_regclass('{}') IS NOT NULL"
    return SqlLockTable(
        conn,
        "%s",
        _NOW_PG,
        exists.format("sagagraph_locks"),
        exists.format("sagagraph_approvals"),
    )


def open_lock_table(checkpointer: Any) -> SqlLockTable | None:
    """The lock tables of the database ``checkpointer`` keeps its sagas in, on a connection of
    their own; None when the saver's database cannot be told (memory, a saver of its own)."""
    place = _place(checkpointer)
    return _open(place) if place is not None else None


def _open(place: str) -> SqlLockTable:
    kind, _, where = place.partition(":")
    return sqlite_lock_table(where) if kind == "sqlite" else postgres_lock_table(where)


def _place(checkpointer: Any) -> str | None:
    """``sqlite:<file>`` or ``postgres:<conninfo>`` of the saver's database; None for a
    store of this process alone."""
    named = getattr(checkpointer, "lease_file", None)
    if isinstance(named, str) and named.endswith(LEASE_FILE_SUFFIX):
        # sagagraph's SQLite savers, the async one included, name their database's lease file.
        return f"sqlite:{named.removesuffix(LEASE_FILE_SUFFIX)}"
    from langgraph.checkpoint.sqlite import SqliteSaver

    if isinstance(checkpointer, SqliteSaver):
        with checkpointer.cursor(transaction=False) as cur:
            rows = cur.execute("PRAGMA database_list").fetchall()
        file = next((f for _, name, f in rows if name == "main" and f), None)
        return f"sqlite:{Path(file).resolve()}" if file else None
    own = getattr(checkpointer, "conninfo", None)  # the PostgreSQL group-commit saver's
    if isinstance(own, str) and own and hasattr(checkpointer, "lease_connection"):
        return f"postgres:{own}"
    conn = getattr(checkpointer, "conn", None)
    conninfo = getattr(conn, "conninfo", None)  # a psycopg pool
    if conninfo is None:
        info = getattr(conn, "info", None)
        conninfo = getattr(info, "dsn", None)  # a psycopg connection: its dsn hides the password
        password = getattr(info, "password", None)
        if isinstance(conninfo, str) and isinstance(password, str) and password:
            from psycopg.conninfo import make_conninfo

            conninfo = make_conninfo(conninfo, password=password)
    return f"postgres:{conninfo}" if isinstance(conninfo, str) and conninfo else None
