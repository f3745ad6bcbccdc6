"""Choreography through the ``sagagraph`` command: agent processes, outputs, placement,
bad bus URLs, recover/resume, and the alert hook."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli.test_bad_input import without_progress
from tests.cli.test_recovery_cli import (
    PAPER,
    PAPER_FILES,
    SAGAGRAPH,
    clean_env,
    faulty_run,
    sagagraph,
)
from tests.graph.test_alert_hook import REPO
from tests.support.child_processes import default_signals
from tests.support.choreo_buses import bus_url_for, cleaned_up

# Each case runs the command line's choreography (agents, event log) end to end: seconds each.
pytestmark = pytest.mark.slow

BUSES = ["sqlite", pytest.param("amqp", marks=pytest.mark.rabbitmq)]


def command() -> list[str]:
    return [str(SAGAGRAPH)] if SAGAGRAPH.exists() else [sys.executable, "-m", "sagagraph.cli"]


BUS_KEY = "a-deployment-key-for-the-cli-tests"


def key_file(tmp_path: Path) -> list[str]:
    """``--bus-key-file FILE``, the file holding the tests' deployment key."""
    path = tmp_path / "bus.key"
    path.write_text(BUS_KEY + "\n")
    return ["--bus-key-file", str(path)]


@contextmanager
def agent_processes(
    folder: Path,
    bus: str,
    steps: tuple[str, ...],
    *extra: str,
    env: dict[str, str] | None = None,
) -> Iterator[list[str]]:
    """``sagagraph agent STEP [EXTRA...]`` processes started in ``folder``, with ``env`` added
    to a clean environment; yields their start lines."""
    folder.mkdir(parents=True, exist_ok=True)
    procs = []
    lines = []
    try:
        for step in steps:
            proc = subprocess.Popen(
                [*command(), "agent", step, "--bus", bus, "--llm", "offline", *extra],
                cwd=folder,
                env=clean_env() | {"SAGAGRAPH_STATE": str(folder / "state")} | (env or {}),
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=default_signals,  # SIGTERM stops it even if this run ignores it
            )
            procs.append(proc)
            assert proc.stderr is not None
            lines.append(proc.stderr.readline().strip())  # printed once connected
        yield lines
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.communicate(timeout=60)  # the rest of its stderr; closes the pipe
            except subprocess.TimeoutExpired:  # never left running after its test
                proc.kill()
                proc.communicate()


