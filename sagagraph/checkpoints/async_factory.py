"""``open_async_checkpointer(url)``: the checkpointers of async sagas (``ainvoke``), by URL.

The same URLs as :func:`~sagagraph.checkpoints.factory.open_checkpointer`, and the same
one-line ConfigurationError naming the URL (password hidden) when one cannot be used:

- ``memory://``: LangGraph's ``InMemorySaver`` (it has async methods);
- ``sqlite:///path``: :class:`~sagagraph.checkpoints.savers.SagaAsyncSqliteSaver`, LangGraph's
  ``AsyncSqliteSaver`` that stamps each checkpoint's metadata;
- ``postgresql://...``: :class:`~sagagraph.checkpoints.postgres_savers.SagaAsyncPostgresSaver`,
  LangGraph's ``AsyncPostgresSaver`` on a connection pool, stamping likewise.

The databases these open are the ones the sync factory opens: a saga started async can be
inspected, resumed or recovered by the CLI, and the other way round.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from sagagraph.checkpoints.factory import (
    _SETUP_LOCK,
    _SETUP_UNLOCK,
    SETUP_WAIT,
    SQLITE_BUSY_TIMEOUT,
    _first_line,
    _redact_text,
    default_db_url,
    redact_url,
    setup_retry_pauses,
    sqlite_busy,
    sqlite_path,
)
from sagagraph.checkpoints.savers import SagaAsyncSqliteSaver
from sagagraph.errors import ConfigurationError

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
    url = url or default_db_url()
    scheme = url.split(":", 1)[0].lower()
    if url in ("memory", "memory://"):
        yield InMemorySaver()
    elif url.startswith("sqlite:///"):
        async with _open_sqlite(url) as sqlite_saver:
            yield sqlite_saver
    elif scheme in ("postgresql", "postgres"):
        async with _open_postgres(url) as postgres_saver:
            yield postgres_saver
    else:
        raise ConfigurationError(
            f"checkpointer url {redact_url(url)!r}: expected sqlite:///PATH, memory:// "
            "or postgresql://..."
        )


@asynccontextmanager
async def _open_sqlite(url: str) -> AsyncIterator[SagaAsyncSqliteSaver]:
    import aiosqlite

    path = sqlite_path(url)
    if not path.parent.is_dir():
        raise ConfigurationError(f"checkpointer url {url!r}: folder {path.parent} is missing")
    if path.is_dir():
        raise ConfigurationError(f"checkpointer url {url!r}: {path} is a folder, not a file")
    async with AsyncExitStack() as stack:
        try:
            conn = await aiosqlite.connect(str(path), timeout=SQLITE_BUSY_TIMEOUT)
            stack.push_async_callback(conn.close)
        except sqlite3.Error as error:
            raise ConfigurationError(
                f"checkpointer url {url!r}: cannot open: {_first_line(error)}"
            ) from None
        saver = SagaAsyncSqliteSaver(conn, database=str(path.resolve()))
        try:
            await _setup_sqlite(saver)
        except sqlite3.Error as error:
            raise ConfigurationError(
                f"checkpointer url {url!r}: not a usable SQLite database: {_first_line(error)}"
            ) from None
        yield saver


async def _setup_sqlite(saver: SagaAsyncSqliteSaver) -> None:
    """``await saver.setup()``, tried again while the file is busy (as the sync factory's
    ``_setup_sqlite``: :func:`~sagagraph.checkpoints.factory.setup_retry_pauses` says why)."""
    for pause in setup_retry_pauses():
        try:
            await saver.setup()
            return
        except sqlite3.OperationalError as error:
            if not sqlite_busy(error):
                raise
        await asyncio.sleep(pause)
    await saver.setup()


async def _setup_once(conn: Any, saver: Any) -> None:
    """``saver.setup()`` one process at a time, under the sync factory's advisory lock.

    Concurrent first-time setups on a fresh database race; the lock is polled, as in
    :mod:`sagagraph.checkpoints.factory`, which explains why.
    """
    deadline = time.monotonic() + SETUP_WAIT
    while not (await (await conn.execute(_SETUP_LOCK)).fetchone())["ok"]:
        if time.monotonic() > deadline:
            raise ConfigurationError(
                "postgres checkpointer: another process is still creating the tables"
            )
        await asyncio.sleep(0.05)
    try:
        await saver.setup()
    finally:
        await conn.execute(_SETUP_UNLOCK)


@asynccontextmanager
async def _open_postgres(url: str) -> AsyncIterator[BaseCheckpointSaver[str]]:
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg import AsyncConnection
        from psycopg import Error as PsycopgError
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool, PoolTimeout

        from sagagraph.checkpoints.pg_limits import with_connection_limits
        from sagagraph.checkpoints.postgres_savers import SagaAsyncPostgresSaver
    except ImportError:  # pragma: no cover - depends on installed extras
        raise ConfigurationError(
            "postgres checkpointer needs the extra: pip install 'sagagraph[postgres]'"
        ) from None
    # The settings AsyncPostgresSaver.from_conn_string gives its own connection.
    kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    limited = with_connection_limits(url)  # the URL (its password) stays out of messages
    async with AsyncExitStack() as stack:
        try:
            # One plain connection first: a wrong URL fails at once (a pool would keep
            # retrying until its timeout), and it creates the tables.
            async with await AsyncConnection.connect(limited, **kwargs) as conn:
                await _setup_once(conn, AsyncPostgresSaver(conn))
            pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                limited, min_size=1, max_size=POSTGRES_POOL_SIZE, kwargs=kwargs, open=False
            )
            await pool.open(wait=True, timeout=30.0)
            stack.push_async_callback(pool.close)
        except (PsycopgError, PoolTimeout) as error:
            cause = _redact_text(_first_line(error), url)
            raise ConfigurationError(
                f"checkpointer url {redact_url(url)!r}: cannot connect: {cause}"
            ) from None
        yield SagaAsyncPostgresSaver(pool)
