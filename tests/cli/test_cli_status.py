"""``sagagraph status`` finds a saga in the checkpointer or, failing that, the event log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sagagraph.cli import main

PAPER = Path(__file__).resolve().parents[2] / "examples" / "papers" / "complete_paper.md"


pytestmark = pytest.mark.usefixtures("offline_cli")


def test_status_of_a_choreographed_saga_creates_no_checkpoint_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(PAPER), "--mode", "choreography", "--saga-id", "c1", "--json"]) == 0
    capsys.readouterr()
    assert main(["status", "c1", "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert (view["saga_id"], view["mode"], view["status"]) == ("c1", "choreography", "completed")
    assert not (tmp_path / "sagagraph.sqlite").exists()


def test_status_of_an_orchestrated_saga_and_of_an_unknown_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(PAPER), "--saga-id", "o1", "--json"]) == 0
    capsys.readouterr()
    assert main(["status", "o1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mode"] == "orchestration"
    assert main(["status", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "sagagraph: error: saga 'nope': not found in sqlite:///sagagraph.sqlite (checkpointer) "
        "nor on sqlite:///sagagraph-events.sqlite (event log)"
    )


def test_run_parallel_completes_and_rolls_back_like_the_chain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(PAPER), "--parallel", "--saga-id", "p1", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert sorted(done["completed"]) == ["reviewer", "summarizer", "validator"]
    assert sorted(done["outputs"]) == ["reviewer", "summarizer", "validator"]

    args = ["run", str(PAPER), "--parallel", "--saga-id", "p2", "--fail-at", "summarizer"]
    assert main([*args, "--json"]) == 3
    undone = json.loads(capsys.readouterr().out)
    assert undone["compensated"] == ["summarizer", "reviewer", "validator"]
    assert not (tmp_path / "outputs" / "p2").exists()


def test_parallel_is_refused_where_it_cannot_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(PAPER), "--parallel", "--mode", "choreography"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sagagraph: error: ") and "\n" not in err
    assert "parallel" in err
