"""Kill windows of choreography: a ``run`` (its agents in threads) SIGKILLed at every event
boundary, on the SQLite log and on RabbitMQ; ``recover`` (or ``resume``) from a new start
then ends every saga ``completed`` with its three files or ``rolled_back`` with none."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sagagraph import SagaNotFoundError
from sagagraph.choreography.recovery import (
    recover_choreographed,
    resume_choreographed,
    unfinished_choreographed,
)
from sagagraph.choreography.runner import choreography_status
from tests.choreography.test_choreography_processes import assert_all_or_nothing, expected_outcome
from tests.support.choreo_buses import bus_url_for, cleaned_up
from tests.support.choreo_saga import CRASH_ENV, CRASH_EXIT_CODE, PAPER_STEPS, file_saga, log_lines

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.kill_fleet
BUSES = ["sqlite", pytest.param("amqp", marks=pytest.mark.rabbitmq)]

# (kill point, --fail-at): every step at every boundary of the success path, and the
# compensations of the failure path (the reviewer's and validator's 2nd event is their undo).
WINDOWS: list[tuple[str, str | None]] = [("runner:after-start", None)]
for _step in PAPER_STEPS:
    WINDOWS += [(f"{_step}:{m}:1", None) for m in ("during", "after-commit", "after-publish")]
WINDOWS += [
    ("summarizer:after-commit:1", "summarizer"),
    ("summarizer:after-publish:1", "summarizer"),
]
for _step in ("reviewer", "validator"):
    WINDOWS += [(f"{_step}:{m}:2", "summarizer") for m in ("after-commit", "after-publish")]


def killed_run(
    url: str, root: Path, state: Path, saga_id: str, kill: str, fail_at: str | None
) -> int:
    command = [
        sys.executable,
        "-m",
        "tests.support.choreo_run_proc",
        "--bus",
        url,
        "--root",
        str(root),
    ]
    command += ["--state", str(state), "--saga-id", saga_id, "--kill", kill]
    command += ["--fail-at", fail_at] if fail_at else []
    env = {k: v for k, v in os.environ.items() if k != CRASH_ENV} | {"PYTHONPATH": str(REPO)}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode in (-signal.SIGKILL, CRASH_EXIT_CODE), done.stdout + done.stderr
    return done.returncode


@pytest.mark.parametrize("backend", BUSES)
@pytest.mark.parametrize(("kill", "fail_at"), WINDOWS, ids=[f"{k}@{f}" for k, f in WINDOWS])
def test_a_run_killed_at_an_event_boundary_is_recovered_all_or_nothing(
    tmp_path: Path, backend: str, kill: str, fail_at: str | None
) -> None:
    url = bus_url_for(backend, tmp_path)
    root, state = tmp_path / "work", tmp_path / "agents"
    with cleaned_up(url, tmp_path):
        killed_run(url, root, state, "k-1", kill, fail_at)
        pending = [v["saga_id"] for v in unfinished_choreographed(url)]
        recovered = recover_choreographed(file_saga(root), url, state_dir=state, timeout=60)
        # Killed after the saga's last event was published: it had ended; nothing to do.
        assert [v["saga_id"] for v in recovered] == pending
        if kill.split(":")[1] != "after-publish" or (
            kill.split(":")[0] != "summarizer"
            and (kill.split(":")[0] != "validator" or fail_at is None)
        ):
            assert pending == ["k-1"]
        view = choreography_status(url, "k-1")
        assert unfinished_choreographed(url) == []
        assert recover_choreographed(file_saga(root), url, state_dir=state) == []
    assert (view["status"], view["compensated"]) == expected_outcome({}, fail_at)
    assert_all_or_nothing(root, "k-1", view)
    ran = log_lines(root, "executions.log")
    assert len(ran) == len(set(ran)) or kill.endswith("during:1"), "a committed step ran twice"


@pytest.mark.parametrize("backend", BUSES)
def test_recover_compensate_rolls_a_killed_run_back(tmp_path: Path, backend: str) -> None:
    url = bus_url_for(backend, tmp_path)
    root, state = tmp_path / "work", tmp_path / "agents"
    with cleaned_up(url, tmp_path):
        killed_run(url, root, state, "k-2", "reviewer:after-commit:1", None)
        (view,) = recover_choreographed(
            file_saga(root), url, state_dir=state, compensate=True, timeout=60
        )
    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["reviewer", "validator"]
    assert view["reason"] == "rolled back by recover --compensate"
    assert_all_or_nothing(root, "k-2", view)


@pytest.mark.parametrize("backend", BUSES)
def test_resume_finds_and_finishes_a_killed_run(tmp_path: Path, backend: str) -> None:
    url = bus_url_for(backend, tmp_path)
    root, state = tmp_path / "work", tmp_path / "agents"
    with cleaned_up(url, tmp_path):
        killed_run(url, root, state, "k-3", "validator:after-publish:1", None)
        view = resume_choreographed(file_saga(root), "k-3", url, state_dir=state, timeout=60)
        again = resume_choreographed(file_saga(root), "k-3", url, state_dir=state)
        with pytest.raises(SagaNotFoundError):
            resume_choreographed(file_saga(root), "nobody", url, state_dir=state)
    assert view["status"] == "completed" and again == view
    assert_all_or_nothing(root, "k-3", view)


def test_recover_creates_no_event_log(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'events.sqlite'}"
    assert recover_choreographed(file_saga(tmp_path / "work"), url) == []
    assert not (tmp_path / "events.sqlite").exists()
