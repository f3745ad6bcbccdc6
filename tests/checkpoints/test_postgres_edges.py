"""PostgreSQL at its edges (issue 28 item 10): a cut connection and a stalled one.

- A connection cut while a saga runs ends in one line that says the saga stopped at its last
  checkpoint and that ``sagagraph recover`` finishes it (not "unexpected error"); once the
  database is back, ``recover`` does.
- A server that accepts the connection and never answers (a stalled network or proxy) makes
  ``run`` give up after the connect timeout, with one line, instead of waiting without limit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.openai_server import (
    SAMPLE_REVIEW,
    Reply,
    ScriptedOpenAIServer,
    structured,
    wants_schema,
)
from tests.support.services import fresh_postgres_database
from tests.support.tcp_listener import listener
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "examples" / "papers" / "complete_paper.md"
SAGAGRAPH = Path(sys.executable).parent / "sagagraph"


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    return env | {"PYTHONPATH": str(REPO)}


def paper_answer(request: dict[str, Any]) -> Reply:
    """A valid structured answer for each paper step."""
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
        return structured(
            request, {"is_valid": True, "found": found, "missing": [], "reason": "complete"}
        )
    if "review" in schema:
        return structured(request, SAMPLE_REVIEW)
    return structured(request, {"text": " ".join(["sagas undo partial pipelines."] * 40)})


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    starts = ("sagagraph: error", "sagagraph: unexpected")
    errors = [line for line in proc.stderr.splitlines() if line.startswith(starts)]
    assert len(errors) == 1, proc.stdout + proc.stderr
    return errors[0]


@pytest.mark.postgres
def test_a_cut_connection_says_recover_finishes_the_saga_and_it_does(tmp_path: Path) -> None:
    with fresh_postgres_database() as pg_url, TcpProxy(5432) as proxy:
        through = pg_url.replace("127.0.0.1:5432", f"127.0.0.1:{proxy.port}", 1)
        assert through != pg_url, "the test database URL has the expected form"

        def responder(request: dict[str, Any]) -> Reply:
            if "review" in (wants_schema(request) or "").lower() and not proxy.cuts:
                proxy.cut(3.0)  # while the reviewer runs: its checkpoint finds no connection
            return paper_answer(request)

        with ScriptedOpenAIServer(responder) as server:
            env = clean_env() | {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}
            outputs = tmp_path / "outputs"
            run = subprocess.run(
                [str(SAGAGRAPH), "run", str(PAPER), "--db", through, "--llm", "openai",
                 "--outputs", str(outputs), "--saga-id", "cut"],
                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert proxy.cuts, "the connection was cut"
            line = one_error_line(run)
            assert "unexpected error" not in line, line
            assert "sagagraph recover" in line and "'cut'" in line, line
            assert run.returncode not in (0, 1), line
            time.sleep(3.5)  # the cut is over
            recover = subprocess.run(
                [str(SAGAGRAPH), "recover", "--db", through, "--llm", "openai"],
                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
        assert recover.returncode == 0, recover.stdout + recover.stderr
        assert sorted(p.name for p in (outputs / "cut").iterdir()) == [
            "review.txt",
            "summary.txt",
            "validation.txt",
        ]


def test_a_stalled_postgres_server_is_given_up_on_with_one_line(tmp_path: Path) -> None:
    with listener(None) as port:
        url = f"postgresql://user:pw@127.0.0.1:{port}/sagas"
        started = time.monotonic()
        try:
            run = subprocess.run(
                [str(SAGAGRAPH), "run", str(PAPER), "--db", url,
                 "--outputs", str(tmp_path / "outputs")],
                cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=60,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            pytest.fail("run waited on a stalled database for 60 s without giving up")
    assert time.monotonic() - started < 60
    line = one_error_line(run)
    assert run.returncode == 2 and "127.0.0.1" in line and "timeout" in line.lower(), line
