"""The PostgreSQL group-commit saver's own promises, as the SQLite one's
(``test_group_commit.py``): concurrent writes share commits, a write has committed when its
call returns, a failing write fails alone, reads do not wait for the writer (not even for a
row it holds locked), and closing commits what is queued. (LangGraph's conformance suite, the
kill-window suite and the crash matrix run it too: ``postgres+group`` in their fixtures.)

Every test writes threads of its own (a random prefix) in the session's fresh database.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from typing import Any

import psycopg
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.checkpoints.group_commit_pg import CHECKPOINTS, WRITES, GroupCommitPostgresSaver

pytestmark = pytest.mark.postgres


def config(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


def stored(saver: GroupCommitPostgresSaver, thread: str) -> RunnableConfig:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"status": "running"}
    checkpoint["channel_versions"] = {"status": saver.get_next_version(None, None)}
    return saver.put(config(thread), checkpoint, {}, dict(checkpoint["channel_versions"]))


def rows_seen_elsewhere(url: str, thread: str) -> int:
    """Writes of ``thread`` another connection sees now."""
    with psycopg.connect(url) as conn:
        sql = f"SELECT count(*) FROM {WRITES} WHERE thread_id = %s"
        row = conn.execute(sql, (thread,)).fetchone()
        return int(row[0]) if row else 0


@pytest.fixture
def saver(postgres_url: str) -> Iterator[GroupCommitPostgresSaver]:
    opened = GroupCommitPostgresSaver(postgres_url)
    opened.setup()
    yield opened
    opened.close()


@pytest.fixture
def prefix() -> str:
    return uuid.uuid4().hex[:8]


def hold_writer(
    saver: GroupCommitPostgresSaver, locked: str | None = None
) -> tuple[threading.Event, threading.Event]:
    """Park the writer inside a transaction until the returned ``release`` is set; with
    ``locked``, holding that thread's checkpoint rows locked (``FOR UPDATE``)."""
    inside, release = threading.Event(), threading.Event()

    def parked(cur: psycopg.Cursor[Any]) -> None:
        sql = f"SELECT 1 FROM {CHECKPOINTS} WHERE thread_id = %s FOR UPDATE"
        cur.execute(sql, (locked or "",))
        cur.fetchall()  # sent now, not at the pipeline's end: the lock is held
        inside.set()
        release.wait(30)

    saver._submit(parked)
    assert inside.wait(30)
    return inside, release


def test_concurrent_writes_share_commits_and_are_visible_on_return(
    saver: GroupCommitPostgresSaver, postgres_url: str, prefix: str
) -> None:
    saved = {f"{prefix}-{i}": stored(saver, f"{prefix}-{i}") for i in range(40)}
    before = saver.commits

    def write(thread: str) -> int:
        saver.put_writes(saved[thread], [("status", "done")], "task-1")
        return rows_seen_elsewhere(postgres_url, thread)

    _, release = hold_writer(saver)  # the 40 writes gather while one transaction is open
    with ThreadPoolExecutor(40) as pool:
        seen = pool.map(write, saved)
        threading.Timer(0.2, release.set).start()
        assert list(seen) == [1] * 40  # each call returned after its row was committed
    assert saver.commits - before < 40


def test_concurrent_async_writes_share_commits_too(
    saver: GroupCommitPostgresSaver, postgres_url: str, prefix: str
) -> None:
    saved = {f"{prefix}-a{i}": stored(saver, f"{prefix}-a{i}") for i in range(40)}
    before = saver.commits

    async def write_all() -> list[int]:
        async def write(thread: str) -> int:
            await saver.aput_writes(saved[thread], [("status", "done")], "task-1")
            return await asyncio.to_thread(rows_seen_elsewhere, postgres_url, thread)

        return await asyncio.gather(*(write(thread) for thread in saved))

    _, release = hold_writer(saver)
    threading.Timer(0.2, release.set).start()
    assert asyncio.run(write_all()) == [1] * 40  # each await ended after its commit
    assert saver.commits - before < 40


