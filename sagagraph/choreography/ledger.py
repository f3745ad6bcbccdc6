"""A service's own durable memory: which events it handled, what it emitted, where each saga is.

Every handled event is recorded in one SQLite transaction together with the messages it
produced (an outbox) and the saga's new local state. So:

- a redelivered event is recognised by its id, and the step service publishes the recorded messages
  again instead of running the step again (readers drop the duplicates by id);
- a compensation that arrived before its forward event leaves the saga ``blocked`` here, and
  the late forward event is refused for good;
- a step service that crashed after its commit but before the broker heard its ack does not redo
  the work when the event comes back.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, TypedDict, cast

from sagagraph.checkpoints.urls import enable_wal
from sagagraph.choreography.messages import SagaMessage
from sagagraph.saga.protocol import StepRecord
from sagagraph.saga.view import now

LocalState = Literal["committed", "halted", "compensated", "blocked", "compensation_failed"]
"""Where a saga stands for one step service: its step committed, halted the saga, was undone, was
refused because its compensation came first, or could not be undone."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS step_inbox (
    consumer TEXT NOT NULL,
    event_id TEXT NOT NULL,
    saga_id TEXT NOT NULL,
    handled_at TEXT NOT NULL,
    outgoing TEXT NOT NULL,
    PRIMARY KEY (consumer, event_id)
);
CREATE TABLE IF NOT EXISTS step_sagas (
    consumer TEXT NOT NULL,
    saga_id TEXT NOT NULL,
    state TEXT NOT NULL,
    record TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (consumer, saga_id)
);
CREATE TABLE IF NOT EXISTS step_deliveries (
    consumer TEXT NOT NULL,
    event_id TEXT NOT NULL,
    deliveries INTEGER NOT NULL,
    last_error TEXT,
    PRIMARY KEY (consumer, event_id)
);
CREATE TABLE IF NOT EXISTS step_refusals (
    consumer TEXT NOT NULL,
    event_id TEXT NOT NULL,
    saga_id TEXT NOT NULL,
    type TEXT NOT NULL,
    reason TEXT NOT NULL,
    refused_at TEXT NOT NULL,
    PRIMARY KEY (consumer, event_id)
);
"""


class Refusal(TypedDict):
    """An event a service did not obey: not authentic, or the saga's history does not allow it."""

    consumer: str
    event_id: str
    saga_id: str
    type: str
    reason: str