@pytest.mark.parametrize("backend", BUSES)
def test_agent_processes_write_where_run_says(tmp_path: Path, backend: str) -> None:
    url = bus_url_for(backend, tmp_path)
    elsewhere, here = tmp_path / "agents-folder", tmp_path / "run-folder"
    here.mkdir()
    key = key_file(tmp_path)
    with (
        cleaned_up(url, tmp_path),
        agent_processes(elsewhere, url, tuple(PAPER_FILES), *key) as lines,
    ):
        run = sagagraph(
            here, "run", str(PAPER), "--mode", "choreography", "--bus", url, "--saga-id", "c1",
            "--outputs", "out", "--llm", "offline", "--json", "--agents", "external", *key,
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    view = json.loads(run.stdout)
    assert view["status"] == "completed"
    for step, name in PAPER_FILES.items():
        assert Path(view["outputs"][step]) == here / "out" / "c1" / name
        assert (here / "out" / "c1" / name).is_file()
    assert not (elsewhere / "outputs").exists() and not (elsewhere / "out").exists()
    assert [line.split(":", 2)[1].strip() for line in lines] == [f"step {s}" for s in PAPER_FILES]
    for line in lines:
        assert "listening on" in line and ("queue" in line or "cursor" in line)
        assert "guest:guest@" not in line  # the broker password is hidden


@pytest.mark.parametrize("backend", BUSES)
def test_run_refuses_when_one_agent_process_is_missing(tmp_path: Path, backend: str) -> None:
    url = bus_url_for(backend, tmp_path)
    key = key_file(tmp_path)
    with cleaned_up(url, tmp_path), agent_processes(tmp_path / "a", url, ("validator",), *key):
        run = sagagraph(
            tmp_path, "run", str(PAPER), "--mode", "choreography", "--bus", url,
            "--saga-id", "c2", "--outputs", "out", "--llm", "offline", *key,
        )  # fmt: skip
    assert run.returncode == 2, run.stderr
    (line,) = without_progress(run.stderr)
    assert "reviewer, summarizer do not" in line and "sagagraph agent" in line
    assert not (tmp_path / "out").exists()


BAD_BUSES = [
    "amqp://guest:s3cr3t-pw@[::1/vhost",
    "amqp://guest:s3cr3t-pw@127.0.0.1:notaport/",
    "amqp://guest:s3cr3t-pw@/",
    "rabbit://guest:s3cr3t-pw@127.0.0.1/",
    pytest.param("amqp://guest:s3cr3t-pw@127.0.0.1:5672/", marks=pytest.mark.rabbitmq),
]


@pytest.mark.parametrize("bus", BAD_BUSES)
@pytest.mark.parametrize("verb", ["run", "agent", "events"])
def test_a_bad_bus_url_or_password_is_bad_usage(tmp_path: Path, bus: str, verb: str) -> None:
    if "127.0.0.1:5672" in bus:
        from tests.support.services import require_rabbitmq

        require_rabbitmq()
    args = {
        "run": [
            "run",
            str(PAPER),
            "--mode",
            "choreography",
            "--outputs",
            "out",
            "--llm",
            "offline",
        ],
        "agent": ["agent", "reviewer", "--llm", "offline"],
        "events": ["events", "some-saga"],
    }[verb]
    done = sagagraph(tmp_path, *args, "--bus", bus, *key_file(tmp_path))
    assert done.returncode == 2, done.stderr
    (line,) = without_progress(done.stderr)
    assert line.startswith("sagagraph: error:") and "bus" in line
    assert "s3cr3t-pw" not in done.stderr + done.stdout
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("verb", ["run", "agent"])
def test_agents_are_not_run_on_rabbitmq_without_a_bus_key(tmp_path: Path, verb: str) -> None:
    args = {
        "run": ["run", str(PAPER), "--mode", "choreography", "--outputs", "out"],
        "agent": ["agent", "reviewer"],
    }[verb]
    url = "amqp://guest:s3cr3t-pw@127.0.0.1:1/"  # refused before any connection is tried
    done = sagagraph(tmp_path, *args, "--bus", url, "--llm", "offline")
    assert done.returncode == 2, done.stderr
    (line,) = without_progress(done.stderr)
    assert "no bus key" in line and "--insecure-bus" in line and "SAGAGRAPH_BUS_KEY" in line
    assert "s3cr3t-pw" not in done.stderr + done.stdout
    assert not (tmp_path / "out").exists()
    allowed = sagagraph(tmp_path, *args, "--bus", url, "--llm", "offline", "--insecure-bus")
    assert "no bus key" not in allowed.stderr and "cannot connect" in allowed.stderr


def test_events_shows_a_forged_event_as_refused(tmp_path: Path) -> None:
    from sagagraph.choreography.buses import open_bus

    bus = f"sqlite:///{tmp_path / 'events.sqlite'}"
    key = key_file(tmp_path)
    common = ["--bus", bus, "--outputs", str(tmp_path / "out"), "--llm", "offline", *key]
    run = sagagraph(tmp_path, "run", str(PAPER), "--mode", "choreography", "--saga-id", "f1",
                    *common)  # fmt: skip
    assert run.returncode == 0, run.stderr
    forger = open_bus(bus, key=None)
    try:
        genuine = forger.read_log(["f1"])
        fake = {k: v for k, v in genuine[1].items() if k != "sig"}
        fake |= {"type": "reviewed", "step": "reviewer", "id": "f1:reviewed:forged"}
        forger.publish([fake])  # type: ignore[list-item]
    finally:
        forger.close()
    shown = sagagraph(tmp_path, "events", "f1", "--bus", bus, *key)
    assert shown.returncode == 0, shown.stderr
    (refused,) = [line for line in shown.stdout.splitlines() if "REFUSED" in line]
    assert "reviewed" in refused and "unsigned" in refused
    assert len(shown.stdout.splitlines()) == len(genuine) + 1
    listed = json.loads(sagagraph(tmp_path, "events", "f1", "--bus", bus, "--json", *key).stdout)
    assert [e["id"] for e in listed if e.get("refused")] == ["f1:reviewed:forged"]
    status = json.loads(sagagraph(tmp_path, "status", "f1", "--bus", bus, "--json").stdout)
    assert status["status"] == "completed"
    assert BUS_KEY not in run.stdout + run.stderr + shown.stdout + shown.stderr


def test_a_killed_choreographed_run_is_found_by_recover_and_resume(tmp_path: Path) -> None:
    bus = f"sqlite:///{tmp_path / 'events.sqlite'}"
    common = ["--bus", bus, "--outputs", str(tmp_path / "out"), "--llm", "offline"]

    def killed_run(saga_id: str) -> None:
        killed = faulty_run(
            tmp_path,
            ["--crash", "reviewer:execute:during:sigkill"],
            str(PAPER), "--mode", "choreography", "--saga-id", saga_id, *common,
        )  # fmt: skip
        assert killed.returncode == -signal.SIGKILL, killed.stderr

    killed_run("k1")
    listed = sagagraph(tmp_path, "status", "k1", "--json", "--bus", bus)
    assert json.loads(listed.stdout)["status"] == "running"
    resumed = sagagraph(tmp_path, "resume", "k1", "--json", *common)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "completed"
    killed_run("k2")
    recovered = sagagraph(tmp_path / "out", "recover", *common)  # from another folder
    assert recovered.returncode == 0, recovered.stderr
    assert "recovered k2" in recovered.stderr and "saga k2: completed" in recovered.stdout
    assert "k1" not in recovered.stdout  # finished already
    for saga_id in ("k1", "k2"):
        assert sorted(p.name for p in (tmp_path / "out" / saga_id).iterdir()) == sorted(
            PAPER_FILES.values()
        )
    again = sagagraph(tmp_path, "recover", *common)
    assert again.returncode == 0 and "nothing to recover" in again.stderr


BREAK_REVIEWER_UNDO = ["--break-undo", "reviewer", "--"]


@pytest.mark.parametrize("mode", ["orchestration", "choreography"])
def test_the_alert_hook_fires_with_the_same_payload_in_both_styles(
    tmp_path: Path, mode: str
) -> None:
    (tmp_path / "pager.py").write_text(
        "import json, pathlib\n"
        "def page(failure):\n"
        "    with open(pathlib.Path(__file__).with_name('pages.jsonl'), 'a') as f:\n"
        "        f.write(json.dumps(failure) + '\\n')\n"
    )
    env = clean_env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(REPO)])
    env["SAGAGRAPH_ALERT_HOOK"] = "pager:page"
    args = [str(PAPER), "--db", f"sqlite:///{tmp_path / 'sagas.sqlite'}", "--mode", mode]
    args += ["--bus", f"sqlite:///{tmp_path / 'events.sqlite'}", "--outputs", str(tmp_path / "o")]
    args += ["--llm", "offline", "--fail-at", "summarizer", "--saga-id", "paged"]
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.support.crash_worker",
            "cli",
            *BREAK_REVIEWER_UNDO,
            "run",
            *args,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 4, run.stderr
    pages = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    assert pages == [
        {
            "saga_id": "paged",
            "step": "reviewer",
            "phase": "compensate",
            "error": "ConnectionError: reviewer: undo refused (injected by the test)",
            "attempts": 3,
        }
    ]
