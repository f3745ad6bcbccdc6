"""``sqlite:///path``: a durable append-only event log in one SQLite file (the default bus).

The same file holds the log, each service's cursor and inbox, and the dead letters, so services
may run as separate processes on one machine and any process can read a saga's history.
Writes are WAL transactions with ``synchronous=FULL``: an event is on disk when ``publish``
returns.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from sagagraph.checkpoints.urls import sqlite_path
from sagagraph.choreography.bus import Consumer, DeadLetter
from sagagraph.choreography.ledger import (
    StepLedger,
    connect_sqlite,
    create_schema,
    write_transaction,
)
from sagagraph.choreography.log_bus import Entry, LogBus
from sagagraph.choreography.messages import SagaMessage
from sagagraph.choreography.signing import Authenticator
from sagagraph.errors import BusError, ConfigurationError
from sagagraph.saga.view import now

SCHEMA = """
CREATE TABLE IF NOT EXISTS bus_events (
    position INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    saga TEXT NOT NULL,
    saga_id TEXT NOT NULL,
    type TEXT NOT NULL,
    body BLOB NOT NULL,
    published_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS bus_events_by_saga_id ON bus_events (saga_id, position);
CREATE INDEX IF NOT EXISTS bus_events_by_type ON bus_events (saga, type, position);
CREATE TABLE IF NOT EXISTS bus_cursors (
    consumer TEXT PRIMARY KEY,
    position INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS bus_failures (
    consumer TEXT NOT NULL,
    position INTEGER NOT NULL,
    failures INTEGER NOT NULL,
    PRIMARY KEY (consumer, position)
);
CREATE TABLE IF NOT EXISTS bus_listeners (
    token TEXT PRIMARY KEY,
    consumer TEXT NOT NULL,
    beat_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS bus_meta (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS bus_dead_letters (
    n INTEGER PRIMARY KEY AUTOINCREMENT,
    consumer TEXT NOT NULL,
    event_id TEXT,
    error TEXT NOT NULL,
    body TEXT NOT NULL,
    dead_at TEXT NOT NULL
);
"""


NOT_A_BLOB = b"\x00"
"""The first byte of a body that was not stored as a BLOB: no JSON text starts with it."""


def stored_body(value: object) -> bytes:
    """A row's ``body`` as bytes. A body stored as another type (TEXT, a number: any writer
    of the log can add such a row) becomes bytes that :func:`decode` refuses, naming the
    type, so the row is refused and recorded like any other malformed event instead of
    stopping every agent and reader."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return NOT_A_BLOB + f"bus_events.body stored as {type(value).__name__}, not BLOB".encode()


class SqliteBus(LogBus):
    """The event log in a SQLite file; ``create=False`` reads without creating the file."""

    def __init__(
        self, url: str, *, create: bool = True, authenticator: Authenticator | None = None
    ) -> None:
        self.url = url
        self.authenticator = authenticator or Authenticator(None)
        self.path: Path = sqlite_path(url)
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        if not self.path.exists():
            if not create:
                return
            if not self.path.parent.exists():
                raise ConfigurationError(f"bus url {url!r}: folder {self.path.parent} is missing")
        try:
            conn = connect_sqlite(self.path)
        except sqlite3.DatabaseError as error:
            raise BusError(f"bus url {url!r}: not a usable SQLite event log ({error})") from None
        try:
            create_schema(conn, SCHEMA)
        except sqlite3.DatabaseError as error:
            conn.close()
            raise BusError(f"bus url {url!r}: not a usable SQLite event log ({error})") from None
        self._conn = conn
        # Signatures bind events to this log: a copy into another log is badly signed there.
        self.authenticator = self.authenticator.bound_to(f"sqlite-log:{self._log_id(conn)}")

    def _log_id(self, conn: sqlite3.Connection) -> str:
        """This log's own id, made once by whoever creates the log (first writer wins)."""
        with self._lock, write_transaction(conn) as db:
            db.execute(
                "INSERT OR IGNORE INTO bus_meta (name, value) VALUES ('log_id', ?)",
                (uuid.uuid4().hex,),
            )
            row = db.execute("SELECT value FROM bus_meta WHERE name = 'log_id'").fetchone()
        return str(row[0])

    @property
    def exists(self) -> bool:
        """False when the file was missing and ``create=False``."""
        return self._conn is not None

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise BusError(f"bus url {self.url!r}: no event log at {self.path}")
        return self._conn

    def _append(self, messages: Sequence[tuple[SagaMessage, bytes]]) -> None:
        stamp = now()
        rows = [(m["id"], m["saga"], m["saga_id"], m["type"], b, stamp) for m, b in messages]
        with self._lock, write_transaction(self._db()) as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO bus_events (id, saga, saga_id, type, body, published_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )

    def _fetch(self, consumer: Consumer, after: int, limit: int) -> list[Entry]:
        marks = ", ".join("?" for _ in consumer.topics)
        with self._lock:
            rows = (
                self._db()
                .execute(
                    f"SELECT position, body FROM bus_events WHERE saga = ? AND type IN ({marks}) "
                    "AND position > ? ORDER BY position LIMIT ?",
                    (consumer.saga, *consumer.topics, after, limit),
                )
                .fetchall()
            )
        return [(int(p), stored_body(b)) for p, b in rows]

    def _entries(self, saga_ids: Collection[str] | None) -> list[bytes]:
        if self._conn is None:
            return []
        with self._lock:
            if saga_ids is None:
                rows = self._conn.execute("SELECT body FROM bus_events ORDER BY position")
                return [stored_body(b) for (b,) in rows.fetchall()]
            bodies: list[tuple[int, bytes]] = []
            for saga_id in set(saga_ids):
                rows = self._conn.execute(
                    "SELECT position, body FROM bus_events WHERE saga_id = ? ORDER BY position",
                    (saga_id,),
                )
                bodies += [(int(p), stored_body(b)) for p, b in rows.fetchall()]
        return [b for _, b in sorted(bodies)]

    def forget_sagas(self, saga_ids: Collection[str]) -> int:
        """Delete every event of these sagas, and their failure counts, in one transaction
        (retention: :mod:`sagagraph.choreography.retention`); the events deleted. Positions
        are never reused, so the step services' cursors stay right."""
        if self._conn is None or not saga_ids:
            return 0
        removed = 0
        with self._lock, write_transaction(self._db()) as conn:
            for saga_id in sorted(set(saga_ids)):
                conn.execute(
                    "DELETE FROM bus_failures WHERE position IN "
                    "(SELECT position FROM bus_events WHERE saga_id = ?)",
                    (saga_id,),
                )
                cur = conn.execute("DELETE FROM bus_events WHERE saga_id = ?", (saga_id,))
                removed += cur.rowcount
        return removed

    def cursor(self, consumer: str) -> int:
        with self._lock:
            row = (
                self._db()
                .execute("SELECT position FROM bus_cursors WHERE consumer = ?", (consumer,))
                .fetchone()
            )
        return int(row[0]) if row else 0

    def _set_cursor(self, consumer: str, position: int) -> None:
        with self._lock, write_transaction(self._db()) as conn:
            conn.execute(
                "INSERT INTO bus_cursors (consumer, position) VALUES (?, ?) "
                "ON CONFLICT (consumer) DO UPDATE SET position = excluded.position",
                (consumer, position),
            )

    def _count_failure(self, consumer: str, position: int) -> int:
        with self._lock, write_transaction(self._db()) as conn:
            conn.execute(
                "INSERT INTO bus_failures (consumer, position, failures) VALUES (?, ?, 1) "
                "ON CONFLICT (consumer, position) DO UPDATE SET failures = failures + 1",
                (consumer, position),
            )
            row = conn.execute(
                "SELECT failures FROM bus_failures WHERE consumer = ? AND position = ?",
                (consumer, position),
            ).fetchone()
        return int(row[0])

    def _dead_letter(self, letter: DeadLetter) -> None:
        with self._lock, write_transaction(self._db()) as conn:
            conn.execute(
                "INSERT INTO bus_dead_letters (consumer, event_id, error, body, dead_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (letter["consumer"], letter["event_id"], letter["error"], letter["body"], now()),
            )

    def dead_letters(self) -> list[DeadLetter]:
        if self._conn is None:
            return []
        with self._lock:
            rows = self._conn.execute(
                "SELECT consumer, event_id, error, body FROM bus_dead_letters ORDER BY n"
            ).fetchall()
        return [{"consumer": c, "event_id": e, "error": r, "body": b} for c, e, r, b in rows]

    def _beat(self, consumer: str, token: str, alive: bool) -> None:
        with self._lock, write_transaction(self._db()) as conn:
            if alive:
                conn.execute(
                    "INSERT INTO bus_listeners (token, consumer, beat_at) VALUES (?, ?, ?) "
                    "ON CONFLICT (token) DO UPDATE SET beat_at = excluded.beat_at",
                    (token, consumer, time.time()),
                )
            else:
                conn.execute("DELETE FROM bus_listeners WHERE token = ?", (token,))

    def _present(self, consumer: str, since: float) -> int:
        if self._conn is None:
            return 0
        with self._lock:
            row = self._conn.execute(
                "SELECT COUNT(*) FROM bus_listeners WHERE consumer = ? AND beat_at >= ?",
                (consumer, since),
            ).fetchone()
        return int(row[0])

    def _wait_for_news(self, stop: threading.Event, timeout: float) -> None:
        # Other processes append too, and SQLite cannot notify them: poll.
        stop.wait(timeout)

    @contextmanager
    def ledger(self, consumer: str) -> Iterator[StepLedger]:
        self._db()
        with StepLedger(self.path, consumer) as ledger:
            yield ledger

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
