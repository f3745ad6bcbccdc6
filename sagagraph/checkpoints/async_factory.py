"""``open_async_checkpointer(url)``: the checkpointers of async sagas (``ainvoke``), by URL.

The same URLs, set-ups and one-line errors as
:func:`~sagagraph.checkpoints.factory.open_checkpointer`, whose module holds them; this is their
async driver, opening the async savers:

- ``memory://``: LangGraph's ``InMemorySaver`` (it has async methods);
- ``sqlite:///path``: :class:`~sagagraph.checkpoints.savers.SagaAsyncSqliteSaver`;
- ``postgresql://...``: :class:`~sagagraph.checkpoints.postgres_savers.SagaAsyncPostgresSaver`,
  on a connection pool;
- ``sqlite+group:///path`` and ``postgresql+group://...``: the group-commit savers
  (:mod:`~sagagraph.checkpoints.group_commit`, :mod:`~sagagraph.checkpoints.group_commit_pg`),
  the sync factory's, whose async methods await their writes and never block the loop on a
  commit.

The databases these open are the ones the sync factory opens: a saga started async can be
inspected, resumed or recovered by the CLI, and the other way round.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import aiosqlite
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from sagagraph.checkpoints.factory import (
    SETUP_LOCK,
    SETUP_UNLOCK,
    Target,
    opened_group_saver,
    postgres_missing,
    refused,
    setup_lock_polls,
    target,
    took_lock,
)
from sagagraph.checkpoints.savers import SagaAsyncSqliteSaver
from sagagraph.checkpoints.urls import (
    SQLITE_BUSY_TIMEOUT,
    lease_file,
    setup_retry_pauses,
    sqlite_busy,
)

POSTGRES_POOL_SIZE = 16
"""Connections an async PostgreSQL checkpointer keeps open at most."""


@asynccontextmanager
async def open_async_checkpointer(
    url: str | None = None,
) -> AsyncIterator[BaseCheckpointSaver[str]]:
    """Open the async checkpointer a URL names (default: ``SAGAGRAPH_DB``, else a SQLite file).

    Use it with ``ainvoke`` and :func:`sagagraph.graph.async_runner.arun_saga`; tables are
    created when missing; everything is closed on exit.
    """
    where = target(url)
    if where.kind == "memory":
        yield InMemorySaver()
    elif where.group:  # its writes are awaited, its reads answered on the loop
        with opened_group_saver(where) as group_saver:
            yield group_saver
    elif where.kind == "sqlite":
        async with _open_sqlite(where) as sqlite_saver:
            yield sqlite_saver
    else:
        async with _open_postgres(where) as postgres_saver:
            yield postgres_saver


@asynccontextmanager
async def _open_sqlite(where: Target) -> AsyncIterator[SagaAsyncSqliteSaver]:
    async with AsyncExitStack() as stack:
        with refused(where, "cannot open", sqlite3.Error):
            conn = await aiosqlite.connect(str(where.path), timeout=SQLITE_BUSY_TIMEOUT)
            stack.push_async_callback(conn.close)
        saver = SagaAsyncSqliteSaver(conn)
        saver.lease_file = lease_file(where.path)
        with refused(where, "not a usable SQLite database", sqlite3.Error):
            for pause in setup_retry_pauses():
                try:
                    await saver.setup()
                    break
                except sqlite3.OperationalError as error:
                    if not sqlite_busy(error):
                        raise
                await asyncio.sleep(pause)
            else:
                await saver.setup()
        yield saver


@asynccontextmanager
async def _open_postgres(where: Target) -> AsyncIterator[BaseCheckpointSaver[str]]:
    try:  # the postgres extra
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg import AsyncConnection
        from psycopg import Error as PsycopgError
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool, PoolTimeout

        from sagagraph.checkpoints.pg_limits import with_connection_limits
        from sagagraph.checkpoints.postgres_savers import SagaAsyncPostgresSaver
    except ImportError:  # pragma: no cover - depends on installed extras
        raise postgres_missing() from None
    # The settings AsyncPostgresSaver.from_conn_string gives its own connection.
    kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    limited = with_connection_limits(where.url)  # the URL (its password) stays out of messages
    async with AsyncExitStack() as stack:
        with refused(where, "cannot connect", PsycopgError, PoolTimeout):
            # One plain connection first: a wrong URL fails at once (a pool would keep
            # retrying until its timeout), and it creates the tables.
            async with await AsyncConnection.connect(limited, **kwargs) as conn:
                for pause in setup_lock_polls():
                    if took_lock(await (await conn.execute(SETUP_LOCK)).fetchone()):
                        break
                    await asyncio.sleep(pause)
                try:
                    await AsyncPostgresSaver(conn).setup()
                finally:
                    await conn.execute(SETUP_UNLOCK)
            pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                limited, min_size=1, max_size=POSTGRES_POOL_SIZE, kwargs=kwargs, open=False
            )
            await pool.open(wait=True, timeout=30.0)
            stack.push_async_callback(pool.close)
        yield SagaAsyncPostgresSaver(pool)