def test_a_failing_write_fails_alone(
    saver: GroupCommitPostgresSaver, postgres_url: str, prefix: str
) -> None:
    saved = stored(saver, f"{prefix}-ok")
    _, release = hold_writer(saver)

    def broken(cur: psycopg.Cursor[Any]) -> None:
        cur.execute(f"INSERT INTO {WRITES} (thread_id) VALUES ('x')")  # NOT NULL columns

    failing = saver._submit(broken)
    assert isinstance(failing, Future)  # a sync caller's waiter
    with ThreadPoolExecutor(1) as pool:
        good = pool.submit(saver.put_writes, saved, [("status", "done")], "task-1")
        release.set()
        with pytest.raises(psycopg.errors.NotNullViolation):
            failing.result(30)
        good.result(30)
    assert rows_seen_elsewhere(postgres_url, f"{prefix}-ok") == 1


def test_reads_do_not_wait_for_the_writer(saver: GroupCommitPostgresSaver, prefix: str) -> None:
    thread = f"{prefix}-r"
    saved = stored(saver, thread)
    _, release = hold_writer(saver, locked=thread)
    try:
        found = saver.get_tuple(config(thread))  # the writer holds the row locked
        assert found is not None and found.config == saved
        assert found.checkpoint["channel_values"] == {"status": "running"}
        assert asyncio.run(saver.aget_tuple(config(thread))) == found
        assert [t.config for t in saver.list(config(thread))] == [saved]
    finally:
        release.set()


def test_close_commits_what_is_queued(postgres_url: str, prefix: str) -> None:
    saver = GroupCommitPostgresSaver(postgres_url)
    saver.setup()
    saved = stored(saver, f"{prefix}-c")
    _, release = hold_writer(saver)
    queued = saver._submit(saver._writes_job(saved, [("status", "done")], "task-1", ""))
    threading.Timer(0.2, release.set).start()
    saver.close()
    assert queued.done() and queued.exception() is None
    assert rows_seen_elsewhere(postgres_url, f"{prefix}-c") == 1
    with pytest.raises(RuntimeError, match="closed"):
        saver.put_writes(saved, [("status", "again")], "task-2")


def test_the_url_opens_it_and_the_saga_index_reads_its_tables(postgres_url: str) -> None:
    from bench.fake_saga import PAPER_INPUT, fake_agents, fake_definition
    from sagagraph import build_saga_graph, run_saga
    from sagagraph.checkpoints.saga_index import latest_checkpoints, thread_ids
    from tests.support.services import fresh_postgres_database

    with fresh_postgres_database() as fresh:  # the index lists every saga of the database
        url = fresh.replace("postgresql://", "postgresql+group://", 1)
        with open_checkpointer(url) as saver:
            assert isinstance(saver, GroupCommitPostgresSaver)
            app = build_saga_graph(fake_definition(fake_agents())).compile(checkpointer=saver)
            run_saga(app, PAPER_INPUT, saga_id="a")
            run_saga(app, PAPER_INPUT, saga_id="b", fail_at="summarizer")
            found = {s.saga_id: s.status for s in latest_checkpoints(saver)}
            assert found == {"a": "completed", "b": "rolled_back"}
            assert thread_ids(saver) == {"a", "b"}


def test_a_forked_child_is_refused_instead_of_hanging(
    saver: GroupCommitPostgresSaver, prefix: str
) -> None:
    saved = stored(saver, f"{prefix}-f")
    pid = os.fork()
    if pid == 0:  # the child: no writer thread here
        try:
            saver.put_writes(saved, [("status", "done")], "task-1")
        except RuntimeError as error:
            os._exit(3 if "used in a fork" in str(error) else 4)
        os._exit(5)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 3
    saver.put_writes(saved, [("status", "done")], "task-1")  # the parent still writes


def test_a_cut_writer_connection_is_opened_again(
    saver: GroupCommitPostgresSaver, postgres_url: str, prefix: str
) -> None:
    saved = stored(saver, f"{prefix}-cut")
    assert saver._writer_conn is not None
    backend = saver._writer_conn.info.backend_pid
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
    with suppress(psycopg.OperationalError):  # the write that finds it cut may fail
        saver.put_writes(saved, [("status", "done")], "task-1")
    saver.put_writes(saved, [("status", "done")], "task-1")  # on a new connection
    assert rows_seen_elsewhere(postgres_url, f"{prefix}-cut") == 1
    assert saver._writer_conn.info.backend_pid != backend
