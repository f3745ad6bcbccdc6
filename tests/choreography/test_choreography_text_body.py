"""A ``bus_events`` row whose body is TEXT, not BLOB (issue 38, item 4).

Any writer of the SQLite log can add one. It is refused and recorded like any other
malformed event: the three agent processes keep going and finish the sagas after it, and
``events``, ``list`` and ``status`` still answer.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from sagagraph.choreography.runner import start_choreographed_saga, wait_for_sagas
from tests.choreography.test_choreography_processes import agent_processes
from tests.support.choreo_saga import PAPER_STEPS, file_saga

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sagagraph.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def test_a_text_body_is_refused_and_recorded_and_agents_and_readers_keep_going(
    tmp_path: Path,
) -> None:
    with agent_processes("sqlite", tmp_path) as (agents, bus):
        definition = file_saga(agents.root)
        start_choreographed_saga(definition, {}, "before", bus)
        url = agents.url
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn, conn:
            body = json.dumps({"id": "text-row", "kind": "event"})
            conn.execute(
                "INSERT INTO bus_events (id, saga, saga_id, type, body, published_at) "
                "VALUES ('text-row', 'paper_review', 'before', 'paper_submitted', ?, 'now')",
                (body,),
            )
        for step in PAPER_STEPS:
            agents.start(step)
        start_choreographed_saga(definition, {}, "after", bus)
        views = wait_for_sagas(bus, ["before", "after"], timeout=60)
        assert {s: v["status"] for s, v in views.items()} == {
            "before": "completed",
            "after": "completed",
        }, agents.logs()
        codes = agents.stop_all()
        letters = bus.dead_letters()
    assert set(codes.values()) == {0}, agents.logs()
    assert any("not BLOB" in letter["error"] for letter in letters), letters
    for args in (["events", "before"], ["status", "before", "--json"], ["list", "--json"]):
        done = cli(*args, "--bus", url, "--db", f"sqlite:///{tmp_path / 'none.sqlite'}")
        assert done.returncode == 0, (args, done.stderr)
        assert "unexpected error" not in done.stderr
