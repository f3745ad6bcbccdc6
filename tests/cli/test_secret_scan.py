"""No secret reaches an output, a log line, an event, a JSON view or the bytes of a database.

The real ``sagagraph`` command runs every orchestration mode and failure kind with a known
API key, database password, bus password and PDF password in its environment and flags:

- deterministic and LLM routing, SQLite and PostgreSQL (a password in its URL: the local
  server trusts it, so the URL works while carrying the secret);
- the model server (the real ChatOpenAI client over HTTP, tests/support/openai_server.py) answers
  the router with an error that quotes the key, then a proposal that contains it; the
  engine path gets an error quoting it too;
- an encrypted PDF opened with the password from ``SAGAGRAPH_PDF_PASSWORD``, and from
  ``--password-file``; a wrong password from a file;
- a malformed PostgreSQL URL (``postgresql://user:PW@[::1/db``), ``--debug`` logs, ``status``,
  ``list``, ``recover``.

Then every stdout and stderr, every file under the test's folder (outputs, the SQLite
checkpoint with its WAL, the output ledger) and every row of the PostgreSQL database are
searched: zero hits. Choreography adds its runs through :data:`EXTRA_RUNS` (a hook for the
choreography engineer: buses and their event logs, with the bus password).
"""

from __future__ import annotations

import io
import itertools
import json
import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_bad_input import text_pdf
from tests.support.openai_server import (
    SAMPLE_REVIEW,
    Reply,
    ScriptedOpenAIServer,
    structured,
    wants_schema,
)
from tests.support.secret_scan import SecretScan
from tests.support.services import fresh_postgres_database

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "examples" / "papers" / "complete_paper.md"
SAGAGRAPH = Path(sys.executable).parent / "sagagraph"

# Not shaped like "sk-...": only the one redaction's knowledge of the key can hide it.
KEY = "key" + secrets.token_hex(12)
DB_PASSWORD = "dbpw" + secrets.token_hex(8)
BUS_PASSWORD = "buspw" + secrets.token_hex(8)
PDF_PASSWORD = "pdfpw" + secrets.token_hex(8)
WRONG_PDF_PASSWORD = "wrongpw" + secrets.token_hex(8)

EXTRA_RUNS: list[Callable[[Path, dict[str, str], SecretScan], None]] = []
"""More runs to scan (choreography): each gets the folder, the environment and the scan."""


def encrypted_pdf(path: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    plain = text_pdf(2, lambda i: f"Page {i + 1}: an encrypted document without a paper.")
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(plain)))
    writer.encrypt(user_password=PDF_PASSWORD, algorithm="AES-256")
    with open(path, "wb") as out:
        writer.write(out)


ROUTER_TURNS = itertools.count(1)


def responder(request: dict[str, Any]) -> Reply | str:
    """The router gets an error quoting the key, then a proposal with it, then a good one
    (whose reason quotes it too); the engine (``--llm openai``) gets an error quoting it."""
    if "next_step" not in json.dumps(request.get("response_format") or request.get("tools")):
        return Reply(content=f"engine refused: bad key {KEY}", status=401)
    turn = next(ROUTER_TURNS) % 3
    if turn == 1:
        return Reply(content=f"invalid api key {KEY} for this model", status=500)
    if turn == 2:
        return structured(request, {"next_step": f"use {KEY}", "reason": f"key {KEY}"})
    return structured(request, {"next_step": next_step(request), "reason": f"next, {KEY}"})


def next_step(request: dict[str, Any]) -> str:
    """The step after those the router's view (the last user message) lists as committed."""
    view = json.loads(request["messages"][-1]["content"])
    left = [step for step in view["steps"] if step not in view["committed"]]
    return left[0] if left else "finish"


