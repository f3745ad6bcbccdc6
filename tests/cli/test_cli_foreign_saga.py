"""The CLI refuses, without touching it, a saga whose definition it cannot build.

Issue 28 item 7: a saga defined in Python (here the test's ``toy`` definition) waits for an
operator in a SQLite file. The CLI builds only the paper saga, so ``resolve --retry`` exits 2
with one line naming the definition and the Python call, and leaves the saga as it was (same
checkpoint id); ``status`` suggests no CLI command that cannot work; ``recover`` skips it with
a one-line reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sagagraph import Retry, run_saga, saga_config
from tests.support.toy_saga import Crash, Journal, Plan, SimulatedCrash, saga_app, toy_saga

REPO = Path(__file__).resolve().parents[2]
SAGAGRAPH = Path(sys.executable).parent / "sagagraph"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    return subprocess.run(
        [str(SAGAGRAPH), *args],
        cwd=cwd,
        env=env | {"PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def checkpoint_id(url: str, saga_id: str, definition: Any) -> str:
    with saga_app(definition, url) as app:
        return str(app.get_state(saga_config(saga_id)).config["configurable"]["checkpoint_id"])


def test_resolve_recover_and_status_refuse_a_saga_the_cli_cannot_build(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    journal = Journal(tmp_path / "journal.sqlite")
    plan = Plan(flaky_compensations={"s1": 100})
    definition = toy_saga(2, journal, plan, compensation_retry=Retry(max_attempts=1))
    with saga_app(definition, url) as app:
        paused = run_saga(app, {"fail": "s2"}, saga_id="trip")
    assert paused["waiting_for_operator"], paused
    before = checkpoint_id(url, "trip", definition)

    resolve = cli(tmp_path, "resolve", "trip", "--retry", "--db", url)
    assert resolve.returncode == 2, resolve.stdout + resolve.stderr
    lines = resolve.stderr.strip().splitlines()
    assert len(lines) == 1, resolve.stderr
    assert "'toy'" in lines[0] and 'resolve_saga(app, "trip", "retry")' in lines[0], lines[0]
    assert "resolve ok" not in resolve.stdout + resolve.stderr
    assert checkpoint_id(url, "trip", definition) == before

    status = cli(tmp_path, "status", "trip", "--db", url)
    assert "sagagraph resolve" not in status.stdout + status.stderr, status.stdout
    assert 'resolve_saga(app, "trip", "retry")' in status.stdout, status.stdout

    recover = cli(tmp_path, "recover", "--db", url)
    assert "sagagraph resolve" not in recover.stdout + recover.stderr, recover.stderr
    skipped = [line for line in recover.stderr.splitlines() if "trip" in line]
    assert len(skipped) == 1 and "'toy'" in skipped[0], recover.stderr
    assert recover.returncode != 0
    assert checkpoint_id(url, "trip", definition) == before

    with saga_app(definition, url) as app:
        assert app.get_state(saga_config("trip")).values["saga"] == "toy"


def test_recover_skips_an_unfinished_saga_of_another_definition(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    journal = Journal(tmp_path / "journal.sqlite")
    definition = toy_saga(3, journal, Plan(crash=Crash("s2")))
    with saga_app(definition, url) as app, pytest.raises(SimulatedCrash):
        run_saga(app, {}, saga_id="halfway")
    before = checkpoint_id(url, "halfway", definition)

    recover = cli(tmp_path, "recover", "--db", url)
    lines = [line for line in recover.stderr.splitlines() if "halfway" in line]
    assert len(lines) == 1 and lines[0].startswith("skipped halfway:"), recover.stderr
    assert "'toy'" in lines[0] and 'resume_saga(app, "halfway")' in lines[0], lines[0]
    assert recover.returncode == 75, recover.stderr
    assert checkpoint_id(url, "halfway", definition) == before

    resume = cli(tmp_path, "resume", "halfway", "--db", url)
    assert resume.returncode == 2 and len(resume.stderr.strip().splitlines()) == 1, resume.stderr
    assert checkpoint_id(url, "halfway", definition) == before