def connect_sqlite(path: str | Path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, patient with locks."""
    conn = sqlite3.connect(str(path), timeout=30, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=30000")
    if str(path) != ":memory:":
        # Switching to WAL fails at once with "database is locked" while other processes
        # open the same new file (SQLite skips the busy handler there): enable_wal waits.
        try:
            enable_wal(conn)
        except sqlite3.Error:
            conn.close()
            raise
    conn.execute("PRAGMA synchronous=FULL")
    return conn


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def create_schema(conn: sqlite3.Connection, schema: str) -> None:
    """Run ``CREATE ... IF NOT EXISTS`` statements in one write transaction.

    The write lock is taken up front (``BEGIN IMMEDIATE`` waits for it) so that several
    processes creating the same tables cannot deadlock into an immediate "database is locked".
    """
    with write_transaction(conn):
        for statement in schema.split(";"):
            if statement.strip():
                conn.execute(statement)


class StepLedger:
    """The inbox, outbox and per-saga state of one step service (``consumer``), in SQLite."""

    def __init__(self, path: str | Path, consumer: str) -> None:
        self.path = str(path)
        self.consumer = consumer
        self._conn = connect_sqlite(path)
        # One connection shared by the step service's threads; the lock keeps its use serial.
        self._lock = threading.Lock()
        with self._lock:
            create_schema(self._conn, SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> StepLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def handled(self, event_id: str) -> list[SagaMessage] | None:
        """The messages recorded for ``event_id`` if this service already handled it, else None."""
        with self._lock:
            row = self._conn.execute(
                "SELECT outgoing FROM step_inbox WHERE consumer = ? AND event_id = ?",
                (self.consumer, event_id),
            ).fetchone()
        if row is None:
            return None
        return cast(list[SagaMessage], json.loads(row[0]))

    def state(self, saga_id: str) -> tuple[LocalState | None, StepRecord | None]:
        """This step service's state for a saga, and its committed result if any."""
        with self._lock:
            row = self._conn.execute(
                "SELECT state, record FROM step_sagas WHERE consumer = ? AND saga_id = ?",
                (self.consumer, saga_id),
            ).fetchone()
        if row is None:
            return None, None
        record = cast(StepRecord, json.loads(row[1])) if row[1] else None
        return cast(LocalState, row[0]), record

    def record(
        self,
        event: SagaMessage,
        outgoing: list[SagaMessage],
        *,
        state: LocalState | None = None,
        result: StepRecord | None = None,
        refusal: str | None = None,
    ) -> None:
        """Mark ``event`` handled, keep what it emitted, and move the saga to ``state``.

        All in one transaction: either the step service remembers the event with its effects, or it
        remembers nothing and handles the event again. ``refusal`` records why the event was
        not obeyed.
        """
        stamp = now()
        with self._lock, write_transaction(self._conn) as conn:
            conn.execute(
                "INSERT INTO step_inbox (consumer, event_id, saga_id, handled_at, outgoing) "
                "VALUES (?, ?, ?, ?, ?)",
                (self.consumer, event["id"], event["saga_id"], stamp, json.dumps(outgoing)),
            )
            if refusal is not None:
                self._insert_refusal(conn, event, refusal, stamp)
            if state is not None:
                conn.execute(
                    "INSERT INTO step_sagas (consumer, saga_id, state, record, updated_at) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (consumer, saga_id) DO UPDATE SET "
                    "state = excluded.state, record = excluded.record, "
                    "updated_at = excluded.updated_at",
                    (
                        self.consumer,
                        event["saga_id"],
                        state,
                        json.dumps(result) if result is not None else None,
                        stamp,
                    ),
                )

    def note_refusal(self, event: SagaMessage, reason: str) -> None:
        """Record that ``event`` was refused without marking its id handled: for an event
        whose id cannot be trusted (unsigned, badly signed). Its first refusal is kept."""
        with self._lock, write_transaction(self._conn) as conn:
            self._insert_refusal(conn, event, reason, now())

    def _insert_refusal(
        self, conn: sqlite3.Connection, event: SagaMessage, reason: str, stamp: str
    ) -> None:
        conn.execute(
            "INSERT OR IGNORE INTO step_refusals (consumer, event_id, saga_id, type, reason, "
            "refused_at) VALUES (?, ?, ?, ?, ?, ?)",
            (self.consumer, event["id"], event["saga_id"], event["type"], reason, stamp),
        )

    def emitted_for(self, saga_id: str) -> list[SagaMessage]:
        """Everything this step service emitted for a saga, in the order it handled the events."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT outgoing FROM step_inbox WHERE consumer = ? AND saga_id = ? "
                "ORDER BY handled_at, rowid",
                (self.consumer, saga_id),
            ).fetchall()
        return [m for (outgoing,) in rows for m in cast(list[SagaMessage], json.loads(outgoing))]

    def handled_count(self) -> int:
        """How many events this step service has handled (for tests and diagnostics)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT COUNT(*) FROM step_inbox WHERE consumer = ?", (self.consumer,)
            ).fetchone()
        return int(row[0])

    def count_delivery(self, event_id: str) -> tuple[int, str | None]:
        """Count one more delivery of ``event_id`` (committed before the handler runs, so a
        process killed while handling it counts too); the total and the last error noted."""
        with self._lock, write_transaction(self._conn) as conn:
            conn.execute(
                "INSERT INTO step_deliveries (consumer, event_id, deliveries) VALUES (?, ?, 1) "
                "ON CONFLICT (consumer, event_id) DO UPDATE SET deliveries = deliveries + 1",
                (self.consumer, event_id),
            )
            row = conn.execute(
                "SELECT deliveries, last_error FROM step_deliveries "
                "WHERE consumer = ? AND event_id = ?",
                (self.consumer, event_id),
            ).fetchone()
        return int(row[0]), row[1]

    def note_error(self, event_id: str, error: str) -> None:
        """Remember why handling ``event_id`` failed, for the record made when giving up."""
        with self._lock, write_transaction(self._conn) as conn:
            conn.execute(
                "UPDATE step_deliveries SET last_error = ? WHERE consumer = ? AND event_id = ?",
                (error, self.consumer, event_id),
            )

    def refusals(self) -> list[Refusal]:
        """Events this step service refused, oldest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT event_id, saga_id, type, reason FROM step_refusals WHERE consumer = ? "
                "ORDER BY refused_at, rowid",
                (self.consumer,),
            ).fetchall()
        return [
            {"consumer": self.consumer, "event_id": e, "saga_id": s, "type": t, "reason": r}
            for e, s, t, r in rows
        ]
