"""The Ctrl-C tests pass when the test run itself was started with SIGINT ignored.

``nohup make test &`` (and some CI runners) start the tests with SIGINT ignored, and an
ignored signal stays ignored across ``exec``: a child that does not set its own handler
cannot be interrupted. So the Ctrl-C test runs here under a parent that ignores SIGINT, and
must pass: the tests that send signals give their children the default handlers themselves
(:mod:`tests.support.child_processes`), and leave no child behind whatever happens.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
CTRL_C_TESTS = next(REPO.glob("tests/**/test_cli_interrupt.py"))
"""The Ctrl-C tests, wherever the test tree keeps them."""


def ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_the_ctrl_c_tests_pass_under_a_parent_that_ignores_sigint(tmp_path: Path) -> None:
    env = os.environ | {"PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [*PYTEST, str(CTRL_C_TESTS)],
        cwd=REPO,
        env=env,
        preexec_fn=ignore_sigint,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "2 passed" in result.stdout


TIMED_OUT = """
import subprocess, sys, time
from pathlib import Path
from tests.support.child_processes import default_signals, reaped

def test_hangs_past_its_timeout():
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"], preexec_fn=default_signals
    )
    Path("child.pid").write_text(str(child.pid))
    with reaped(child):
        time.sleep(600)
"""


def test_a_test_killed_by_its_timeout_leaves_no_child_running(tmp_path: Path) -> None:
    (tmp_path / "test_timed_out.py").write_text(TIMED_OUT)
    env = os.environ | {"PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [*PYTEST, "--timeout", "3", "test_timed_out.py"],
        cwd=tmp_path,
        env=env,
        preexec_fn=ignore_sigint,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1 and "Timeout" in result.stdout, result.stdout[-2000:]
    pid = int((tmp_path / "child.pid").read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return
    os.kill(pid, signal.SIGKILL)
    raise AssertionError(f"the child {pid} outlived the test that timed out")
