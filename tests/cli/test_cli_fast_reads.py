"""Reading a finished saga loads no LangGraph: ``status``, ``list`` and ``events`` answer
from the view stamped when the saga ended (``sagagraph_finished``), with the database driver
alone, and print exactly what the full read through the saver prints.

A store without that table (written by an older sagagraph), or a saga that has not ended,
is read through the saver as before; the outputs are compared between the two paths.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sagagraph.cli import main
from tests.support.command_probe import imported, probe
from tests.support.services import saga_database

PAPERS = Path(__file__).resolve().parents[2] / "examples" / "papers"
COMPLETE = PAPERS / "complete_paper.md"
INCOMPLETE = PAPERS / "incomplete_paper.md"

ENDINGS = {
    "done": (COMPLETE, ()),
    "halted": (INCOMPLETE, ()),
    "undone": (COMPLETE, ("--fail-at", "summarizer")),
    "par-undone": (COMPLETE, ("--parallel", "--fail-at", "reviewer")),
    "bb-done": (COMPLETE, ("--mode", "blackboard")),
    "adaptive": (COMPLETE, ("--pipeline", "adaptive")),
}
"""Saga suffix -> the paper and the flags ``run`` gets."""

pytestmark = pytest.mark.usefixtures("offline_cli")


@pytest.fixture(params=["sqlite", "postgres"])
def finished(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """A store of its own (SQLite file, fresh PostgreSQL database) holding one finished saga
    per way a saga ends; its URL and the saga ids."""
    if request.param == "postgres":
        request.getfixturevalue("postgres_url")  # skips (or fails under CI) without a server
    with saga_database(request.param, tmp_path) as db:
        prefix = f"fr{uuid.uuid4().hex[:6]}"
        ids = []
        for suffix, (paper, flags) in ENDINGS.items():
            ids.append(f"{prefix}-{suffix}")
            main(["run", str(paper), "--saga-id", ids[-1], "--db", db, *flags])
        yield db, ids


def commands(ids: list[str]) -> list[tuple[str, ...]]:
    """Every reading command of the sagas ``ids``, text and JSON."""
    found: list[tuple[str, ...]] = [("list",), ("list", "--json")]
    for saga_id in ids:
        for verb in ("status", "events"):
            found += [(verb, saga_id), (verb, saga_id, "--json")]
    return found


def test_reading_finished_sagas_imports_no_langgraph_nor_langchain(
    finished: tuple[str, list[str]], tmp_path: Path
) -> None:
    db, ids = finished
    every_ending = [("status", saga_id) for saga_id in ids]
    for args in [
        *every_ending,
        ("status", ids[1], "--json"),
        ("events", ids[2]),
        ("events", ids[4], "--json"),
        ("list",),
        ("list", "--json"),
    ]:
        result = probe(tmp_path, *args, "--db", db)
        assert result["code"] in (0, 3, 5), args
        loaded = [
            p
            for p in ("langgraph", "langchain_core", "langchain")
            if imported(result["modules"], p)
        ]
        assert loaded == [], args


def drop_finished_table(db: str) -> None:
    """Make the store one without the stamped views, as an older sagagraph left it."""
    if db.startswith("sqlite"):
        with sqlite3.connect(db.split(":///", 1)[1]) as conn:
            conn.execute("DROP TABLE sagagraph_finished")
    else:
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("DROP TABLE sagagraph_finished")


def outputs(capsys: pytest.CaptureFixture[str], db: str, ids: list[str]) -> list[object]:
    found: list[object] = []
    for args in commands(ids):
        code = main([*args, "--db", db])
        found.append((args, code, capsys.readouterr()))
    return found


def test_the_fast_and_the_full_read_print_the_same(
    finished: tuple[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, ids = finished
    capsys.readouterr()
    fast = outputs(capsys, db, ids)
    drop_finished_table(db)
    full = outputs(capsys, db, ids)
    assert fast == full
    assert len({str(out) for _, _, out in fast}) == len(fast)  # something different each


def test_an_unfinished_saga_beside_finished_ones_is_read_through_its_graph(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A saga whose latest checkpoint is not the stamped final one (writes after it) is read
    in full: ``status`` shows what the writes say, not the stamped view."""
    from sagagraph import open_checkpointer, saga_config

    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    assert main(["run", str(COMPLETE), "--saga-id", "s1", "--db", db]) == 0
    with open_checkpointer(db) as checkpointer:
        latest = checkpointer.get_tuple(saga_config("s1"))
        assert latest is not None
        checkpointer.put_writes(latest.config, [("status", "running")], "a-task")
    capsys.readouterr()
    fast = outputs(capsys, db, ["s1"])
    drop_finished_table(db)
    assert fast == outputs(capsys, db, ["s1"])
