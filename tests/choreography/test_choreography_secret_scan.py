"""No secret reaches a choreography output: the CLI's streams, output files, agent ledgers,
the SQLite event log's raw bytes, or the events on RabbitMQ's stream.

The real ``sagagraph`` command runs choreographed sagas with a known API key (the model
server quotes it back in its errors), a bus password (in a malformed URL, and as a wrong
password against the local broker), and a PDF password; then everything is searched with
:class:`tests.support.secret_scan.SecretScan`: zero hits.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sagagraph.choreography.runner import saga_events
from tests.choreography.test_choreography_cli import agent_processes, command
from tests.cli.test_recovery_cli import PAPER, REPO
from tests.support.choreo_buses import cleaned_up, unique_amqp_url
from tests.support.openai_server import Reply, ScriptedOpenAIServer
from tests.support.secret_scan import SecretScan
from tests.support.services import require_rabbitmq

pytestmark = [pytest.mark.slow, pytest.mark.rabbitmq]

KEY = "key" + secrets.token_hex(12)
BUS_PASSWORD = "buspw" + secrets.token_hex(8)
PDF_PASSWORD = "pdfpw" + secrets.token_hex(8)
BUS_KEY = "buskey" + secrets.token_hex(12)


def quoting_the_key(request: dict[str, Any]) -> Reply | str:
    return Reply(content=f"engine refused: bad key {KEY}", status=401)


def test_no_secret_reaches_a_choreography_output(tmp_path: Path) -> None:
    from tests.cli.test_bad_input import text_pdf

    scan = SecretScan(
        {
            "api key": KEY,
            "bus password": BUS_PASSWORD,
            "pdf password": PDF_PASSWORD,
            "bus key": BUS_KEY,
        }
    )
    inputs, root = tmp_path / "inputs", tmp_path / "root"
    inputs.mkdir()
    root.mkdir()
    pdf = inputs / "locked.pdf"
    _encrypted_pdf(pdf, text_pdf)
    sqlite_bus = f"sqlite:///{root / 'events.sqlite'}"
    amqp_bus = unique_amqp_url(require_rabbitmq())
    codes: dict[str, int] = {}
    with ScriptedOpenAIServer(quoting_the_key) as server, cleaned_up(amqp_bus, tmp_path):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
        env |= {
            "PYTHONPATH": str(REPO),
            "OPENAI_API_KEY": KEY,
            "OPENAI_BASE_URL": server.base_url,
            "SAGAGRAPH_STATE": str(root / "agents"),
            "SAGAGRAPH_BUS_KEY": BUS_KEY,
        }

        def cli(name: str, *args: str) -> None:
            proc = subprocess.run(
                [*command(), *args], cwd=root, env=env, capture_output=True, text=True, timeout=180
            )
            scan.text(f"{name} stdout", proc.stdout)
            scan.text(f"{name} stderr", proc.stderr)
            codes[name] = proc.returncode

        out = ["--outputs", str(root / "outputs"), "--mode", "choreography"]
        for kind, bus in [("sqlite", sqlite_bus), ("amqp", amqp_bus)]:
            cli(f"{kind} model error", "run", str(PAPER), *out, "--bus", bus, "--llm", "openai",
                "--json", "--saga-id", f"{kind}-engine")  # fmt: skip
            cli(f"{kind} debug logs", "--debug", "run", str(PAPER), *out, "--bus", bus,
                "--llm", "openai", "--saga-id", f"{kind}-debug")  # fmt: skip
            cli(f"{kind} encrypted pdf", "run", str(pdf), *out, "--bus", bus, "--llm", "offline",
                "--password", PDF_PASSWORD, "--json", "--saga-id", f"{kind}-pdf")  # fmt: skip
            cli(f"{kind} events", "events", f"{kind}-engine", "--bus", bus, "--json")
            cli(f"{kind} status", "status", f"{kind}-engine", "--bus", bus, "--json")
        # An agent process: its start line; then the events on RabbitMQ's stream.
        with agent_processes(
            root / "agent-procs", amqp_bus, ("validator",), env={"SAGAGRAPH_BUS_KEY": BUS_KEY}
        ) as lines:
            scan.text("agent start line", "\n".join(lines))
        for saga_id in ("amqp-engine", "amqp-debug", "amqp-pdf"):
            scan.text(f"{saga_id} stream", json.dumps(saga_events(amqp_bus, saga_id)))
        bad = [
            f"amqp://guest:{BUS_PASSWORD}@[::1/vhost",
            f"amqp://guest:{BUS_PASSWORD}@127.0.0.1:notaport/",
            f"amqp://guest:{BUS_PASSWORD}@127.0.0.1:5672/",
        ]
        for i, bus in enumerate(bad):
            cli(f"bad bus {i} run", "run", str(PAPER), *out, "--bus", bus, "--llm", "offline")
            cli(f"bad bus {i} agent", "agent", "reviewer", "--bus", bus, "--llm", "offline")
            cli(f"bad bus {i} debug events", "--debug", "events", "x", "--bus", bus)
    scan.tree(root)
    assert codes["sqlite model error"] == 3  # the saga failed on the model and rolled back
    bad_usage = {n: c for n, c in codes.items() if n.startswith("bad bus") and "debug" not in n}
    assert set(bad_usage.values()) == {2}, codes  # (--debug shows the traceback instead)
    assert any("events.sqlite" in where for where in scan.searched)
    assert any("/agents/" in where for where in scan.searched)  # RabbitMQ agents' ledgers
    scan.assert_clean()


def _encrypted_pdf(path: Path, text_pdf: Any) -> None:
    import io

    from pypdf import PdfReader, PdfWriter

    plain = text_pdf(2, lambda i: f"Page {i + 1}: an encrypted document without a paper.")
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(plain)))
    writer.encrypt(user_password=PDF_PASSWORD, algorithm="AES-256")
    with open(path, "wb") as out:
        writer.write(out)
