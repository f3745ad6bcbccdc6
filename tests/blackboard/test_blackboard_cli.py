"""``--mode blackboard`` through the real ``sagagraph`` command: the reference scenarios end
with the same status, files and exit code as orchestration; a run killed with SIGKILL in the
middle of a contribution is finished by ``recover`` (or ``resume``) without duplicated entries."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_recovery_cli import PAPER, faulty_run, files_under, json_lines, sagagraph

pytestmark = pytest.mark.slow

INCOMPLETE = PAPER.with_name("incomplete_paper.md")
FILES = ("review.txt", "summary.txt", "validation.txt")


def run_json(cwd: Path, *args: str) -> tuple[int, dict[str, Any]]:
    proc = sagagraph(cwd, "run", *args, "--llm", "offline", "--json")
    assert "Traceback" not in proc.stderr
    view: dict[str, Any] = json.loads(proc.stdout)
    return proc.returncode, view


def unique_versions(view: dict[str, Any]) -> list[tuple[str, int, str]]:
    keys = [(e["topic"], e["version"], e["status"]) for e in view["board"]]
    assert len({(t, v) for t, v, _ in keys}) == len(keys), keys
    return keys


@pytest.mark.parametrize(
    ("paper", "fail_at", "status", "compensated", "files"),
    [
        (PAPER, None, "completed", [], FILES),
        (INCOMPLETE, None, "rolled_back", [], ()),
        (PAPER, "summarizer", "rolled_back", ["summarizer", "reviewer", "validator"], ()),
    ],
    ids=["complete", "invalid", "fail-at-summarizer"],
)
def test_the_reference_scenarios_end_as_under_orchestration(
    tmp_path: Path,
    paper: Path,
    fail_at: str | None,
    status: str,
    compensated: list[str],
    files: tuple[str, ...],
) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    common = [str(paper), "--db", db, "--outputs", str(tmp_path / "out")]
    common += ["--fail-at", fail_at] if fail_at else []
    board_code, board = run_json(tmp_path, *common, "--mode", "blackboard", "--saga-id", "bb")
    orch_code, orch = run_json(tmp_path, *common, "--saga-id", "orch")

    assert (board["mode"], orch["mode"]) == ("blackboard", "orchestration")
    assert (board["status"], board["compensated"]) == (status, compensated)
    for field in ("status", "reason", "completed", "compensated"):
        assert board[field] == orch[field], field
    assert board_code == orch_code
    assert files_under(tmp_path / "out") == sorted(
        f"{saga}/{name}" for saga in ("bb", "orch") for name in files
    )
    shown = sagagraph(tmp_path, "status", "bb", "--db", db, "--json")
    assert shown.returncode == board_code, shown.stderr  # status exits as run did
    status_view = json.loads(shown.stdout)
    assert status_view["board"] == board["board"]
    assert status_view["next"] == []


def test_recover_finishes_a_board_killed_during_a_contribution_without_duplicates(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    outputs = tmp_path / "out"
    args = [str(PAPER), "--mode", "blackboard", "--db", db, "--outputs", str(outputs)]
    args += ["--llm", "offline"]
    for saga_id, crash in [
        ("killed-reviewing", "reviewer:execute:during:sigkill"),
        ("killed-summarizing", "summarizer:execute:after:sigkill"),
    ]:
        proc = faulty_run(tmp_path, ["--crash", crash], *args, "--saga-id", saga_id)
        assert proc.returncode == -signal.SIGKILL, proc.stderr

    before = json.loads(
        sagagraph(tmp_path, "status", "killed-reviewing", "--db", db, "--json").stdout
    )
    assert before["status"] == "running" and before["next"] == ["reviewer"]
    assert [e["topic"] for e in before["board"]] == ["validator"]

    recovered = sagagraph(tmp_path, "recover", "--db", db, "--json")
    assert recovered.returncode == 0, recovered.stderr
    views = json_lines(recovered.stdout)
    assert set(views) == {"killed-reviewing", "killed-summarizing"}
    for view in views.values():
        assert view["status"] == "completed"
        assert unique_versions(view) == [
            ("validator", 1, "posted"),
            ("reviewer", 1, "posted"),
            ("summarizer", 1, "posted"),
            ("reviewer", 2, "refined"),
        ]
        executed = [e["step"] for e in view["events"] if e["action"] == "execute"]
        assert executed == ["validator", "reviewer", "summarizer", "reviewer_refinement"]
    assert files_under(outputs) == sorted(f"{saga}/{name}" for saga in views for name in FILES)
    again = sagagraph(tmp_path, "recover", "--db", db)
    assert (again.returncode, again.stderr.strip()) == (0, "nothing to recover")


def test_resume_and_recover_compensate_on_a_killed_board(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    outputs = tmp_path / "out"
    args = [str(PAPER), "--mode", "blackboard", "--db", db, "--outputs", str(outputs)]
    args += ["--llm", "offline"]
    crash = ["--crash", "summarizer:execute:during:sigkill"]
    assert faulty_run(tmp_path, crash, *args, "--saga-id", "resumed").returncode < 0
    assert faulty_run(tmp_path, crash, *args, "--saga-id", "undone").returncode < 0

    resumed = sagagraph(tmp_path, "resume", "resumed", "--db", db, "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "completed"

    undone = sagagraph(tmp_path, "recover", "--compensate", "--db", db, "--json")
    view = json_lines(undone.stdout)["undone"]
    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["summarizer", "reviewer", "validator"]
    assert [(e["topic"], e["status"]) for e in view["board"]] == [
        ("validator", "posted"),
        ("reviewer", "posted"),
        ("reviewer", "withdrawn"),
        ("validator", "withdrawn"),
    ]
    assert files_under(outputs) == [f"resumed/{name}" for name in FILES]


def test_a_retraction_that_fails_waits_for_an_operator_then_finishes(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    outputs = tmp_path / "out"
    args = [str(PAPER), "--mode", "blackboard", "--db", db, "--outputs", str(outputs)]
    args += ["--llm", "offline", "--fail-at", "summarizer", "--saga-id", "stuck"]
    run = faulty_run(tmp_path, ["--break-undo", "reviewer"], *args)
    assert run.returncode == 4, run.stderr
    assert "sagagraph resolve stuck --retry" in run.stdout

    waiting = json.loads(sagagraph(tmp_path, "status", "stuck", "--db", db, "--json").stdout)
    assert (waiting["status"], waiting["waiting_for_operator"]) == ("compensation_failed", True)
    # The review could not be retracted: it is still on the board, and still on disk.
    assert [(e["topic"], e["status"]) for e in waiting["board"]] == [
        ("validator", "posted"),
        ("reviewer", "posted"),
    ]
    assert files_under(outputs) == ["stuck/review.txt", "stuck/validation.txt"]

    retried = sagagraph(tmp_path, "resolve", "stuck", "--retry", "--db", db, "--json")
    assert retried.returncode == 3, retried.stderr
    view = json.loads(retried.stdout)
    assert (view["status"], view["compensated"]) == (
        "rolled_back",
        ["summarizer", "reviewer", "validator"],
    )
    assert [(e["topic"], e["version"], e["status"]) for e in view["board"]][2:] == [
        ("reviewer", 2, "withdrawn"),
        ("validator", 2, "withdrawn"),
    ]
    assert files_under(outputs) == []


def test_the_llm_controller_through_the_command_and_the_scripted_server(tmp_path: Path) -> None:
    from tests.cli.test_recovery_cli import SAGAGRAPH, clean_env
    from tests.graph.test_llm_router import ScriptedRouter
    from tests.support.openai_server import ScriptedOpenAIServer

    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    with ScriptedOpenAIServer(ScriptedRouter(["formatting_agent"])) as server:
        env = clean_env() | {
            "OPENAI_API_KEY": "sk-test-blackboard",
            "OPENAI_BASE_URL": server.base_url,
        }
        command = [str(SAGAGRAPH), "run", str(PAPER), "--mode", "blackboard", "--router", "llm"]
        command += ["--llm", "offline", "--db", db, "--outputs", str(tmp_path / "out"), "--json"]
        proc = subprocess.run(
            command,
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        calls = len(server.requests)
    assert proc.returncode == 0, proc.stderr
    view = json.loads(proc.stdout)
    assert (view["mode"], view["router"], view["status"]) == ("blackboard", "llm", "completed")
    rejected = [e for e in view["events"] if e["outcome"] == "rejected"]
    assert len(rejected) == 1 and "'formatting_agent' is not a step" in rejected[0]["detail"]
    # One decision per knowledge source, one for the refinement, one to finish, one re-ask.
    assert calls == 6
    assert [e["version"] for e in view["board"]] == [1, 1, 1, 2]
    assert "sk-test-blackboard" not in proc.stdout + proc.stderr
