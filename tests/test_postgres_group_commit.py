"""The async PostgreSQL saver's group commit, against a real server.

Checked: concurrent writers share transactions, and each call's rows are visible to another
connection the moment it returns; a write that fails fails alone (its writer gets the error,
the others' rows are stored); a batch the server rejects gives every writer in it an error;
checkpoints commit with ``synchronous_commit`` on and only writes-only transactions turn it
off, for themselves, so every pooled connection keeps the server's setting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from psycopg import AsyncConnection

from sagagraph import open_async_checkpointer
from sagagraph.checkpoints.postgres_group_commit import (
    NO_FLUSH_IN_TRANSACTION,
    GroupCommitPostgresSaver,
)
from tests.services import fresh_postgres_database

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A database of this module's own: its checkpoints are not sagas, and the session's
    shared database is scanned by other tests' recoveries."""
    with fresh_postgres_database() as url:
        yield url


WRITES = [("results", {"s1": {"output": "a"}}), ("events", ["one"])]


def _config(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


async def _checkpoint(saver: Any, thread: str, step: int = -1) -> RunnableConfig:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"results": {"n": step}, "status": "running"}
    versions = {"results": f"{step + 2}", "status": f"{step + 2}"}
    checkpoint["channel_versions"] = versions
    config: RunnableConfig = await saver.aput(
        _config(thread), checkpoint, {"source": "loop", "step": step}, versions
    )
    return config


def test_concurrent_writers_share_transactions_and_see_their_rows_at_once(
    postgres_url: str,
) -> None:
    n = 60

    async def saga(saver: Any, other: AsyncConnection[Any], i: int) -> None:
        thread = f"gc-{i}"
        config = await _checkpoint(saver, thread)
        row = await (
            await other.execute(
                "SELECT checkpoint_id FROM checkpoints WHERE thread_id = %s", [thread]
            )
        ).fetchone()
        assert row == (config["configurable"]["checkpoint_id"],)
        await saver.aput_writes(config, WRITES, f"task-{i}")
        rows = await (
            await other.execute(
                "SELECT channel FROM checkpoint_writes WHERE thread_id = %s ORDER BY idx",
                [thread],
            )
        ).fetchall()
        assert [r[0] for r in rows] == ["results", "events"]
        found = await saver.aget_tuple(config)
        assert found is not None
        assert found.checkpoint["channel_values"] == {"results": {"n": -1}, "status": "running"}
        assert [(c, v) for _, c, v in found.pending_writes or []] == WRITES

    async def scenario() -> int:
        async with (
            open_async_checkpointer(postgres_url) as saver,
            await AsyncConnection.connect(postgres_url, autocommit=True) as other,
        ):
            assert isinstance(saver, GroupCommitPostgresSaver)
            await asyncio.gather(*(saga(saver, other, i) for i in range(n)))
            return saver.commits

    commits = asyncio.run(scenario())
    assert commits < 2 * n, "60 sagas' 120 write calls shared transactions"


def test_a_write_that_fails_fails_alone(postgres_url: str) -> None:
    async def scenario() -> list[Any]:
        async with open_async_checkpointer(postgres_url) as saver:
            configs = [await _checkpoint(saver, f"bad-{i}") for i in range(6)]
            # PostgreSQL text cannot hold NUL: task 3's rows are refused, in the batch.
            return await asyncio.gather(
                *(
                    saver.aput_writes(c, WRITES, "task\x00bad" if i == 3 else f"task-{i}")
                    for i, c in enumerate(configs)
                ),
                return_exceptions=True,
            )

    outcomes = asyncio.run(scenario())

    assert [o is None for o in outcomes] == [True, True, True, False, True, True]
    assert isinstance(outcomes[3], (psycopg.Error, ValueError))
    with psycopg.connect(postgres_url) as other:
        rows = other.execute(
            "SELECT thread_id FROM checkpoint_writes WHERE thread_id LIKE 'bad-%' "
            "GROUP BY thread_id ORDER BY thread_id"
        ).fetchall()
    assert [r[0] for r in rows] == [f"bad-{i}" for i in range(6) if i != 3]


def test_a_batch_the_server_rejects_fails_every_writer_in_it() -> None:
    async def scenario(url: str) -> list[Any]:
        async with open_async_checkpointer(url) as saver:
            configs = [await _checkpoint(saver, f"t{i}") for i in range(4)]
            async with saver.conn.connection() as conn:  # type: ignore[union-attr]
                await conn.execute("DROP TABLE checkpoint_writes")
            return await asyncio.gather(
                *(saver.aput_writes(c, WRITES, f"task-{i}") for i, c in enumerate(configs)),
                _checkpoint(saver, "t9"),
                return_exceptions=True,
            )

    with fresh_postgres_database() as url:
        outcomes = asyncio.run(scenario(url))
        with psycopg.connect(url) as other:
            stored = other.execute("SELECT thread_id FROM checkpoints WHERE thread_id = 't9'")
            assert stored.fetchall() == [("t9",)], "the checkpoint in the batch was kept"
    assert all(isinstance(o, psycopg.errors.UndefinedTable) for o in outcomes[:4])
    assert all("checkpoint_writes" in str(o) for o in outcomes[:4])
    assert isinstance(outcomes[4], dict)


