"""Agents as separate processes: many sagas, and agents killed mid-event then restarted."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sagagraph.choreography.bus import EventBus
from sagagraph.choreography.runner import start_choreographed_saga, wait_for_sagas
from tests.support.child_processes import default_signals
from tests.support.choreo_agent_proc import CRASH_AFTER_COMMIT_EXIT_CODE
from tests.support.choreo_buses import bus_url_for, cleaned_up
from tests.support.choreo_saga import CRASH_ENV, CRASH_EXIT_CODE, PAPER_STEPS, file_saga, log_lines

REPO = Path(__file__).resolve().parents[2]
PROCESS_BACKENDS = ["sqlite", pytest.param("amqp", marks=pytest.mark.rabbitmq)]


class Agents:
    """Agent subprocesses of the file saga, their logs under ``tmp_path``."""

    def __init__(self, url: str, root: Path, tmp_path: Path) -> None:
        self.url = url
        self.root = root
        self.tmp_path = tmp_path
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.starts = 0

    def start(self, step: str, *extra: str, env: dict[str, str] | None = None) -> None:
        self.starts += 1
        log = (self.tmp_path / f"{step}-{self.starts}.log").open("wb")
        command = [sys.executable, "-m", "tests.support.choreo_agent_proc", step, "--bus", self.url]
        command += ["--root", str(self.root), "--state", str(self.tmp_path / "agents"), *extra]
        inherited = {k: v for k, v in os.environ.items() if k != CRASH_ENV}
        environment = inherited | {"PYTHONPATH": str(REPO)} | (env or {})
        self.procs[step] = subprocess.Popen(
            command,
            cwd=REPO,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=default_signals,  # SIGTERM stops it even if this run ignores it
        )
        log.close()

    def wait_exit(self, step: str, timeout: float = 60) -> int:
        return self.procs[step].wait(timeout)

    def stop_all(self) -> dict[str, int | None]:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        codes: dict[str, int | None] = {}
        for step, proc in self.procs.items():
            try:
                codes[step] = proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                codes[step] = None
        return codes

    def logs(self) -> str:
        return "\n".join(p.read_text() for p in sorted(self.tmp_path.glob("*.log")))


@contextmanager
def agent_processes(backend: str, tmp_path: Path) -> Iterator[tuple[Agents, EventBus]]:
    url = bus_url_for(backend, tmp_path)
    root = tmp_path / "work"
    with cleaned_up(url, tmp_path) as bus:
        agents = Agents(url, root, tmp_path)
        try:
            yield agents, bus
        finally:
            agents.stop_all()


def expected_outcome(input: dict[str, Any], fail_at: str | None) -> tuple[str, list[str]]:
    """Status and compensations a saga of the file saga must end with."""
    stop = fail_at or input.get("broken") or input.get("halt_at")
    if stop is None:
        return "completed", []
    index = PAPER_STEPS.index(stop)
    undone = list(reversed(PAPER_STEPS[:index]))
    return "rolled_back", undone if "halt_at" in input else [stop, *undone]


def assert_all_or_nothing(root: Path, saga_id: str, view: dict[str, Any]) -> None:
    folder = root / saga_id
    files = sorted(p.name for p in folder.iterdir()) if folder.exists() else []
    if view["status"] == "completed":
        assert files == ["reviewer.txt", "summarizer.txt", "validator.txt"], saga_id
        for name in files:  # whole, not the half a killed step left behind
            assert (folder / name).read_text().endswith("\n"), (saga_id, name)
        assert sorted(view["outputs"]) == sorted(PAPER_STEPS)
    else:
        assert files == [], saga_id
        assert view["outputs"] == {}


@pytest.mark.slow
@pytest.mark.parametrize("backend", PROCESS_BACKENDS)
def test_fifty_sagas_with_random_failures_over_three_agent_processes(
    tmp_path: Path, backend: str
) -> None:
    rng = random.Random(5)
    plans: dict[str, tuple[dict[str, Any], str | None]] = {}
    for i in range(50):
        kind = rng.choice(["ok", "ok", "fail_at", "halt", "flaky", "broken"])
        step = rng.choice(PAPER_STEPS)
        input: dict[str, Any] = {}
        fail_at = None
        if kind == "fail_at":
            fail_at = step
        elif kind == "halt":
            input = {"halt_at": step}
        elif kind == "flaky":
            input = {"flaky": {step: 2}}
        elif kind == "broken":
            input = {"broken": step}
        plans[f"r-{i:02d}"] = (input, fail_at)

    with agent_processes(backend, tmp_path) as (agents, bus):
        definition = file_saga(agents.root)
        for step in PAPER_STEPS:
            agents.start(step)
        for saga_id, (input, fail_at) in plans.items():
            start_choreographed_saga(definition, input, saga_id, bus, fail_at=fail_at)
        views = wait_for_sagas(bus, list(plans), timeout=120)
        codes = agents.stop_all()
        dead = bus.dead_letters()
    assert codes == dict.fromkeys(PAPER_STEPS, 0), agents.logs()
    assert dead == []
    assert sorted(views) == sorted(plans), agents.logs()
    statuses = {v["status"] for v in views.values()}
    assert statuses == {"completed", "rolled_back"}
    for saga_id, (input, fail_at) in plans.items():
        status, compensated = expected_outcome(input, fail_at)
        assert (views[saga_id]["status"], views[saga_id]["compensated"]) == (
            status,
            compensated,
        ), saga_id
        assert_all_or_nothing(agents.root, saga_id, views[saga_id])
    # No step committed twice, whatever the deliveries did.
    ran = log_lines(agents.root, "executions.log")
    assert len(ran) == len(set(ran))


@pytest.mark.parametrize("backend", PROCESS_BACKENDS)
def test_agents_killed_mid_event_finish_their_sagas_after_a_restart(
    tmp_path: Path, backend: str
) -> None:
    plans: dict[str, str | None] = {f"c-{i}": None for i in range(6)}
    plans["c-4"] = "summarizer"
    with agent_processes(backend, tmp_path) as (agents, bus):
        definition = file_saga(agents.root)
        agents.start("validator")
        # The reviewer dies half-way through writing c-1's review; the summarizer dies after
        # recording c-2's summary in its ledger, before publishing `summarized`.
        agents.start("reviewer", env={CRASH_ENV: "reviewer:c-1"})
        agents.start("summarizer", "--crash-after-commit", "c-2")
        for saga_id, fail_at in plans.items():
            start_choreographed_saga(definition, {}, saga_id, bus, fail_at=fail_at)

        assert agents.wait_exit("reviewer") == CRASH_EXIT_CODE, agents.logs()
        assert (agents.root / "c-1" / "reviewer.txt").read_text().count("\n") == 0  # half
        agents.start("reviewer")
        assert agents.wait_exit("summarizer") == CRASH_AFTER_COMMIT_EXIT_CODE, agents.logs()
        agents.start("summarizer")

        views = wait_for_sagas(bus, list(plans), timeout=60)
        codes = agents.stop_all()
        log = bus.read_log(list(plans))
    assert codes == dict.fromkeys(PAPER_STEPS, 0), agents.logs()
    assert sorted(views) == sorted(plans)
    for saga_id, fail_at in plans.items():
        status, compensated = expected_outcome({}, fail_at)
        assert views[saga_id]["status"] == status, (saga_id, agents.logs())
        assert views[saga_id]["compensated"] == compensated
        assert_all_or_nothing(agents.root, saga_id, views[saga_id])
    ran = log_lines(agents.root, "executions.log")
    assert len(ran) == len(set(ran)), "a committed step ran twice"
    assert "c-1 reviewer" in ran  # re-run after the kill, completed once
    assert ran.count("c-2 summarizer") == 1  # its commit was kept; not run again
    # Every event type once per saga, as the agents' ledgers re-emitted the same ids.
    ids = [m["id"] for m in log]
    assert len(ids) == len(set(ids))
