"""The paper saga through the real ``sagagraph`` command: killed, recovered, escalated, resolved.

Each saga is started by ``tests.support.crash_worker cli``, which runs the real CLI with faults
injected into the paper agents' OutputStore (it dies at a boundary, or refuses to undo a
step). Everything after that is the installed ``sagagraph`` command in a new process:
``recover`` (forward, and ``--compensate``), ``list --status compensation_failed``,
``resolve --retry`` and ``resolve --skip --note``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sagagraph.agents.store import LEDGER_DIR
from tests.support.services import fresh_postgres_database
from tests.support.toy_saga import CRASH_EXIT_CODE, HOLDING

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "examples" / "papers" / "complete_paper.md"
PAPER_FILES = {"validator": "validation.txt", "reviewer": "review.txt", "summarizer": "summary.txt"}
SAGAGRAPH = Path(sys.executable).parent / "sagagraph"


def clean_env() -> dict[str, str]:
    """The environment without sagagraph settings or API keys: everything comes from flags."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    return env | {"PYTHONPATH": str(REPO)}


def sagagraph(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed ``sagagraph`` command, in a new process."""
    command = [str(SAGAGRAPH)] if SAGAGRAPH.exists() else [sys.executable, "-m", "sagagraph.cli"]
    return subprocess.run(
        [*command, *args], cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=120
    )


def faulty_run(cwd: Path, faults: list[str], *run_args: str) -> subprocess.CompletedProcess[str]:
    """``sagagraph run`` with faults injected into the paper store (tests.support.crash_worker)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.support.crash_worker",
            "cli",
            *faults,
            "--",
            "run",
            *run_args,
        ],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def json_lines(text: str) -> dict[str, dict[str, Any]]:
    """``recover --json`` prints one view per line."""
    views = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    return {v["saga_id"]: v for v in views}


