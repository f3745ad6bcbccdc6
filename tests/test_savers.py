"""sagagraph's savers: a task's writes commit without waiting for the disk, checkpoints wait.

What is checked here is the promise each backend makes: the writes are committed (another
connection sees them at once, so a killed process loses nothing) while checkpoints keep full
durability (SQLite: the connection's level is left as it was; PostgreSQL: each checkpoint ends
with a statement whose commit waits for the flush). The kill-window tests kill real processes after
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


def test_postgres_writes_are_committed_without_waiting_and_a_checkpoint_ends_flushed(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from sagagraph.checkpoints import postgres_savers

    # Put's row statement ends with DURABLE_RETURNING: a marker in its place shows it ran.
    marked = " RETURNING set_config('sagagraph.probe', 'durable', false)"
    with open_checkpointer(postgres_url) as saver:
        conn = cast(Any, saver).conn
        config = _checkpoint(saver, "t1")
        saver.put_writes(config, WRITES, "task-1")
        with psycopg.connect(postgres_url) as other:
            rows = other.execute(
                "SELECT channel FROM checkpoint_writes WHERE thread_id = 't1' ORDER BY idx"
            ).fetchall()
        assert [r[0] for r in rows] == ["results", "events"]
        assert _stored(saver, config) == WRITES
        # The saver's statements commit without waiting for the flush...
        assert conn.execute("SHOW synchronous_commit").fetchone()["synchronous_commit"] == "off"
        # ...and each checkpoint's row is written by a statement that waits for it.
        monkeypatch.setattr(postgres_savers, "DURABLE_RETURNING", marked)
        _checkpoint(saver, "t1b")
        assert conn.execute("SHOW sagagraph.probe").fetchone()["sagagraph.probe"] == "durable"


def test_postgres_checkpoint_row_flushes_what_committed_before_it(postgres_url: str) -> None:
    """On a session that does not wait for flushes, the commit of a checkpoint's row makes
    every earlier commit durable: the WAL is flushed at least up to a task write committed
    before it (checked at once, 20 times, before the WAL writer's own flush would come)."""
    import psycopg

    with open_checkpointer(postgres_url) as saver, psycopg.connect(postgres_url) as other:
        conn = cast(Any, saver).conn
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
        assert conn.execute("SHOW synchronous_commit").fetchone()["synchronous_commit"] == "off"


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
