"""``python -m bench.isolation``: both variants run the same sagas to a final status, and the
countermeasures' row has no anomaly (the naive row's counts depend on how threads interleave,
so they are not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ANOMALIES = ("overbooked_seats", "tickets_without_seat", "lost_updates", "failed_for_nothing")


def test_the_countermeasures_leave_no_anomaly(tmp_path: Path) -> None:
    # Two seats, half the cards refusing: without the seat's lock, several sagas a run are
    # refused by a booking that is then undone (failed_for_nothing), and a seat may go unsold.
    args = ["--sagas", "24", "--seats", "2", "--threads", "8", "--fail", "0.5", "--seed", "4"]
    done = subprocess.run(
        [sys.executable, "-m", "bench.isolation", *args, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    rows = {row["variant"]: row for row in json.loads(done.stdout)["rows"]}
    assert set(rows) == {"naive", "countermeasures"}
    for row in rows.values():
        assert row["completed"] + row["rolled_back"] == 24
    kept = rows["countermeasures"]
    assert {name: kept[name] for name in ANOMALIES} == dict.fromkeys(ANOMALIES, 0)
    assert kept["completed"] == 2  # each seat sold once, to a saga that could pay
