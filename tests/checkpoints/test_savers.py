"""sagagraph's savers: a task's writes and each checkpoint are committed when the call returns.

What is checked here is the promise each backend makes: the writes are committed (another
connection sees them at once, so a killed process loses nothing) and checkpoints keep full
durability (SQLite: ``synchronous=FULL``; PostgreSQL: a checkpoint's commit is flushed). The
kill-window tests kill real processes after each write and resume from a new one.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any, cast

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint

from sagagraph import open_async_checkpointer, open_checkpointer

WRITES = [("results", {"s1": {"output": "a"}}), ("events", ["one"])]


def _checkpoint(saver: BaseCheckpointSaver[Any], thread: str) -> RunnableConfig:
    config: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    return saver.put(config, empty_checkpoint(), {"source": "input", "step": -1}, {})


def _stored(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> list[tuple[str, Any]]:
    found = saver.get_tuple(config)
    assert found is not None
    return [(channel, value) for _, channel, value in found.pending_writes or []]


def test_sqlite_writes_are_committed_and_checkpoints_keep_full_sync(tmp_path: Path) -> None:
    path = tmp_path / "sagas.sqlite"
    with open_checkpointer(f"sqlite:///{path}") as saver:
        config = _checkpoint(saver, "t1")
        saver.put_writes(config, WRITES, "task-1")
        # Another connection sees them: they are committed, not waiting in a transaction.
        other = sqlite3.connect(path)
        rows = other.execute("SELECT channel FROM writes WHERE thread_id = 't1' ORDER BY idx")
        assert [r[0] for r in rows] == ["results", "events"]
        other.close()
        conn = cast(Any, saver).conn
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2, "checkpoints stay FULL"
        assert not conn.in_transaction
        assert _stored(saver, config) == WRITES
        # A second write set of the same task keeps the first copy (as LangGraph's saver does).
        saver.put_writes(config, [("results", {"s1": {"output": "b"}})], "task-1")
        assert _stored(saver, config)[0] == WRITES[0]


def test_sqlite_writes_that_fail_leave_no_transaction_open(tmp_path: Path) -> None:
    with open_checkpointer(f"sqlite:///{tmp_path / 'sagas.sqlite'}") as saver:
        config = _checkpoint(saver, "t1")
        conn = cast(Any, saver).conn
        conn.execute("DROP TABLE writes")
        with pytest.raises(sqlite3.OperationalError, match="writes"):
            saver.put_writes(config, WRITES, "task-1")
        assert not conn.in_transaction
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2


def test_postgres_writes_are_committed(postgres_url: str) -> None:
    import psycopg

    with open_checkpointer(postgres_url) as saver:
        config = _checkpoint(saver, "t1")
        saver.put_writes(config, WRITES, "task-1")
        with psycopg.connect(postgres_url) as other:
            rows = other.execute(
                "SELECT channel FROM checkpoint_writes WHERE thread_id = 't1' ORDER BY idx"
            ).fetchall()
        assert [r[0] for r in rows] == ["results", "events"]
        assert _stored(saver, config) == WRITES


def test_postgres_checkpoint_row_flushes_what_committed_before_it(postgres_url: str) -> None:
    """A checkpoint's commit makes every earlier commit durable: the WAL is flushed at least
    up to a task write committed before it (checked at once, 20 times, before the WAL
    writer's own flush would come)."""
    import psycopg

    with open_checkpointer(postgres_url) as saver, psycopg.connect(postgres_url) as other:
        for i in range(20):
            config = _checkpoint(saver, f"flush-{i}")
            saver.put_writes(config, WRITES, f"task-{i}")
            written = other.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
            assert written is not None
            _checkpoint(saver, f"flush-{i}")
            flushed = other.execute(
                "SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn", (written[0],)
            ).fetchone()
            assert flushed == (True,)


def test_async_postgres_writes_are_committed(postgres_url: str) -> None:
    import psycopg

    async def write() -> None:
        async with open_async_checkpointer(postgres_url) as saver:
            config: RunnableConfig = {"configurable": {"thread_id": "t2", "checkpoint_ns": ""}}
            config = await saver.aput(config, empty_checkpoint(), {"source": "input"}, {})
            await saver.aput_writes(config, WRITES, "task-1")
            found = await saver.aget_tuple(config)
            assert found is not None
            assert [(c, v) for _, c, v in found.pending_writes or []] == WRITES

    asyncio.run(write())
    with psycopg.connect(postgres_url) as other:
        rows = other.execute(
            "SELECT channel FROM checkpoint_writes WHERE thread_id = 't2' ORDER BY idx"
        ).fetchall()
    assert [r[0] for r in rows] == ["results", "events"]


def test_postgres_writes_that_fail_leave_the_saver_working(postgres_url: str) -> None:
    import psycopg

    with open_checkpointer(postgres_url) as saver:
        config = _checkpoint(saver, "t3")
        # PostgreSQL text cannot hold NUL: the write fails in its pipeline.
        with pytest.raises((psycopg.Error, ValueError)):
            saver.put_writes(config, WRITES, "task\x00bad")
        saver.put_writes(config, WRITES, "task-ok")
        assert _stored(saver, config) == WRITES
        _checkpoint(saver, "t3b")
        assert saver.get_tuple({"configurable": {"thread_id": "t3b", "checkpoint_ns": ""}})
