"""The async PostgreSQL saver on its connection pool, against a real server.

Checked: with concurrent writers each call's rows are visible to another connection the
moment it returns; a write that fails fails alone (its writer gets the error, the others'
rows are stored); a key written twice keeps what LangGraph's saver keeps.
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
from sagagraph.checkpoints.postgres_savers import SagaAsyncPostgresSaver
from tests.support.services import fresh_postgres_database

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


def test_concurrent_writers_see_their_rows_at_once(
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

    async def scenario() -> None:
        async with (
            open_async_checkpointer(postgres_url) as saver,
            await AsyncConnection.connect(postgres_url, autocommit=True) as other,
        ):
            assert isinstance(saver, SagaAsyncPostgresSaver)
            await asyncio.gather(*(saga(saver, other, i) for i in range(n)))

    asyncio.run(scenario())


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


def test_a_key_written_twice_keeps_what_langgraphs_saver_keeps(
    postgres_url: str,
) -> None:
    from langgraph.checkpoint.base import ERROR

    async def scenario() -> tuple[Any, Any]:
        async with open_async_checkpointer(postgres_url) as saver:
            config = await _checkpoint(saver, "twice-1")
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
            return await saver.aget_tuple(config), await saver.aget_tuple(_config("twice-2"))

    found, checkpoint = asyncio.run(scenario())
    assert found is not None and checkpoint is not None
    assert sorted((t, c, v) for t, c, v in found.pending_writes or []) == [
        ("task-1", "results", "first"),
        ("task-2", ERROR, "new error"),
    ]
    assert checkpoint.metadata["step"] == 2