def files_under(outputs: Path) -> list[str]:
    """Every file under outputs except the store's ledger, relative, sorted."""
    if not outputs.exists():
        return []
    return sorted(
        p.relative_to(outputs).as_posix()
        for p in outputs.rglob("*")
        if p.is_file() and LEDGER_DIR not in p.parts
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], code: int) -> str:
    """The one error line (progress lines, which stderr also carries, aside)."""
    from tests.cli.test_bad_input import without_progress

    assert proc.returncode == code, proc.stderr
    lines = without_progress(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("sagagraph: error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


@dataclass(frozen=True)
class KilledRun:
    saga_id: str
    crash: str
    fail_at: str | None
    status: str
    compensated: list[str]


KILLED = [
    KilledRun("mid-review", "reviewer:execute:after:sigkill", None, "completed", []),
    KilledRun("before-summary", "summarizer:execute:before", None, "completed", []),
    KilledRun(
        "undoing-review",
        "reviewer:compensate:before",
        "summarizer",
        "rolled_back",
        ["summarizer", "reviewer", "validator"],
    ),
    KilledRun(
        "undid-validation",
        "validator:compensate:after:sigkill",
        "summarizer",
        "rolled_back",
        ["summarizer", "reviewer", "validator"],
    ),
]


def test_sagagraph_recover_finishes_every_paper_saga_killed_at_a_boundary(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    outputs = tmp_path / "outputs"

    def kill(run: KilledRun) -> int:
        args = [str(PAPER), "--db", db, "--outputs", str(outputs), "--llm", "offline"]
        args += ["--saga-id", run.saga_id] + (["--fail-at", run.fail_at] if run.fail_at else [])
        proc = faulty_run(tmp_path, ["--crash", run.crash], *args)
        assert proc.returncode in (CRASH_EXIT_CODE, -signal.SIGKILL), proc.stderr
        return proc.returncode

    with ThreadPoolExecutor(len(KILLED)) as pool:
        list(pool.map(kill, KILLED))

    recovered = sagagraph(tmp_path, "recover", "--db", db, "--json")

    # Every saga found is finished now (some rolled back, as their runs asked): recover succeeded.
    assert recovered.returncode == 0, recovered.stderr
    assert "Traceback" not in recovered.stderr
    views = json_lines(recovered.stdout)
    assert set(views) == {run.saga_id for run in KILLED}
    for run in KILLED:
        view = views[run.saga_id]
        assert (view["status"], view["compensated"]) == (run.status, run.compensated), run
    # Exactly the completed sagas' three files each; nothing of the rolled-back ones.
    assert files_under(outputs) == sorted(
        f"{run.saga_id}/{name}"
        for run in KILLED
        if run.status == "completed"
        for name in PAPER_FILES.values()
    )
    again = sagagraph(tmp_path, "recover", "--db", db)
    assert (again.returncode, again.stderr.strip()) == (0, "nothing to recover")


def test_a_write_killed_before_its_rename_leaves_no_temporary_file_after_recovery(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    outputs = tmp_path / "outputs"
    args = [str(PAPER), "--db", db, "--outputs", str(outputs), "--llm", "offline"]
    died = faulty_run(tmp_path, ["--crash", "summarizer:execute:during"], *args, "--saga-id", "mid")
    assert died.returncode == CRASH_EXIT_CODE, died.stderr
    assert any(name.endswith(".tmp") for name in files_under(outputs))

    recovered = sagagraph(tmp_path, "recover", "--db", db)

    assert recovered.returncode == 0, recovered.stderr
    assert files_under(outputs) == [f"mid/{name}" for name in sorted(PAPER_FILES.values())]


@pytest.mark.postgres
def test_sagagraph_recover_compensate_rolls_back_on_postgres(tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    with fresh_postgres_database() as db:
        args = [str(PAPER), "--db", db, "--outputs", str(outputs), "--llm", "offline"]
        died = faulty_run(
            tmp_path, ["--crash", "reviewer:execute:after:sigkill"], *args, "--saga-id", "pg"
        )
        assert died.returncode == -signal.SIGKILL, died.stderr
        assert files_under(outputs) == ["pg/review.txt", "pg/validation.txt"]

        recovered = sagagraph(tmp_path, "recover", "--compensate", "--db", db, "--json")

    assert recovered.returncode == 0, recovered.stderr  # rolled back, as asked
    view = json_lines(recovered.stdout)["pg"]
    assert view["status"] == "rolled_back"
    # The reviewer died after writing: compensated first (with no result), then the validator.
    assert view["compensated"] == ["reviewer", "validator"]
    assert "recover --compensate" in view["reason"]
    assert files_under(outputs) == []


def test_an_operator_retries_one_stuck_saga_and_skips_another(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    outputs = tmp_path / "outputs"
    args = [str(PAPER), "--db", db, "--outputs", str(outputs), "--llm", "offline"]
    args += ["--fail-at", "summarizer"]

    def stuck(saga_id: str) -> subprocess.CompletedProcess[str]:
        # The reviewer's undo fails on every attempt in this process: the saga escalates.
        return faulty_run(tmp_path, ["--break-undo", "reviewer"], *args, "--saga-id", saga_id)

    with ThreadPoolExecutor(2) as pool:
        runs = dict(
            zip(["to-retry", "to-skip"], pool.map(stuck, ["to-retry", "to-skip"]), strict=True)
        )
    for saga_id, run in runs.items():
        assert run.returncode == 4, run.stderr
        alerts = [line for line in run.stderr.splitlines() if "CRITICAL" in line]
        assert len(alerts) == 1 and saga_id in alerts[0] and "reviewer" in alerts[0], run.stderr
        assert f"sagagraph resolve {saga_id} --retry" in run.stdout

    waiting = sagagraph(tmp_path, "list", "--status", "compensation_failed", "--db", db, "--json")
    assert waiting.returncode == 0, waiting.stderr
    assert sorted(v["saga_id"] for v in json.loads(waiting.stdout)) == ["to-retry", "to-skip"]
    status = sagagraph(tmp_path, "status", "to-retry", "--db", db, "--json")
    stuck_view = json.loads(status.stdout)
    assert stuck_view["waiting_for_operator"] is True
    assert stuck_view["compensation_failure"] == {
        "step": "reviewer",
        "phase": "compensate",
        "error": "ConnectionError: reviewer: undo refused (injected by the test)",
        "attempts": 3,
    }
    assert files_under(outputs) == [
        "to-retry/review.txt",
        "to-retry/validation.txt",
        "to-skip/review.txt",
        "to-skip/validation.txt",
    ]

    # --retry: the undo works in this new process, and the rollback finishes.
    retried = sagagraph(tmp_path, "resolve", "to-retry", "--retry", "--db", db, "--json")
    assert retried.returncode == 3, retried.stderr
    retried_view = json.loads(retried.stdout)
    assert retried_view["status"] == "rolled_back"
    assert retried_view["compensated"] == ["summarizer", "reviewer", "validator"]

    # --skip needs a note; with one, the saga ends saying an operator took responsibility.
    assert "--note is required" in assert_one_line_error(
        sagagraph(tmp_path, "resolve", "to-skip", "--skip", "--db", db), 2
    )
    note = "ops (ana): review kept for the audit, ticket 7"
    skipped = sagagraph(
        tmp_path, "resolve", "to-skip", "--skip", "--note", note, "--db", db, "--json"
    )
    assert skipped.returncode == 3, skipped.stderr
    skipped_view = json.loads(skipped.stdout)
    assert skipped_view["status"] == "resolved_by_operator"
    assert skipped_view["compensated"] == ["summarizer", "validator"]
    assert skipped_view["skipped"] == [
        {
            "step": "reviewer",
            "note": note,
            "error": "ConnectionError: reviewer: undo refused (injected by the test)",
            "left_behind": str(outputs / "to-skip" / "review.txt"),
        }
    ]
    # What the operator skipped is still there, and recorded; everything else is undone.
    assert files_under(outputs) == ["to-skip/review.txt"]

    none_left = sagagraph(tmp_path, "list", "--status", "compensation_failed", "--db", db)
    assert none_left.stdout.strip() == "no sagas with status compensation_failed"
    assert_one_line_error(sagagraph(tmp_path, "resolve", "to-retry", "--retry", "--db", db), 2)


def test_sagagraph_recover_leaves_alone_a_saga_that_a_live_run_holds(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    outputs = tmp_path / "outputs"
    args = [str(PAPER), "--db", db, "--outputs", str(outputs), "--llm", "offline"]
    holder = subprocess.Popen(
        [
            *(sys.executable, "-m", "tests.support.crash_worker", "cli"),
            *("--crash", "reviewer:execute:after:hold", "--", "run", *args, "--saga-id", "held"),
        ],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == HOLDING
        busy = sagagraph(tmp_path, "recover", "--db", db)
        holder.kill()
        holder.communicate(timeout=30)
        after = sagagraph(tmp_path, "recover", "--db", db, "--json")
    finally:
        holder.kill()

    assert busy.returncode == 75, busy.stderr  # left unfinished: try again later
    assert "in use by another process" in busy.stderr
    assert json_lines(after.stdout)["held"]["status"] == "completed"