def test_only_writes_only_transactions_skip_the_flush_and_connections_keep_the_setting(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    statements: list[str] = []
    execute = psycopg.AsyncCursor.execute

    async def spy(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        statements.append(str(query))
        return await execute(self, query, *args, **kwargs)

    async def scenario() -> list[str]:
        async with open_async_checkpointer(postgres_url) as saver:
            config = await _checkpoint(saver, "flush-1")
            monkeypatch.setattr(psycopg.AsyncCursor, "execute", spy)
            await saver.aput_writes(config, WRITES, "task-1")
            writes_only = list(statements)
            statements.clear()
            await _checkpoint(saver, "flush-1", step=0)
            checkpoint_batch = list(statements)
            monkeypatch.undo()
            pool: Any = saver.conn
            settings = []
            conns = [await pool.getconn() for _ in range(pool.get_stats()["pool_size"])]
            for conn in conns:
                row = await (await conn.execute("SHOW synchronous_commit")).fetchone()
                settings.append(row["synchronous_commit"])
                await pool.putconn(conn)
        assert NO_FLUSH_IN_TRANSACTION in writes_only
        assert NO_FLUSH_IN_TRANSACTION not in checkpoint_batch
        return settings

    assert set(asyncio.run(scenario())) == {"on"}


def test_the_pool_closes_after_the_last_commit(postgres_url: str) -> None:
    async def scenario() -> None:
        async with open_async_checkpointer(postgres_url) as saver:
            config = await _checkpoint(saver, "drain-1")
            # Handed over, not awaited: leaving the context must still commit it.
            pending = asyncio.ensure_future(saver.aput_writes(config, WRITES, "task-1"))
            await asyncio.sleep(0)
        await pending

    asyncio.run(scenario())
    with psycopg.connect(postgres_url) as other:
        rows = other.execute("SELECT COUNT(*) FROM checkpoint_writes WHERE thread_id = 'drain-1'")
        assert rows.fetchone() == (2,)


def test_a_key_written_twice_in_one_batch_keeps_what_one_row_statements_keep(
    postgres_url: str,
) -> None:
    from langgraph.checkpoint.base import ERROR

    async def scenario() -> tuple[Any, Any]:
        async with open_async_checkpointer(postgres_url) as saver:
            config = await _checkpoint(saver, "twice-1")
            assert isinstance(saver, GroupCommitPostgresSaver)
            commits = saver.commits
            await asyncio.gather(
                # Ordinary writes: the first copy stays (INSERT ... DO NOTHING).
                saver.aput_writes(config, [("results", "first")], "task-1"),
                saver.aput_writes(config, [("results", "second")], "task-1"),
                # Errors: the last one replaces it (UPSERT), as LangGraph's saver does.
                saver.aput_writes(config, [(ERROR, "old error")], "task-2"),
                saver.aput_writes(config, [(ERROR, "new error")], "task-2"),
            )
            twice = empty_checkpoint()
            await asyncio.gather(
                saver.aput(_config("twice-2"), twice, {"source": "loop", "step": 1}, {}),
                saver.aput(_config("twice-2"), twice, {"source": "loop", "step": 2}, {}),
            )
            # Two transactions, none failed and retried one write at a time.
            assert saver.commits == commits + 2
            return await saver.aget_tuple(config), await saver.aget_tuple(_config("twice-2"))

    found, checkpoint = asyncio.run(scenario())
    assert found is not None and checkpoint is not None
    assert sorted((t, c, v) for t, c, v in found.pending_writes or []) == [
        ("task-1", "results", "first"),
        ("task-2", ERROR, "new error"),
    ]
    assert checkpoint.metadata["step"] == 2


def test_a_failed_transaction_is_ended_on_a_saver_of_one_connection() -> None:
    """On one connection (not a pool, which would roll back a returned connection itself)
    a batch the server rejects leaves the connection usable: its transaction was ended."""

    async def scenario(url: str) -> tuple[Any, Any]:
        async with await AsyncConnection.connect(url, autocommit=True) as conn:
            saver = GroupCommitPostgresSaver(conn)
            await saver.setup()
            config = await _checkpoint(saver, "one-conn")
            await conn.execute("DROP TABLE checkpoint_writes")
            with pytest.raises(psycopg.errors.UndefinedTable):
                await saver.aput_writes(config, WRITES, "task-1")
            status = conn.info.transaction_status
            await _checkpoint(saver, "one-conn", step=0)  # a later write goes through
            await saver.drain()
            return status, await (await conn.execute("SELECT count(*) FROM checkpoints")).fetchone()

    with fresh_postgres_database() as url:
        status, count = asyncio.run(scenario(url))
    assert status == psycopg.pq.TransactionStatus.IDLE
    assert count == (2,)
