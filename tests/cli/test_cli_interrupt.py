"""Ctrl-C on a real ``sagagraph run``: it stops at once, even inside a hung model call.

The scripted model server hangs far longer than the test waits, so an exit at all proves the
call was abandoned rather than awaited. The run names the saga to resume, exits 130, and
``resume`` then finishes it; Ctrl-C while the PDF still loads says nothing was started.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_bad_input import text_pdf
from tests.support.child_processes import default_signals, reap
from tests.support.openai_server import Reply, ScriptedOpenAIServer

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "examples" / "papers" / "complete_paper.md"
HANG = 600.0
"""Seconds the scripted model takes to answer: longer than any wait below."""


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    return base | {"PYTHONPATH": str(REPO)} | extra


class Cli:
    """A ``sagagraph`` process whose stderr lines can be waited for."""

    def __init__(self, cwd: Path, args: list[str], environment: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sagagraph.cli", *args],
            cwd=cwd,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=default_signals,  # Ctrl-C works even if this test run ignores SIGINT
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        with self.proc.stderr:
            for line in self.proc.stderr:
                self.lines.put(line.rstrip("\n"))
        self.lines.put("")  # end of stream

    def __enter__(self) -> Cli:
        return self

    def __exit__(self, *exc: object) -> None:
        """Kill the process if the test ends (a failure, a timeout) while it still runs."""
        reap(self.proc)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def wait_for(self, prefix: str) -> None:
        while True:
            line = self.lines.get(timeout=120)
            self.seen.append(line)
            if line.startswith(prefix):
                return
            assert line or self.proc.poll() is None, f"ended before {prefix!r}: {self.seen}"

    def interrupt(self) -> tuple[int, str]:
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(timeout=60)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        while (line := self.lines.get(timeout=60)) != "":
            self.seen.append(line)
        return code, "\n".join(self.seen)


@pytest.fixture
def hung_model() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(lambda request: Reply(content="{}", delay=HANG)) as server:
        yield server


def test_ctrl_c_during_a_model_call_stops_at_once_then_resume_finishes(
    tmp_path: Path, hung_model: ScriptedOpenAIServer
) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    common = ["--db", db, "--outputs", str(tmp_path / "outputs")]
    model = env(OPENAI_BASE_URL=hung_model.base_url, OPENAI_API_KEY="sk-test-ctrl-c")
    args = ["run", str(PAPER), "--saga-id", "ctrl-1", "--llm", "openai", *common]
    with Cli(tmp_path, args, model) as cli:
        cli.wait_for("  > validator    execute started")
        arrived = threading.Event()
        while not arrived.wait(0.05) and not hung_model.requests:
            assert cli.proc.poll() is None, cli.seen  # the call is on its way: wait till it lands
        code, stderr = cli.interrupt()

    assert code == 130, stderr
    assert "sagagraph: interrupted; saga ctrl-1 can be continued: sagagraph resume ctrl-1" in stderr
    assert "Traceback" not in stderr and " ID" not in stderr
    assert len(hung_model.requests) == 1  # the call was in flight, and was not awaited

    resumed = subprocess.run(
        [sys.executable, "-m", "sagagraph.cli", "resume", "ctrl-1", "--llm", "offline", *common],
        cwd=tmp_path,
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "saga ctrl-1: completed" in resumed.stdout


def test_ctrl_c_while_the_pdf_loads_says_nothing_was_started(tmp_path: Path) -> None:
    pdf = tmp_path / "big.pdf"
    pdf.write_bytes(text_pdf(6000, lambda i: f"Page {i} of a long report about nothing."))
    # Over the default page limit on purpose: a long load to interrupt (the limit is raised).
    limits = {"SAGAGRAPH_LLM": "offline", "SAGAGRAPH_MAX_PAGES": "10000"}
    with Cli(tmp_path, ["run", str(pdf), "--saga-id", "early"], env(**limits)) as cli:
        cli.wait_for("loading big.pdf: page ")
        code, stderr = cli.interrupt()

    assert code == 130, stderr
    assert stderr.splitlines()[-1] == (
        "sagagraph: interrupted before the saga started: nothing was started, nothing written"
    )
    assert "resume" not in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.pdf"]
