"""The workers' ledger: per saga, how often the queue delivered it and whether to cancel it.

One table, ``sagagraph_worker_sagas``, beside the checkpoints in the same database (every
worker, submitter and operator sees it), on a connection of its own: ``deliveries``, one more
each time a worker starts driving the saga under its lease, so a count left by dead workers
tells a poison saga (Celery and RabbitMQ do not count deliveries of a classic queue); and
``cancel_by``, ``cancel_reason``, set by ``cancel`` and read by the driving worker at each step
boundary. PostgreSQL for workers on several machines, SQLite for one; ``memory://`` has no
other process to share with and is refused.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, NamedTuple

from sagagraph.checkpoints.urls import (
    SQLITE_BUSY_TIMEOUT,
    enable_wal,
    is_postgres_url,
    postgres_conninfo,
    redact_text,
    redact_url,
    sqlite_path,
)
from sagagraph.errors import ConfigurationError

TABLE = "sagagraph_worker_sagas"
_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (saga_id TEXT PRIMARY KEY, "
    "deliveries INTEGER NOT NULL DEFAULT 0, cancel_by TEXT, cancel_reason TEXT)"
)
_DELIVER = (
    f"INSERT INTO {TABLE} (saga_id, deliveries) VALUES ({{p}}, 1) ON CONFLICT (saga_id) "
    f"DO UPDATE SET deliveries = {TABLE}.deliveries + 1 RETURNING deliveries"
)
_RESET = (
    f"INSERT INTO {TABLE} (saga_id, deliveries) VALUES ({{p}}, 0) ON CONFLICT (saga_id) "
    "DO UPDATE SET deliveries = 0"
)
_CANCEL = (
    f"INSERT INTO {TABLE} (saga_id, cancel_by, cancel_reason) VALUES ({{p}}, {{p}}, {{p}}) "
    "ON CONFLICT (saga_id) DO UPDATE SET cancel_by = excluded.cancel_by, "
    "cancel_reason = excluded.cancel_reason"
)
_READ = f"SELECT deliveries, cancel_by, cancel_reason FROM {TABLE} WHERE saga_id = {{p}}"


class CancelRequest(NamedTuple):
    by: str
    """Who asked."""
    reason: str
    """Why (recorded in the saga's events)."""


class WorkerLedger:
    """Delivery counts and cancel requests of sagas, shared through the checkpointer's database.

    Thread-safe: the threads of one worker share one connection, one statement at a time.
    """

    def __init__(self, conn: Any, placeholder: str) -> None:
        self._conn = conn
        self._p = placeholder
        self._lock = threading.Lock()

    @property
    def connection(self) -> Any:
        """The database connection the ledger uses (a cut one stays closed)."""
        return self._conn

    def _one(self, sql: str, params: tuple[Any, ...]) -> Any:
        with self._lock:
            return self._conn.execute(sql.format(p=self._p), params).fetchone()

    def deliver(self, saga_id: str) -> int:
        """Count one more delivery of the saga; the count so far, this one included."""
        return int(self._one(_DELIVER, (saga_id,))[0])

    def deliveries(self, saga_id: str) -> int:
        row = self._one(_READ, (saga_id,))
        return int(row[0]) if row else 0

    def reset(self, saga_id: str) -> None:
        """Forget the saga's deliveries (``requeue`` gives a dead-lettered saga a fresh start)."""
        with self._lock:
            self._conn.execute(_RESET.format(p=self._p), (saga_id,))

    def request_cancel(self, saga_id: str, by: str, reason: str) -> None:
        """Ask the worker that drives the saga to compensate it at its next step boundary."""
        with self._lock:
            self._conn.execute(_CANCEL.format(p=self._p), (saga_id, by, reason))

    def cancel_request(self, saga_id: str) -> CancelRequest | None:
        """Who asked for the saga to be cancelled, and why; None when nobody did."""
        row = self._one(_READ, (saga_id,))
        if not row or row[2] is None:
            return None
        return CancelRequest(str(row[1] or "operator"), str(row[2]))


@contextmanager
def open_ledger(db_url: str) -> Iterator[WorkerLedger]:
    """The ledger in the database of checkpointer ``db_url``; created when missing."""
    if is_postgres_url(db_url):
        with _postgres(db_url) as ledger:
            yield ledger
    elif db_url.startswith("sqlite:///"):
        conn = sqlite3.connect(
            str(sqlite_path(db_url)),
            timeout=SQLITE_BUSY_TIMEOUT,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            enable_wal(conn)
            conn.execute(_CREATE)
            yield WorkerLedger(conn, "?")
        finally:
            conn.close()
    else:
        raise ConfigurationError(
            f"checkpointer url {redact_url(db_url)!r}: workers share their sagas through "
            "postgresql://... (several machines) or sqlite:///PATH (one machine)"
        )


@contextmanager
def _postgres(db_url: str) -> Iterator[WorkerLedger]:
    import psycopg

    from sagagraph.checkpoints.pg_limits import with_connection_limits

    try:
        conn = psycopg.connect(with_connection_limits(postgres_conninfo(db_url)), autocommit=True)
    except psycopg.Error as error:
        cause = redact_text(" ".join(str(error).split()), db_url)
        raise ConfigurationError(
            f"checkpointer url {redact_url(db_url)!r}: cannot connect: {cause}"
        ) from None
    with conn:
        # Another process may create it at the same moment.
        with suppress(psycopg.errors.UniqueViolation):
            conn.execute(_CREATE)
        yield WorkerLedger(conn, "%s")
