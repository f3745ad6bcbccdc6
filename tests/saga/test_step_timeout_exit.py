"""A ``sagagraph run`` whose step timed out exits once its saga is decided.

The model server accepts the request and never answers, so the timed-out call stays blocked
in a socket read (LangChain runs it on a thread pool the interpreter joins at exit). The
command must not wait for it: its exit code (3, rolled back) arrives while the call still
hangs. The bound is generous; it only tells "exits" from "waits for the client's 120 s".
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.tcp_listener import listener

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "examples" / "papers" / "complete_paper.md"
EXIT_BOUND = 60.0
"""Seconds the command may take: far above 2 attempts x 2 s, far below the client's 120 s."""


def test_a_run_whose_step_timed_out_exits_with_its_code_while_the_call_hangs(
    tmp_path: Path,
) -> None:
    with listener(None) as port:  # accepts, reads nothing, answers nothing
        base = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
        env = base | {
            "PYTHONPATH": str(REPO),
            "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
            "OPENAI_API_KEY": "sk-test-hung",
        }
        args = ["run", str(PAPER), "--llm", "openai", "--step-timeout", "2", "--json"]
        with subprocess.Popen(
            [sys.executable, "-m", "sagagraph.cli", *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as proc:
            try:
                out, err = proc.communicate(timeout=EXIT_BOUND)
            finally:
                if proc.poll() is None:  # the assertion below fails: leave no process behind
                    proc.kill()
                    proc.communicate()
    assert proc.returncode == 3, err
    assert '"status": "rolled_back"' in out
    assert "did not finish within 2s" in out
