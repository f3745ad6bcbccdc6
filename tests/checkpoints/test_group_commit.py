"""The group-commit saver's own promises: concurrent writes share commits, a write has
committed when its call returns, a failing write fails alone, reads do not wait for the
writer, and closing commits what is queued. (LangGraph's conformance suite, the kill-window
suite and the crash matrix run it too: ``sqlite+group`` in their fixtures.)"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.checkpoints.group_commit import WRITES, GroupCommitSqliteSaver


def config(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


def stored(saver: GroupCommitSqliteSaver, thread: str) -> RunnableConfig:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"status": "running"}
    checkpoint["channel_versions"] = {"status": saver.get_next_version(None, None)}
    return saver.put(config(thread), checkpoint, {}, dict(checkpoint["channel_versions"]))


def rows_seen_elsewhere(path: Path, thread: str) -> int:
    """Writes of ``thread`` a connection of another process's kind sees now."""
    with closing(sqlite3.connect(path)) as conn:
        sql = f"SELECT count(*) FROM {WRITES} WHERE thread_id = ?"
        return int(conn.execute(sql, (thread,)).fetchone()[0])


@pytest.fixture
def saver(tmp_path: Path) -> Any:
    opened = GroupCommitSqliteSaver(str(tmp_path / "group.sqlite"))
    yield opened
    opened.close()


def hold_writer(saver: GroupCommitSqliteSaver) -> tuple[threading.Event, threading.Event]:
    """Park the writer inside a transaction until the returned ``release`` is set."""
    inside, release = threading.Event(), threading.Event()

    def parked(conn: sqlite3.Connection) -> None:
        conn.execute("SELECT 1")
        inside.set()
        release.wait(30)

    saver._submit(parked)
    assert inside.wait(30)
    return inside, release


def test_concurrent_writes_share_commits_and_are_visible_on_return(
    saver: GroupCommitSqliteSaver, tmp_path: Path
) -> None:
    saved = {f"t{i}": stored(saver, f"t{i}") for i in range(40)}
    before = saver.commits

    def write(thread: str) -> int:
        saver.put_writes(saved[thread], [("status", "done")], "task-1")
        return rows_seen_elsewhere(tmp_path / "group.sqlite", thread)

    _, release = hold_writer(saver)  # the 40 writes gather while one transaction is open
    with ThreadPoolExecutor(40) as pool:
        seen = pool.map(write, saved)
        threading.Timer(0.2, release.set).start()
        assert list(seen) == [1] * 40  # each call returned after its row was committed
    assert saver.commits - before < 40


def test_a_failing_write_fails_alone(saver: GroupCommitSqliteSaver, tmp_path: Path) -> None:
    saved = stored(saver, "ok")
    _, release = hold_writer(saver)

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute(f"INSERT INTO {WRITES} (thread_id) VALUES ('x')")  # NOT NULL columns

    failing = saver._submit(broken)
    with ThreadPoolExecutor(1) as pool:
        good = pool.submit(saver.put_writes, saved, [("status", "done")], "task-1")
        release.set()
        with pytest.raises(sqlite3.IntegrityError):
            failing.result(30)
        good.result(30)
    assert rows_seen_elsewhere(tmp_path / "group.sqlite", "ok") == 1


def test_reads_do_not_wait_for_the_writer(saver: GroupCommitSqliteSaver) -> None:
    saved = stored(saver, "r")
    _, release = hold_writer(saver)
    try:
        found = saver.get_tuple(config("r"))  # the writer holds its transaction open
        assert found is not None and found.config == saved
        assert found.checkpoint["channel_values"] == {"status": "running"}
        assert asyncio.run(saver.aget_tuple(config("r"))) == found
    finally:
        release.set()


def test_close_commits_what_is_queued(tmp_path: Path) -> None:
    path = tmp_path / "group.sqlite"
    saver = GroupCommitSqliteSaver(str(path))
    saved = stored(saver, "c")
    _, release = hold_writer(saver)
    queued = saver._submit(saver._writes_job(saved, [("status", "done")], "task-1", ""))
    threading.Timer(0.2, release.set).start()
    saver.close()
    assert queued.done() and queued.exception() is None
    assert rows_seen_elsewhere(path, "c") == 1
    with pytest.raises(RuntimeError, match="closed"):
        saver.put_writes(saved, [("status", "again")], "task-2")


def test_the_url_opens_it_and_the_saga_index_reads_its_tables(tmp_path: Path) -> None:
    from bench.fake_saga import PAPER_INPUT, fake_agents, fake_definition
    from sagagraph import build_saga_graph, run_saga
    from sagagraph.checkpoints.saga_index import latest_checkpoints, thread_ids

    url = f"sqlite+group:///{tmp_path / 'sagas.sqlite'}"
    with open_checkpointer(url) as saver:
        assert isinstance(saver, GroupCommitSqliteSaver)
        app = build_saga_graph(fake_definition(fake_agents())).compile(checkpointer=saver)
        run_saga(app, PAPER_INPUT, saga_id="a")
        run_saga(app, PAPER_INPUT, saga_id="b", fail_at="summarizer")
        found = {s.saga_id: s.status for s in latest_checkpoints(saver)}
        assert found == {"a": "completed", "b": "rolled_back"}
        assert thread_ids(saver) == {"a", "b"}


def test_a_forked_child_is_refused_instead_of_hanging(saver: GroupCommitSqliteSaver) -> None:
    saved = stored(saver, "f")
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
