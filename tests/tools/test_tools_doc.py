"""Every code block of docs/tools.md runs as written.

Each Python block runs alone as a script in a subprocess, from a fresh temporary folder,
offline (the blocks use scripted chat models); the shell block runs from the repository's
folder, as the page says; the JSON block parses.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "tools.md"


def blocks(language: str) -> list[str]:
    pattern = rf"^```{language}\n(.*?)^```"
    return re.findall(pattern, PAGE.read_text(), flags=re.S | re.M)


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    return subprocess.run(
        args,
        cwd=cwd,
        env=env | {"PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_page_has_its_blocks() -> None:
    assert len(blocks("python")) == 5
    assert len(blocks("sh")) == 1
    assert len(blocks("json")) == 1
    fenced = re.findall(r"^```(\w*)$", PAGE.read_text(), flags=re.M)
    assert set(fenced) == {"python", "sh", "json", ""}, "a block of another language"


@pytest.mark.slow
@pytest.mark.parametrize("number", range(len(blocks("python"))), ids=lambda n: f"block{n + 1}")
def test_each_python_block_runs_as_written(number: int, tmp_path: Path) -> None:
    script = tmp_path / "snippet.py"
    script.write_text(blocks("python")[number])
    proc = run([sys.executable, str(script)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.strip(), "the block printed nothing"


def test_the_parallel_calls_block_prints_what_its_comments_say(tmp_path: Path) -> None:
    [block] = [b for b in blocks("python") if "create_compensating_agent(" in b]
    script = tmp_path / "snippet.py"
    script.write_text(block)
    proc = run([sys.executable, str(script)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "run failed: INSUFFICIENT_FUNDS",
        "trip-42:agent:call-1 book_flight undone",
        "trip-42:agent:call-2 reserve_room undone",
        "trip-42:agent:call-3 charge_wallet failed",
        "still booked: {}",
        "[]",
    ]


def test_the_lock_block_prints_what_its_comment_says(tmp_path: Path) -> None:
    [block] = [b for b in blocks("python") if 'lock="seat:{flight}:{seat}"' in b]
    script = tmp_path / "snippet.py"
    script.write_text(block)
    proc = run([sys.executable, str(script)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    said = [line.removeprefix("# ") for line in block.splitlines() if line.startswith("# ")]
    assert proc.stdout.splitlines() == said


@pytest.mark.slow
def test_the_shell_block_runs_from_the_repository(tmp_path: Path) -> None:
    for line in blocks("sh")[0].splitlines():
        command = line.split("#", 1)[0].split()
        assert command[:2] == ["python", "-m"], line
        proc = run([sys.executable, *command[1:]], REPO)
        assert proc.returncode == 0, f"{line}\n{proc.stdout}\n{proc.stderr}"


def test_the_json_block_parses() -> None:
    view = json.loads(blocks("json")[0])
    assert view["tools"]["flight"][0]["status"] == "undone"
