"""A genuine signed event copied verbatim into another log that shares the key (issue 38,
item 3): the signature binds the event to its log, so the second log refuses it. Agents of
the second deployment (real processes) start nothing and touch no file of the first's."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from sagagraph.choreography.buses import open_bus
from sagagraph.choreography.runner import start_choreographed_saga, wait_for_sagas
from tests.choreography.test_choreography_processes import agent_processes
from tests.support.choreo_saga import PAPER_STEPS, file_saga

KEY = "a-deployment-key-shared-by-two-logs"


def rows(path: Path) -> list[tuple[str, str, str, str, bytes]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(
            "SELECT id, saga, saga_id, type, body FROM bus_events ORDER BY position"
        ).fetchall()


def test_a_signed_event_copied_into_another_log_is_refused_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGAGRAPH_BUS_KEY", KEY)
    monkeypatch.delenv("SAGAGRAPH_BUS_KEY_FILE", raising=False)
    first = tmp_path / "first"
    first.mkdir()
    with agent_processes("sqlite", first) as (agents, bus):
        for step in PAPER_STEPS:
            agents.start(step)
        start_choreographed_saga(file_saga(agents.root), {}, "copied", bus)
        done = wait_for_sagas(bus, ["copied"], timeout=60)
        assert done["copied"]["status"] == "completed", agents.logs()
        kept = sorted(p.name for p in (agents.root / "copied").iterdir())
        submitted = next(r for r in rows(Path(agents.url.removeprefix("sqlite:///"))))
    second = tmp_path / "second"
    second.mkdir()
    with agent_processes("sqlite", second) as (others, other_bus):
        other_bus.read_log()  # the log exists, with its own id
        with closing(sqlite3.connect(others.url.removeprefix("sqlite:///"))) as conn, conn:
            conn.execute(
                "INSERT INTO bus_events (id, saga, saga_id, type, body, published_at) "
                "VALUES (?, ?, ?, ?, ?, 'now')",
                submitted,
            )
        assert other_bus.read_log() == []  # not genuine here
        for step in PAPER_STEPS:
            others.start(step, env={"SAGAGRAPH_BUS_KEY": KEY})
        # A saga started there after the copy completes: the agents kept going past it.
        start_choreographed_saga(file_saga(others.root), {}, "own", other_bus)
        assert wait_for_sagas(other_bus, ["own"], timeout=60)["own"]["status"] == "completed"
        assert [m["saga_id"] for m in other_bus.read_log() if m["saga_id"] == "copied"] == []
    assert sorted(p.name for p in (agents.root / "copied").iterdir()) == kept
    assert not (others.root / "copied").exists()
    with closing(open_bus(agents.url)) as reopened:
        assert {m["saga_id"] for m in reopened.read_log()} == {"copied"}