@dataclass
class Runs:
    scan: SecretScan
    codes: dict[str, int]
    views: dict[str, dict[str, Any]]
    """The ``--json`` view each such run printed."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    # The inputs (the PDF, the password files) hold secrets on purpose; the rest must not.
    inputs = tmp_path_factory.mktemp("secret-scan-inputs")
    root = tmp_path_factory.mktemp("secret-scan")
    scan = SecretScan(
        {
            "api key": KEY,
            "db password": DB_PASSWORD,
            "bus password": BUS_PASSWORD,
            "pdf password": PDF_PASSWORD,
            "wrong pdf password": WRONG_PDF_PASSWORD,
        }
    )
    codes: dict[str, int] = {}
    views: dict[str, dict[str, Any]] = {}
    pdf = inputs / "locked.pdf"
    encrypted_pdf(pdf)
    password_file = inputs / "pdf-password.txt"
    password_file.write_text(PDF_PASSWORD + "\n")
    wrong_file = inputs / "wrong-password.txt"
    wrong_file.write_text(WRONG_PDF_PASSWORD + "\n")
    sqlite = f"sqlite:///{root / 'sagas.sqlite'}"

    with ScriptedOpenAIServer(responder) as server, fresh_postgres_database() as pg_url:
        postgres = pg_url.replace("://root@", f"://root:{DB_PASSWORD}@", 1)
        assert DB_PASSWORD in postgres, "the test database URL has the expected form"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
        env |= {
            "PYTHONPATH": str(REPO),
            "OPENAI_API_KEY": KEY,
            "OPENAI_BASE_URL": server.base_url,
            "SAGAGRAPH_AMQP_URL": f"amqp://guest:{BUS_PASSWORD}@127.0.0.1:5672/",
            "SAGAGRAPH_LLM": "offline",
        }

        def cli(name: str, *args: str, extra_env: dict[str, str] | None = None) -> Any:
            proc = subprocess.run(
                [str(SAGAGRAPH), *args],
                cwd=root,
                env=env | (extra_env or {}),
                capture_output=True,
                text=True,
                timeout=180,
            )
            scan.text(f"{name} stdout", proc.stdout)
            scan.text(f"{name} stderr", proc.stderr)
            codes[name] = proc.returncode
            if "--json" in args and proc.stdout.startswith("{"):
                views[name] = json.loads(proc.stdout)
            return proc

        out = ["--outputs", str(root / "outputs")]
        cli(
            "deterministic sqlite",
            "run",
            str(PAPER),
            "--db",
            sqlite,
            *out,
            "--json",
            "--saga-id",
            "det",
        )
        cli(
            "llm router sqlite (debug logs)",
            "--debug", "run", str(PAPER), "--db", sqlite, *out, "--router", "llm",
            "--saga-id", "llm",
        )  # fmt: skip
        cli(
            "llm router postgres, fail at summarizer",
            "run", str(PAPER), "--db", postgres, *out, "--router", "llm", "--json",
            "--fail-at", "summarizer", "--saga-id", "llm-fail",
        )  # fmt: skip
        cli(
            "openai engine postgres, model error",
            "run", str(PAPER), "--db", postgres, *out, "--llm", "openai", "--json",
            "--saga-id", "engine-error",
        )  # fmt: skip
        cli(
            "encrypted pdf, password from env",
            "run", str(pdf), "--db", sqlite, *out, "--json", "--saga-id", "pdf-env",
            extra_env={"SAGAGRAPH_PDF_PASSWORD": PDF_PASSWORD},
        )  # fmt: skip
        cli(
            "encrypted pdf, password file",
            "run", str(pdf), "--db", sqlite, *out, "--json", "--saga-id", "pdf-file",
            "--password-file", str(password_file),
        )  # fmt: skip
        cli(
            "encrypted pdf, wrong password file",
            "run", str(pdf), "--db", sqlite, *out, "--password-file", str(wrong_file),
        )  # fmt: skip
        cli(
            "malformed postgres url",
            "run", str(PAPER), "--db", f"postgresql://user:{DB_PASSWORD}@[::1/db", *out,
        )  # fmt: skip
        cli("unreachable postgres", "list", "--db", f"postgresql://u:{DB_PASSWORD}@127.0.0.1:1/x")
        for saga_id, db in [("det", sqlite), ("llm", sqlite), ("llm-fail", postgres)]:
            cli(f"status {saga_id}", "status", saga_id, "--db", db, "--json")
        cli("list sqlite", "list", "--db", sqlite, "--json")
        cli("list postgres", "list", "--db", postgres, "--json")
        cli("recover postgres", "recover", "--db", postgres, "--json")
        for extra in EXTRA_RUNS:
            extra(root, env, scan)
        scan.postgres(pg_url)
    scan.tree(root)
    yield Runs(scan, codes, views)


def test_every_run_ended_as_its_scenario_says(runs: Runs) -> None:
    codes = runs.codes
    assert codes["deterministic sqlite"] == 0
    assert codes["llm router sqlite (debug logs)"] == 0
    assert codes["llm router postgres, fail at summarizer"] == 3
    assert codes["openai engine postgres, model error"] == 3
    # Opened with the password (env or file): read, then judged not a paper (halted).
    for name in ("encrypted pdf, password from env", "encrypted pdf, password file"):
        view = runs.views[name]
        assert (view["status"], view["completed"]) == ("rolled_back", []), name
        assert view["halted"]["step"] == "validator", name
    assert codes["encrypted pdf, wrong password file"] == 2
    assert codes["malformed postgres url"] == 2
    assert codes["unreachable postgres"] == 2


def test_no_secret_is_found_anywhere(runs: Runs) -> None:
    searched = " ".join(runs.scan.searched)
    for place in (
        "sagas.sqlite",
        "ledger.sqlite",
        "postgres table",
        "review.txt",
    ):
        assert place in searched, f"the scan covered {place}"
    runs.scan.assert_clean()


def echoing_responder(request: dict[str, Any]) -> Reply | str:
    """A model (or a proxy) that quotes the key in every successful structured answer."""
    quoted = f"Authorization header was {KEY}"
    schema = (wants_schema(request) or "").lower()
    if "validation" in schema:
        found = [
            {"part": "abstract", "heading": "Abstract", "page": 1},
            {"part": "introduction", "heading": "1 Introduction", "page": 1},
            {"part": "body", "heading": "2 Related Work", "page": 1},
            {"part": "method", "heading": "3 Method", "page": 1},
            {"part": "conclusion", "heading": "7 Conclusion", "page": 1},
            {"part": "references", "heading": "References", "page": 1},
        ]
        reason = f"every required part is present ({quoted})"
        return structured(
            request, {"is_valid": True, "found": found, "missing": [], "reason": reason}
        )
    if "review" in schema:
        # The key rides in the remark; the quote is the paper's, so the point is kept.
        review = {
            part: [dict(p, point=f"{quoted} ({p['point']})") for p in points]
            for part, points in SAMPLE_REVIEW.items()
        }
        return structured(request, review)
    words = " ".join(["sagas undo partial pipelines"] * 40)
    return structured(request, {"text": f"{words}. {quoted}."})


def test_a_key_echoed_in_a_successful_answer_is_never_written(tmp_path: Path) -> None:
    """Issue 28 item 4: outputs, the ``--json`` view and the checkpoint hold no quoted key."""
    scan = SecretScan({"api key": KEY})
    with ScriptedOpenAIServer(echoing_responder) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
        env |= {
            "PYTHONPATH": str(REPO),
            "OPENAI_API_KEY": KEY,
            "OPENAI_BASE_URL": server.base_url,
        }
        sqlite = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
        run = subprocess.run(
            [str(SAGAGRAPH), "run", str(PAPER), "--db", sqlite, "--llm", "openai",
             "--outputs", str(tmp_path / "outputs"), "--json", "--saga-id", "echo"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        status = subprocess.run(
            [str(SAGAGRAPH), "status", "echo", "--db", sqlite, "--json"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert server.requests, "the model was asked"
    for name, proc in (("run", run), ("status", status)):
        scan.text(f"{name} stdout", proc.stdout)
        scan.text(f"{name} stderr", proc.stderr)
    scan.tree(tmp_path)
    view = json.loads(run.stdout)
    assert view["status"] == "completed", run.stdout + run.stderr
    assert (tmp_path / "outputs" / "echo" / "validation.txt").exists()
    assert any("validation.txt" in place for place in scan.searched)
    scan.assert_clean()
