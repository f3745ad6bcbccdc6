"""An adaptive, LLM-routed ``sagagraph run`` killed while its router decides, then resumed.

The router is the real ``ChatOpenAI`` client against a scripted server on 127.0.0.1 that
takes the reviewer and the reproducibility check (the example paper reports experiments). It
kills the run with SIGKILL as the request for decision N arrives, for every N: the process
dies with the model call in flight. ``sagagraph resume ID`` from a new process then finishes
the saga on SQLite, with the adaptive graph it recorded: the same route, each step once, the
four files.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.child_processes import reaped
from tests.support.openai_server import Reply, ScriptedOpenAIServer, structured

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "examples" / "papers" / "complete_paper.md"
ROUTE = ["validator", "reviewer", "reproducibility", "summarizer"]
FILES = {"validation.txt", "review.txt", "reproducibility.txt", "summary.txt"}


class Router:
    """Proposes the next step of ``ROUTE`` not committed yet, or ``finish``; when armed, kills
    its victim as the request for decision ``kill_at`` arrives."""

    def __init__(self) -> None:
        self.victim: subprocess.Popen[str] | None = None
        self.kill_at: int | None = None
        self.killed = threading.Event()

    def __call__(self, request: dict[str, Any]) -> Reply:
        view = json.loads(request["messages"][-1]["content"])
        committed = view["committed"]
        if self.victim is not None and self.kill_at == len(committed):
            self.victim.send_signal(signal.SIGKILL)
            self.victim.wait()
            self.killed.set()
        proposal = next((s for s in ROUTE if s not in committed), "finish")
        return structured(request, {"next_step": proposal, "reason": "scripted"})


def _env(tmp_path: Path, server: ScriptedOpenAIServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    return env | {
        "PYTHONPATH": str(REPO),
        "SAGAGRAPH_DB": f"sqlite:///{tmp_path / 'sagas.sqlite'}",
        "SAGAGRAPH_OUTPUTS": str(tmp_path / "outputs"),
        "SAGAGRAPH_LLM": "offline",
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": server.base_url,
    }


def _sagagraph(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sagagraph.cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_resume_finishes_an_adaptive_saga_killed_at_each_router_decision(tmp_path: Path) -> None:
    router = Router()
    with ScriptedOpenAIServer(router) as server:
        env = _env(tmp_path, server)
        for decision in range(len(ROUTE) + 1):
            saga_id = f"killed-{decision}"
            command = ["run", str(PAPER), "--pipeline", "adaptive", "--router", "llm"]
            router.victim = subprocess.Popen(
                [sys.executable, "-m", "sagagraph.cli", *command, "--saga-id", saga_id],
                cwd=REPO,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            router.kill_at = decision
            router.killed.clear()
            with reaped(router.victim):
                assert router.victim.wait(timeout=300) == -signal.SIGKILL
            assert router.killed.is_set(), f"{saga_id}: the router's call never came"
            router.victim = None

            resumed = _sagagraph(env, "resume", saga_id, "--json")
            assert resumed.returncode == 0, resumed.stderr[-2000:]
            view = json.loads(resumed.stdout)
            assert view["status"] == "completed", saga_id
            assert view["completed"] == ROUTE, saga_id
            folder = tmp_path / "outputs" / saga_id
            assert {p.name for p in folder.iterdir()} == FILES, saga_id
            executed = [
                e["step"]
                for e in view["events"]
                if e["action"] == "execute" and e["outcome"] == "ok"
            ]
            assert executed == ROUTE, f"{saga_id}: a step committed twice or out of route"
