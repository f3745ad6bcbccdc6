"""``sagagraph list``: both coordination styles, orphans shown as such, nothing created."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sagagraph.cli import main
from tests.support.toy_saga import HOLDING

REPO = Path(__file__).resolve().parents[2]
PAPERS = REPO / "examples" / "papers"
COMPLETE = PAPERS / "complete_paper.md"


pytestmark = pytest.mark.usefixtures("offline_cli")


def listed(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, object]]:
    assert main(["list", "--json", *args]) == 0
    rows: list[dict[str, object]] = json.loads(capsys.readouterr().out)
    return rows


def test_list_in_an_empty_folder_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list"]) == 0
    assert capsys.readouterr().out.strip() == "no sagas"
    assert listed(capsys) == []
    assert list(tmp_path.iterdir()) == []


def test_list_shows_both_styles_with_a_header_paper_and_last_update(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", str(COMPLETE), "--saga-id", "orch-1"]) == 0
    assert main(["run", str(PAPERS / "incomplete_paper.md"), "--saga-id", "orch-2"]) == 5
    assert main(["run", str(COMPLETE), "--mode", "choreography", "--saga-id", "chor-1"]) == 0
    capsys.readouterr()

    rows = {r["saga_id"]: r for r in listed(capsys)}
    assert set(rows) == {"orch-1", "orch-2", "chor-1"}
    assert (rows["chor-1"]["mode"], rows["chor-1"]["status"]) == ("choreography", "completed")
    assert rows["orch-2"]["status"] == "rolled_back"
    assert all(str(r["paper"]).endswith(".md") and r["updated"] for r in rows.values())
    assert [r["saga_id"] for r in listed(capsys, "--status", "rolled_back")] == ["orch-2"]

    assert main(["list"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].split() == ["SAGA", "STATUS", "MODE", "PAPER", "UPDATED", "COMPLETED", "REASON"]
    chor = next(line for line in text if line.startswith("chor-1"))
    assert "choreo" in chor and "complete_paper.md" in chor
    # `status` of a choreographed saga that `list` showed: found, not "not found".
    assert main(["status", "chor-1"]) == 0


def test_list_refuses_an_unknown_status(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["list", "--status", "bogus"])
    assert refused.value.code == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err


def test_a_running_saga_whose_process_died_is_listed_as_orphaned(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    env |= {"PYTHONPATH": str(REPO), "SAGAGRAPH_LLM": "offline"}
    args = [str(COMPLETE), "--db", db, "--outputs", str(tmp_path / "outputs")]

    def sagagraph_list() -> dict[str, object]:
        proc = subprocess.run(
            [sys.executable, "-m", "sagagraph.cli", "list", "--db", db, "--json"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        rows: list[dict[str, object]] = json.loads(proc.stdout)
        return {str(r["saga_id"]): r for r in rows}["held"]  # type: ignore[return-value]

    holder = subprocess.Popen(
        [
            *(sys.executable, "-m", "tests.support.crash_worker", "cli"),
            *("--crash", "reviewer:execute:after:hold", "--", "run", *args, "--saga-id", "held"),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == HOLDING
        alive = sagagraph_list()
        holder.kill()
        holder.communicate(timeout=30)
        dead = sagagraph_list()
    finally:
        holder.kill()
    assert (alive["status"], alive["orphaned"]) == ("running", False)
    assert (dead["status"], dead["orphaned"]) == ("running", True)


def test_resume_of_an_unknown_saga_says_why_and_of_a_choreographed_one_finds_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["resume", "nope"]) == 2
    assert capsys.readouterr().err.strip() == (
        "sagagraph: error: saga 'nope': not found in sqlite:///sagagraph.sqlite (checkpointer) "
        "nor on sqlite:///sagagraph-events.sqlite (event log)"
    )
    assert list(tmp_path.iterdir()) == []
    assert main(["run", str(COMPLETE), "--mode", "choreography", "--saga-id", "ch"]) == 0
    capsys.readouterr()
    # A choreographed saga is resumed by its agents (issue 12.9); a finished one stays as it
    # is, and no checkpoint database is created to find out.
    assert main(["resume", "ch", "--json"]) == 0
    assert '"status": "completed"' in capsys.readouterr().out
    assert not (tmp_path / "sagagraph.sqlite").exists()


def test_a_file_name_with_terminal_escapes_is_listed_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A name that could recolour or rewrite the terminal is shown escaped, as `run` shows it."""
    odd = tmp_path / "red\x1b[31mX.md"
    shutil.copyfile(COMPLETE, odd)
    assert main(["run", str(odd), "--saga-id", "esc-1"]) == 0
    capsys.readouterr()
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "red\\x1b[31mX.md" in out
    [row] = listed(capsys)
    assert str(row["paper"]).endswith("red\x1b[31mX.md"), "the JSON keeps the name as it is"


def test_a_server_checkpointer_does_not_read_a_stray_local_event_log(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A choreographed saga on the default event log of this folder, as an earlier
    # `run --mode choreography` leaves it: `list --db postgresql://...` is about that
    # database, so it reads an event log only when --bus or SAGAGRAPH_BUS names one.
    assert main(["run", str(COMPLETE), "--mode", "choreography", "--saga-id", "stray-1"]) == 0
    capsys.readouterr()
    assert "stray-1" not in {r["saga_id"] for r in listed(capsys, "--db", postgres_url)}
    named = listed(capsys, "--db", postgres_url, "--bus", "sqlite:///sagagraph-events.sqlite")
    assert "stray-1" in {r["saga_id"] for r in named}
    # With a SQLite checkpointer the local event log is its companion: read as before.
    assert "stray-1" in {r["saga_id"] for r in listed(capsys)}
