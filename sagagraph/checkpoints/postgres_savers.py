"""LangGraph's PostgreSQL savers, each checkpoint's metadata stamped with its saga's summary
(as :mod:`sagagraph.checkpoints.savers` for SQLite). A module of its own, since PostgreSQL is
an extra (``make extra EXTRA=postgres`` in the checkout).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, closing, contextmanager, suppress
from typing import Any

from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg import Connection
from psycopg import Error as PsycopgError

from sagagraph.checkpoints.finished import CREATE, TABLE, record_finished
from sagagraph.checkpoints.savers import Stamping


class SagaPostgresSaver(Stamping, PostgresSaver):
    """``PostgresSaver`` that stamps the saga's summary into each checkpoint's metadata and
    keeps each finished saga's fields."""

    keeps_finished = True

    def setup(self) -> None:
        super().setup()
        with self.own_cursor() as cur:
            cur.execute(CREATE)

    def own_cursor(self) -> AbstractContextManager[Any]:
        """A cursor on the saver's public connection, under its lock (a pool: a connection
        of its own), for the statements on sagagraph's own table; autocommit."""
        return _own_cursor(self)

    def keep_finished(self, record: tuple[str, str, str]) -> None:
        # A record that cannot be written only leaves the saga to the full read.
        with suppress(PsycopgError), self.own_cursor() as cur:
            record_finished(cur, record, "%s")

    def forget_finished(self, saga_id: str) -> None:
        with suppress(PsycopgError), self.own_cursor() as cur:
            cur.execute(f"DELETE FROM {TABLE} WHERE saga_id = %s", (saga_id,))


@contextmanager
def _own_cursor(saver: PostgresSaver) -> Iterator[Any]:
    if isinstance(saver.conn, Connection):
        with saver.lock, closing(saver.conn.cursor()) as cur:
            yield cur
    else:
        with saver.conn.connection() as conn, closing(conn.cursor()) as cur:
            yield cur


class SagaAsyncPostgresSaver(Stamping, AsyncPostgresSaver):
    """``AsyncPostgresSaver`` that stamps the saga's summary into each checkpoint's metadata."""
