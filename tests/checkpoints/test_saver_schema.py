"""The part of LangGraph's saver schema sagagraph reads itself, checked after ``setup()``.

The saga index (:mod:`sagagraph.checkpoints.saga_index`) runs its own SELECT over the savers'
``checkpoints`` table: ``thread_id``, ``checkpoint_ns``, ``checkpoint_id`` and the
``metadata`` column the stamp lives in. The reader of finished sagas
(:mod:`sagagraph.checkpoints.finished`) also asks the savers' ``writes`` table (PostgreSQL:
``checkpoint_writes``) whether a checkpoint has pending writes. docs/architecture.md lists
that dependency; this test fails when a LangGraph release moves any of it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sagagraph.checkpoints.factory import open_checkpointer

READ_COLUMNS = {"thread_id", "checkpoint_ns", "checkpoint_id", "metadata"}
WRITES_COLUMNS = {"thread_id", "checkpoint_ns", "checkpoint_id"}


def test_sqlite_savers_have_the_columns_the_saga_index_reads(tmp_path: Path) -> None:
    path = tmp_path / "schema.sqlite"
    with open_checkpointer(f"sqlite:///{path}"):
        pass
    with sqlite3.connect(path) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(checkpoints)")}
        writes = {row[1] for row in conn.execute("PRAGMA table_info(writes)")}
    assert columns >= READ_COLUMNS, sorted(READ_COLUMNS - columns)
    assert writes >= WRITES_COLUMNS, sorted(WRITES_COLUMNS - writes)


@pytest.mark.postgres
def test_postgres_savers_have_the_columns_the_saga_index_reads(postgres_url: str) -> None:
    import psycopg

    with open_checkpointer(postgres_url):
        pass
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'checkpoints'"
        ).fetchall()
        writes = {
            row[0]
            for row in conn.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'checkpoint_writes'"
            ).fetchall()
        }
    columns = dict(rows)
    assert set(columns) >= READ_COLUMNS, sorted(READ_COLUMNS - set(columns))
    assert columns["metadata"] == "jsonb"  # the index reads it with ->
    assert writes >= WRITES_COLUMNS, sorted(WRITES_COLUMNS - writes)
