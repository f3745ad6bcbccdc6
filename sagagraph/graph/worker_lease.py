"""The saga lease a queue worker holds while it drives a saga, across machines.

:func:`~sagagraph.graph.leases.saga_lease` keeps a saga to one process, except for the
async PostgreSQL saver: it runs on a connection pool, and a session lock taken on a pooled
connection would stay behind with that connection. A worker therefore keeps one connection
of its own for its leases and takes PostgreSQL's session advisory lock on it, with the key
``saga_lease`` uses (``hashtextextended('sagagraph:<id>', 0)``), so a worker and a CLI
``resume`` or ``recover`` on any machine also exclude each other. A worker that dies drops its
connection, and the server releases its leases at once.

Other savers (SQLite, memory) need nothing more: ``aresume_saga``'s own lease covers them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from sagagraph.checkpoints.factory import _redact_text, redact_url
from sagagraph.errors import ConfigurationError, SagaBusyError

_LOCK_SQL = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
_UNLOCK_SQL = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"


def _key(saga_id: str) -> str:
    # The key checkpoints/leases.py locks for a sync PostgreSQL saver.
    return f"sagagraph:{saga_id}"


class WorkerLeases:
    """Cross-machine saga leases for one worker (a no-op where the saver's lease suffices)."""

    def __init__(self, conn: Any | None) -> None:
        self._conn = conn
        self._lock = asyncio.Lock()  # one statement at a time on the lease connection

    @asynccontextmanager
    async def hold(self, saga_id: str) -> AsyncIterator[None]:
        """Hold the saga's lease for the block; SagaBusyError at once when another has it."""
        if self._conn is None:
            yield
            return
        async with self._lock:
            row = await (await self._conn.execute(_LOCK_SQL, (_key(saga_id),))).fetchone()
        if not row or not row[0]:
            raise SagaBusyError(f"saga {saga_id!r}: in use by another worker or process")
        try:
            yield
        finally:
            async with self._lock:
                await self._conn.execute(_UNLOCK_SQL, (_key(saga_id),))


@asynccontextmanager
async def worker_leases(db_url: str) -> AsyncIterator[WorkerLeases]:
    """The leases of a worker whose checkpointer is ``db_url``."""
    scheme = db_url.split(":", 1)[0].lower()
    if scheme not in ("postgresql", "postgres"):
        yield WorkerLeases(None)
        return
    from psycopg import AsyncConnection
    from psycopg import Error as PsycopgError

    async with AsyncExitStack() as stack:
        try:
            conn = await AsyncConnection.connect(db_url, autocommit=True)
        except PsycopgError as error:
            cause = _redact_text(" ".join(str(error).split()), db_url)
            raise ConfigurationError(
                f"checkpointer url {redact_url(db_url)!r}: cannot connect: {cause}"
            ) from None
        stack.push_async_callback(conn.close)
        yield WorkerLeases(conn)
