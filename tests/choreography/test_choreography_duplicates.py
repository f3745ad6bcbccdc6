"""A signed event copied into the same log under a new row id re-runs nothing, and ``events``
marks it a duplicate instead of listing it as genuine (issue 38, item 8)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from sagagraph.choreography.runner import run_choreographed_saga, saga_events
from tests.support.choreo_saga import file_saga

KEY = "a-deployment-key-for-duplicates"


def test_a_copy_under_a_new_row_id_is_marked_a_duplicate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGAGRAPH_BUS_KEY", KEY)
    monkeypatch.delenv("SAGAGRAPH_BUS_KEY_FILE", raising=False)
    url = f"sqlite:///{tmp_path / 'events.sqlite'}"
    definition = file_saga(tmp_path / "work")
    assert run_choreographed_saga(definition, {}, "twice", url, timeout=30)["status"] == (
        "completed"
    )
    with closing(sqlite3.connect(tmp_path / "events.sqlite")) as conn, conn:
        saga, saga_id, kind, body = conn.execute(
            "SELECT saga, saga_id, type, body FROM bus_events WHERE type = 'validated'"
        ).fetchone()
        conn.execute(
            "INSERT INTO bus_events (id, saga, saga_id, type, body, published_at) "
            "VALUES ('another-row', ?, ?, ?, ?, 'now')",
            (saga, saga_id, kind, body),
        )
    listed = saga_events(url, "twice")
    validated = [e for e in listed if e["type"] == "validated"]
    assert len(validated) == 2
    assert "duplicate" not in validated[0] and "refused" not in validated[0]
    assert validated[1]["duplicate"] is True and "duplicate" in validated[1]["refused"]
