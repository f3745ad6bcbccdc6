"""Kill windows of an LLM-routed saga: a ``sagagraph run --router llm`` (orchestration, and the
blackboard's controller) killed while its router decides, and right after each checkpoint
write, then finished by ``sagagraph recover``.

The router's model is the real ``ChatOpenAI`` client against a scripted server on 127.0.0.1
that proposes the right next step. One case per window: during the router's model call
(before each of its four decisions: the process is killed while the request is in flight),
and after every ``put`` and every ``put_writes`` of a whole run (by ``os._exit``, and by
``SIGKILL`` after ``put``). Then ONE ``sagagraph recover`` (forward, or ``--compensate``)
from a new process must find every saga, whatever its router, and end each all-or-nothing:
``completed`` with its three files, or ``rolled_back`` with none; a second ``recover`` finds
nothing.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.child_processes import reaped
from tests.support.kill_saver import KILL_EXIT_CODE
from tests.support.openai_server import Reply, ScriptedOpenAIServer, request_text, structured
from tests.support.services import saga_database

pytestmark = [pytest.mark.slow, pytest.mark.kill_fleet]

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "examples" / "papers" / "complete_paper.md"
STEPS = ["validator", "reviewer", "summarizer"]
FILES = {"validation.txt", "review.txt", "summary.txt"}
DECISIONS = len(STEPS) + 1
"""Router decisions of a whole run: one before each step, and ``finish``."""


class Router:
    """The scripted router: proposes the next step not committed yet, or ``finish``. When
    armed with a process and a decision number, it kills that process with SIGKILL as the
    request for that decision arrives, so the process dies while its model call is in flight."""

    def __init__(self) -> None:
        self.victim: subprocess.Popen[str] | None = None
        self.kill_at_decision: int | None = None
        self.killed = threading.Event()

    def __call__(self, request: dict[str, Any]) -> Reply:
        text = request_text(request)
        found = re.search(r'"committed":\s*(\[[^\]]*\])', text)
        committed = json.loads(found.group(1)) if found else []
        if self.victim is not None and self.kill_at_decision == len(committed):
            self.victim.send_signal(signal.SIGKILL)
            self.victim.wait()
            self.killed.set()
        proposal = next((s for s in STEPS if s not in committed), "finish")
        return structured(request, {"next_step": proposal, "reason": "next in order"})


def _env(db: str, outputs: Path, server: ScriptedOpenAIServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    return env | {
        "PYTHONPATH": str(REPO),
        "SAGAGRAPH_DB": db,
        "SAGAGRAPH_OUTPUTS": str(outputs),
        "SAGAGRAPH_LLM": "offline",
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": server.base_url,
    }


def _worker(
    env: dict[str, str], *head: str, saga_id: str, mode: str = "orchestration"
) -> subprocess.Popen[str]:
    command = ["run", str(PAPER), "--router", "llm", "--mode", mode, "--saga-id", saga_id]
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.cli_kill_worker", *head, "--", *command],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sagagraph.cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _final_views(db: str, outputs: Path, mode: str, saga_ids: list[str]) -> dict[str, Any]:
    """Each saga's view, read in this process through its own router's graph (no model is
    called: the stand-in router model only fills the graph's shape)."""
    from sagagraph import build_saga_graph, open_checkpointer, saga_status
    from sagagraph.agents import paper_blackboard_graph, paper_saga_definition

    definition = paper_saga_definition(outputs_dir=str(outputs))
    build = paper_blackboard_graph if mode == "blackboard" else build_saga_graph
    graph = build(definition, router="llm", router_model="reading-only")
    with open_checkpointer(db) as saver:
        app = graph.compile(checkpointer=saver)
        return {saga_id: saga_status(app, saga_id) for saga_id in saga_ids}


def _files(outputs: Path, saga_id: str) -> set[str]:
    folder = outputs / saga_id
    return {p.name for p in folder.iterdir()} if folder.exists() else set()


@pytest.mark.parametrize(
    ("mode", "backend", "finish"),
    [
        ("orchestration", "sqlite", "forward"),
        ("orchestration", "postgres", "compensate"),
        ("blackboard", "sqlite", "forward"),
        ("blackboard", "postgres", "compensate"),
    ],
    ids=lambda p: str(p),
)
def test_recover_finishes_an_llm_routed_saga_killed_at_every_window(
    tmp_path: Path, mode: str, backend: str, finish: str
) -> None:
    outputs = tmp_path / "outputs"
    router = Router()
    with saga_database(backend, tmp_path) as db, ScriptedOpenAIServer(router) as server:
        env = _env(db, outputs, server)
        counts_file = tmp_path / "counts.json"
        with reaped(_worker(env, "count", str(counts_file), saga_id="whole", mode=mode)) as whole:
            assert whole.wait(timeout=300) == 0, "the whole run failed"
        counts: dict[str, int] = json.loads(counts_file.read_text())
        assert counts["put"] > DECISIONS and counts["put_writes"] > DECISIONS

        killed: dict[str, int] = {}
        for decision in range(DECISIONS):
            saga_id = f"router-{decision}"
            router.victim = _worker(env, "count", os.devnull, saga_id=saga_id, mode=mode)
            router.kill_at_decision = decision
            router.killed.clear()
            with reaped(router.victim):  # no process left behind if the test fails here
                killed[saga_id] = router.victim.wait(timeout=300)
            assert router.killed.is_set(), f"{saga_id}: the router's call never came"
            router.victim = None
        for method in ("put", "put_writes"):
            for n in range(1, counts[method] + 1):
                for how in ("exit", "sigkill") if method == "put" else ("exit",):
                    saga_id = f"{method.replace('_', '-')}-{n}-{how}"
                    proc = _worker(env, "kill", method, str(n), how, saga_id=saga_id, mode=mode)
                    with reaped(proc):
                        killed[saga_id] = proc.wait(timeout=300)

        # Every case died where it was told to: none finished on its own.
        for saga_id, code in killed.items():
            want = KILL_EXIT_CODE if saga_id.endswith("-exit") else -signal.SIGKILL
            assert code == want, f"{saga_id}: exit {code}"

        # `status` names it unfinished (exit 75), reading it with its own router's graph.
        assert _cli(env, "status", "router-1").returncode == 75
        first = _cli(env, "recover", *(["--compensate"] if finish == "compensate" else []))
        assert first.returncode == 0, first.stderr[-3000:]
        assert "nothing to recover" not in first.stderr
        second = _cli(env, "recover")
        assert second.returncode == 0 and "nothing to recover" in second.stderr, second.stderr

        views = _final_views(db, outputs, mode, list(killed))
        for saga_id in killed:
            view = views[saga_id]
            files = _files(outputs, saga_id)
            if view["status"] == "completed":
                # Under --compensate too, when its final decision was stored before the kill.
                assert view["completed"] == STEPS and files == FILES, saga_id
            else:
                assert view["status"] == "rolled_back", f"{saga_id}: {view['status']}"
                assert view["completed"] == [] and files == set(), saga_id
            executed = [
                e["step"]
                for e in view["events"]
                if e["action"] == "execute" and e["outcome"] == "ok"
            ]
            assert len(executed) == len(set(executed)), f"{saga_id}: a step committed twice"
        if finish == "forward":
            assert all(_files(outputs, s) == FILES for s in killed), "forward completes them all"
