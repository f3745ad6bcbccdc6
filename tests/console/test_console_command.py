"""``sagagraph console`` as a user starts it: a process that serves the pages until stopped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from sagagraph.cli import main
from tests.support.console_sagas import Stores, run

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_command_serves_the_sagas_of_its_database_on_loopback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGAGRAPH_LLM", "offline")
    stores = Stores(
        db=f"sqlite:///{tmp_path / 's.sqlite'}",
        bus=f"sqlite:///{tmp_path / 'e.sqlite'}",
        outputs=tmp_path / "out",
    )
    assert run(stores, "served") == 0
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "sagagraph.cli", "console"),
            *("--db", stores.db, "--bus", stores.bus, "--port", str(port)),
        ],
        cwd=tmp_path,
        env=env | {"PYTHONPATH": str(REPO)},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        announced = server.stderr.readline()
        assert announced.startswith(f"sagagraph console on http://127.0.0.1:{port}/"), announced
        page = ""
        for _ in range(100):  # the announcement comes just before uvicorn binds the port
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as reply:
                    page = reply.read().decode()
                break
            except OSError:
                if server.poll() is not None:
                    break
                time.sleep(0.1)
        assert '<tr data-saga="served">' in page
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)
    assert not (tmp_path / "sagagraph.sqlite").exists()  # it read the --db given, nothing else


def test_a_port_in_use_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        db = f"sqlite:///{tmp_path / 'x.sqlite'}"
        assert main(["console", "--db", db, "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"sagagraph: error: --host 127.0.0.1 --port {port}: cannot listen there "
        "(Address already in use)"
    )
