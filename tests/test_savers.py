"""sagagraph's savers: a task's writes commit without waiting for the disk, checkpoints wait.

What is checked here is the promise each backend makes: the writes are committed (another
connection sees them at once, so a killed process loses nothing) while the connection's
durability for checkpoints is left as it was. The kill-window tests kill real processes after
each write and resume from a new one.
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


def test_postgres_writes_are_committed_and_the_session_keeps_synchronous_commit(
    postgres_url: str,
) -> None:
    import psycopg

    with open_checkpointer(postgres_url) as saver:
        config = _checkpoint(saver, "t1")
        saver.put_writes(config, WRITES, "task-1")
        with psycopg.connect(postgres_url) as other:
            rows = other.execute(
                "SELECT channel FROM checkpoint_writes WHERE thread_id = 't1' ORDER BY idx"
            ).fetchall()
        assert [r[0] for r in rows] == ["results", "events"]
        conn = cast(Any, saver).conn
        assert conn.execute("SHOW synchronous_commit").fetchone()["synchronous_commit"] == "on"
        assert _stored(saver, config) == WRITES


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


def test_postgres_writes_that_fail_leave_the_session_waiting_for_the_flush(
    postgres_url: str,
) -> None:
    import psycopg

    with open_checkpointer(postgres_url) as saver:
        config = _checkpoint(saver, "t3")
        conn = cast(Any, saver).conn
        # PostgreSQL text cannot hold NUL: the write fails after the session stopped waiting.
        with pytest.raises((psycopg.Error, ValueError)):
            saver.put_writes(config, WRITES, "task\x00bad")
        assert conn.execute("SHOW synchronous_commit").fetchone()["synchronous_commit"] == "on"
        saver.put_writes(config, WRITES, "task-ok")
        assert _stored(saver, config) == WRITES
