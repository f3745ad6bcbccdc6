"""The Python block of docs/choices.md runs as written and prints what the page says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "choices.md"


def test_the_example_runs_and_prints_its_comments(tmp_path: Path) -> None:
    (block,) = re.findall(r"^```python\n(.*?)^```", PAGE.read_text(), flags=re.S | re.M)
    script = tmp_path / "snippet.py"
    script.write_text(block)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env | {"PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    promised = re.findall(r"^# (\[.*\])$", block, flags=re.M)
    printed = [line for line in done.stdout.splitlines() if line.startswith("[")]
    assert printed[0] == re.search(r"# (\[.*?\])\n", block).group(1)  # type: ignore[union-attr]
    assert printed[1:] == promised
