"""The command line shows which side of its pivot a saga is on, and the locks it holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sagagraph import build_saga_graph, open_checkpointer, resolve_saga, run_saga
from sagagraph.graph.locking import held_locks
from tests.support.pivot_saga import Journal, pivot_saga

REPO = Path(__file__).resolve().parents[2]
SAGAGRAPH = Path(sys.executable).parent / "sagagraph"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    return subprocess.run(
        [str(SAGAGRAPH), *args],
        cwd=cwd,
        env=env | {"PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_graph_marks_each_step_by_its_side_of_the_pivot(tmp_path: Path) -> None:
    done = cli(tmp_path, "graph", "--app", "tests.support.pivot_saga:pivot_app")
    assert done.returncode == 0, done.stderr
    assert "\tclass reserve compensatable" in done.stdout
    assert "\tclass charge pivot" in done.stdout
    assert "\tclass ship,notify retriable" in done.stdout
    # Past the pivot no edge leads back to compensation.
    assert "ship -.-> compensate" not in done.stdout
    assert "ship -.-> retry_gate" in done.stdout
    assert "sagagraph_routes_itself" not in done.stdout
    assert "compensate -.-> compensate" not in done.stdout


def test_status_shows_the_pivot_and_the_locks_of_a_saga_waiting_past_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    definition = pivot_saga(Journal(tmp_path / "journal.sqlite"))
    with open_checkpointer(url) as saver:
        app = build_saga_graph(definition).compile(checkpointer=saver)
        run_saga(app, {"item": "lamp", "ship_failures": 9}, saga_id="lamp-order")

    shown = cli(tmp_path, "status", "lamp-order", "--db", url)
    assert shown.returncode == 4, shown.stderr
    assert "pivot: charge (past it: only forward)" in shown.stdout
    assert "holds lock: stock:lamp (step reserve" in shown.stdout
    assert "needs an operator: past the pivot, ship failed" in shown.stdout
    view = json.loads(cli(tmp_path, "status", "lamp-order", "--db", url, "--json").stdout)
    assert (view["pivot"], view["past_pivot"]) == ("charge", True)
    assert [lock["key"] for lock in view["locks"]] == ["stock:lamp"]

    with open_checkpointer(url) as saver:
        app = build_saga_graph(definition).compile(checkpointer=saver)
        view = resolve_saga(app, "lamp-order", "skip", note="ops: sent by courier")
        assert view["status"] == "completed"
        assert held_locks(saver) == []
