"""A choreographed ``run`` (its agents in threads) SIGKILLed at a random moment (issue 38's
adversarial pass), not only at the event boundaries test_choreography_kill_windows.py picks;
``recover`` from a new process then ends the saga whole: ``completed`` with its three whole
files or ``rolled_back`` with none, and no committed step runs twice. Seeded, so a failing
seed runs again as it did; on the SQLite log and on RabbitMQ."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from sagagraph.choreography.recovery import recover_choreographed, unfinished_choreographed
from sagagraph.choreography.runner import choreography_status
from tests.choreography.test_choreography_processes import assert_all_or_nothing, expected_outcome
from tests.support.choreo_buses import bus_url_for, cleaned_up
from tests.support.choreo_saga import CRASH_ENV, PAPER_STEPS, file_saga, log_lines

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.kill_fleet
SEEDS = [5, 17, 29, 43, 61, 71, 83, 89]
WINDOW = (0.0, 0.45)
"""Seconds after the run starts in which it is killed: about how long the run takes here
(agents starting, three steps, their events), so kills land before, inside and after it."""


@pytest.mark.parametrize(
    ("seed", "backend"), [(s, "amqp" if i % 2 else "sqlite") for i, s in enumerate(SEEDS)]
)
def test_a_run_killed_at_a_random_moment_is_recovered_whole(
    seed: int, backend: str, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    fail_at = rng.choice([None, None, "reviewer", "summarizer"])
    delay = rng.uniform(*WINDOW)
    url = bus_url_for(backend, tmp_path)
    root, state = tmp_path / "work", tmp_path / "agents"
    command = [sys.executable, "-m", "tests.support.choreo_run_proc", "--bus", url]
    command += ["--root", str(root), "--state", str(state), "--saga-id", "r-1"]
    command += ["--kill-after", f"{delay:.3f}", *(["--fail-at", fail_at] if fail_at else [])]
    env = {k: v for k, v in os.environ.items() if k != CRASH_ENV} | {"PYTHONPATH": str(REPO)}
    with cleaned_up(url, tmp_path):
        done = subprocess.run(
            command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode in (0, -signal.SIGKILL), done.stdout + done.stderr
        pending = [v["saga_id"] for v in unfinished_choreographed(url)]
        recover_choreographed(file_saga(root), url, state_dir=state, timeout=60)
        view = choreography_status(url, "r-1") if (root / "r-1").exists() or pending else None
        assert unfinished_choreographed(url) == []
    ran_lines = log_lines(root, "executions.log")
    print(f"seed {seed} ({backend}, fail_at {fail_at}): killed after {delay:.3f}s "
          f"({done.returncode}), pending {pending}, ran {ran_lines}, "
          f"{view and (view['status'], view['completed'], view['compensated'])}")  # fmt: skip
    if view is None:  # killed before the saga's start event: nothing started, nothing left
        assert ran_lines == []
        return
    assert (view["status"], view["compensated"]) == expected_outcome({}, fail_at), view
    assert_all_or_nothing(root, "r-1", view)
    committed = Counter(
        e["step"] for e in view["events"] if (e["action"], e["outcome"]) == ("execute", "ok")
    )
    assert all(n == 1 for n in committed.values()), committed  # no committed step re-ran
    ran = Counter(line.split()[1] for line in ran_lines)
    # One kill stops at most one step before its ledger commits: that step alone runs again.
    assert sum(n - 1 for n in ran.values()) <= 1 and set(ran) <= set(PAPER_STEPS), ran
