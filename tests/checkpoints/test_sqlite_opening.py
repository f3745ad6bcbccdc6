"""Opening a SQLite checkpointer while another process writes to the file waits, it does not
fail: workers started together on a fresh file all come up (issue 18's bench item 6 lost a
worker to ``not a usable SQLite database: database is locked``).

SQLite answers ``PRAGMA journal_mode=WAL`` (run by LangGraph's ``setup``) with SQLITE_BUSY at
once, without its busy handler, while another connection holds a write transaction on a file
still in rollback-journal mode: what a second worker sees while the first creates the tables.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sagagraph import open_async_checkpointer, open_checkpointer

HOLD_SECONDS = 1.0

_HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("CREATE TABLE IF NOT EXISTS other (x)")
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO other VALUES (1)")
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
"""


@contextmanager
def _another_process_writing(db: Path) -> Iterator[None]:
    """A process that holds a write transaction on ``db`` (rollback-journal mode) for
    :data:`HOLD_SECONDS`, from when this enters."""
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(db), str(HOLD_SECONDS)],
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "holding"
        yield
        assert holder.wait(timeout=30) == 0


def _journal_mode(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])


def test_the_sync_checkpointer_waits_for_another_process_s_write(tmp_path: Path) -> None:
    db = tmp_path / "sagas.sqlite"
    with _another_process_writing(db), open_checkpointer(f"sqlite:///{db}") as saver:
        assert saver.get_tuple({"configurable": {"thread_id": "none"}}) is None
    assert _journal_mode(db) == "wal"


def test_the_async_checkpointer_waits_for_another_process_s_write(tmp_path: Path) -> None:
    db = tmp_path / "sagas.sqlite"

    async def open_it() -> None:
        async with open_async_checkpointer(f"sqlite:///{db}") as saver:
            assert await saver.aget_tuple({"configurable": {"thread_id": "none"}}) is None

    with _another_process_writing(db):
        asyncio.run(open_it())
    assert _journal_mode(db) == "wal"


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_file_that_stays_locked_still_fails_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Waiting has an end: past the busy timeout the open fails as before, naming the URL."""
    monkeypatch.setattr("sagagraph.checkpoints.urls.SQLITE_BUSY_TIMEOUT", 0.2)
    db = tmp_path / "sagas.sqlite"
    url = f"sqlite:///{db}"

    async def open_async() -> None:
        async with open_async_checkpointer(url):
            pass

    with _another_process_writing(db), pytest.raises(Exception) as raised:
        if kind == "sync":
            with open_checkpointer(url):
                pass
        else:
            asyncio.run(open_async())
    message = str(raised.value)
    assert message.startswith(f"checkpointer url {url!r}: not a usable SQLite database")
    assert "locked" in message and "\n" not in message
