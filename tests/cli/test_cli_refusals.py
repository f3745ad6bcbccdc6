"""The real ``sagagraph`` command refuses hostile input, and recovers each saga on its own line.

- ``run /dev/zero``, a FIFO named ``paper.md``, an oversized text paper, ``--saga-id ''``:
  exit 2, one line, nothing written (issue 12 item 5).
- A saga killed right after its input checkpoint (no step begun) beside one killed mid-way:
  ``recover`` finishes both, one line each, in the folder each recorded (item 1).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_recovery_cli import (
    PAPER,
    PAPER_FILES,
    REPO,
    assert_one_line_error,
    clean_env,
    faulty_run,
    files_under,
    json_lines,
    sagagraph,
)

pytestmark = pytest.mark.slow


def _refused(tmp_path: Path, paper: str, *flags: str) -> str:
    db = tmp_path / "sagas.sqlite"
    proc = sagagraph(tmp_path, "run", paper, "--db", f"sqlite:///{db}", "--outputs", "out", *flags)
    line = assert_one_line_error(proc, 2)
    assert not db.exists() and not (tmp_path / "out").exists(), "nothing written"
    return line


def test_dev_zero_is_refused_at_once(tmp_path: Path) -> None:
    line = _refused(tmp_path, "/dev/zero")
    assert line == (
        "sagagraph: error: /dev/zero: not a regular file (a device); give a PDF, .txt or .md file"
    )


def test_a_fifo_named_paper_md_is_refused_instead_of_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "paper.md"
    os.mkfifo(fifo)
    # sagagraph() has a timeout: a hang fails the test instead of blocking the suite.
    line = _refused(tmp_path, str(fifo))
    assert line.endswith("paper.md: not a regular file (a FIFO); give a PDF, .txt or .md file")


def test_a_text_paper_over_the_configured_limit_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_text(PAPER.read_text() + "word " * 600_000)  # about 3 MB of "paper"
    line = _refused(tmp_path, str(big))
    assert "larger than the limit of 2 MB (SAGAGRAPH_MAX_TEXT_MB)" in line


def test_an_empty_saga_id_is_refused_not_replaced(tmp_path: Path) -> None:
    line = _refused(tmp_path, str(PAPER), "--saga-id", "")
    assert line == "sagagraph: error: saga id: must be a non-empty string"


def test_recover_finishes_a_saga_killed_before_its_first_step_beside_the_others(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    outputs = tmp_path / "recorded-outputs"
    killed = subprocess.run(
        [
            sys.executable, "-m", "tests.support.kill_worker", "run", "--db", db,
            "--outputs", str(outputs), "--paper", str(PAPER), "--saga-id", "unstarted",
            "--kill", "put:1", "--settings",
        ],
        cwd=REPO, env=clean_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr
    died = faulty_run(
        tmp_path,
        ["--crash", "reviewer:execute:after:sigkill"],
        str(PAPER), "--saga-id", "midway", "--db", db, "--outputs", str(outputs),
    )  # fmt: skip
    assert died.returncode == -9, died.stderr

    listed = sagagraph(tmp_path, "list", "--db", db, "--json")
    assert listed.returncode == 0, listed.stderr
    assert {v["saga_id"]: v["status"] for v in json.loads(listed.stdout)} == {
        "midway": "running",
        "unstarted": "running",
    }
    recovered = sagagraph(tmp_path, "recover", "--db", db, "--json")
    assert recovered.returncode == 0, recovered.stderr
    views = json_lines(recovered.stdout)
    assert {s: v["status"] for s, v in views.items()} == {
        "midway": "completed",
        "unstarted": "completed",
    }
    expected = [
        f"{s}/{name}" for s in ("midway", "unstarted") for name in sorted(PAPER_FILES.values())
    ]
    assert files_under(outputs) == expected
