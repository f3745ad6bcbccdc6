"""What the sample sagas share: a SQLite store per service, and printing a saga's trail.

Each sample (``travel_booking``, ``food_order``) keeps its own stores, participants and saga;
only this plumbing is common.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any


class SqliteStore:
    """One SQLite file; each ``transaction()`` is short, serialised and committed at once."""

    schema = ""
    """SQL that creates the store's tables when missing."""
    records_table = ""
    """The table whose rows belong to sagas (each carries ``saga_id``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with closing(sqlite3.connect(path, timeout=30)) as conn:
            conn.executescript(self.schema)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        # BEGIN IMMEDIATE takes the write lock up front: two sagas checking the same seat
        # count or balance cannot both read "enough" and both write.
        with closing(sqlite3.connect(self.path, timeout=30, isolation_level=None)) as conn:
            conn.row_factory = sqlite3.Row
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def records(self, saga_id: str) -> list[dict[str, Any]]:
        """This saga's records (bookings, holds or charges), oldest first."""
        with self.transaction() as conn:
            rows = conn.execute(
                f"SELECT * FROM {self.records_table} WHERE saga_id = ? ORDER BY rowid",
                (saga_id,),
            ).fetchall()
        return [dict(row) for row in rows]


def print_saga(view: dict[str, Any]) -> None:
    """The saga's events, one line each, then its outcome."""
    print(f"saga {view['saga_id']} ({view['saga']})")
    width = max((len(e["step"]) for e in view["events"]), default=4) + 1
    for number, event in enumerate(view["events"], start=1):
        # Record keys start with the saga id, printed once above.
        text = event["detail"].replace(f"{view['saga_id']}:", "")
        detail = f"  {text}" if text else ""
        print(
            f"  {number:>2}. {event['step']:<{width}} {event['action']:<10} {event['outcome']:<7}"
            f" attempt {event['attempt']}{detail}"
        )
    print(f"status: {view['status']}")
    if view["reason"]:
        print(f"reason: {view['reason']}")
    if view["compensated"]:
        print(f"compensated, in this order: {', '.join(view['compensated'])}")
