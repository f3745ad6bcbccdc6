"""LangGraph Server: ``langgraph dev`` serves the saga graph that ``langgraph.json`` names.

One ``langgraph dev`` process per module, on 127.0.0.1, offline: no analytics, no version
check, no tracing, the offline engine. It runs in a temporary working directory (its
``.langgraph_api/`` goes there, not into the repository) with ``--config`` pointing at the
repository's ``langgraph.json``; ``PYTHONPATH`` makes the graph import from this checkout.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.error import URLError
from urllib.request import urlopen

import pytest
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from sagagraph import saga_view
from tests.support.child_processes import default_signals

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "langgraph.json"
INCOMPLETE_PAPER = REPO / "examples" / "papers" / "incomplete_paper.md"
STEPS = ["validator", "reviewer", "summarizer"]
OUTPUT_FILES = {
    "validator": "validation.txt",
    "reviewer": "review.txt",
    "summarizer": "summary.txt",
}

STARTUP_TIMEOUT = 90.0
"""Seconds the server may take to answer /ok (it takes about a second on a laptop)."""
RUN_TIMEOUT = 120.0
"""Seconds one HTTP call (a whole saga run, for runs.wait) may take."""

# Everything that could reach for the internet is off; secrets never reach the server.
OFFLINE_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "SAGAGRAPH_LLM": "offline",
    "PYTHONUNBUFFERED": "1",
}
DROPPED_ENV_PREFIXES = ("LANGSMITH_", "LANGCHAIN_", "LANGGRAPH_", "OPENAI_", "SAGAGRAPH_")

_API_LINE = re.compile(r"API: (?:\x1b\[[0-9;]*m)?(http://[^\s\x1b]+)")
_PROBLEM = re.compile(
    r"\[\s*(error|critical|exception)\s*\]|^(ERROR|CRITICAL):|Traceback|BlockingError"
)


@dataclass(frozen=True)
class Server:
    """A running ``langgraph dev``."""

    url: str
    outputs: Path
    log: Path
    startup_seconds: float

    def log_problems(self) -> list[str]:
        """Log lines at error level or worse, tracebacks, and blocking-call complaints."""
        lines = self.log.read_text(errors="replace").splitlines()
        return [line for line in lines if _PROBLEM.search(_strip_ansi(line))]


def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _server_env(outputs: Path | None) -> dict[str, str]:
    """The server's environment: offline, with ``SAGAGRAPH_OUTPUTS`` only when ``outputs`` is
    given (the README's recipe sets none)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED_ENV_PREFIXES)}
    env |= OFFLINE_ENV
    env.pop("SAGAGRAPH_OUTPUTS", None)
    if outputs is not None:
        env["SAGAGRAPH_OUTPUTS"] = str(outputs)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _tail(log: Path, lines: int = 40) -> str:
    text = _strip_ansi(log.read_text(errors="replace")) if log.exists() else "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _wait_until_ready(proc: subprocess.Popen[bytes], log: Path, port: int) -> str:
    """The server's URL once it answers /ok; fails with the log when it dies or times out.

    ``langgraph dev`` silently moves to another port when the one asked for is taken, so the
    URL is read from the banner it logs rather than assumed.
    """
    deadline = time.monotonic() + STARTUP_TIMEOUT
    url = f"http://127.0.0.1:{port}"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{_tail(log)}")
        found = _API_LINE.search(log.read_text(errors="replace")) if log.exists() else None
        if found:
            url = found.group(1)
            try:
                with urlopen(f"{url}/ok", timeout=2) as response:
                    if response.status == 200:
                        return url
            except (URLError, ConnectionError, TimeoutError):
                pass
        time.sleep(0.1)
    pytest.fail(f"langgraph dev did not answer {url}/ok in {STARTUP_TIMEOUT:g}s:\n{_tail(log)}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server and anything it started: SIGTERM to its process group, then SIGKILL."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):  # children that outlived the leader
        os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("langgraph-dev")
    with langgraph_dev(workdir, workdir / "outputs") as running:
        yield running


@contextlib.contextmanager
def langgraph_dev(workdir: Path, outputs: Path | None) -> Iterator[Server]:
    """``langgraph dev`` serving ``langgraph.json`` from ``workdir``, writing to ``outputs``
    (None: no ``SAGAGRAPH_OUTPUTS``, so the default ``outputs`` folder of ``workdir``)."""
    log = workdir / "server.log"
    port = _free_port()
    command = [sys.executable, "-m", "langgraph_cli", "dev", "--config", str(CONFIG)]
    command += ["--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)]
    started = time.monotonic()
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            command,
            cwd=workdir,
            env=_server_env(outputs),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so teardown reaches every child
            preexec_fn=default_signals,  # SIGTERM stops it even if this run ignores it
        )
    try:
        url = _wait_until_ready(proc, log, port)
        yield Server(url, outputs or workdir / "outputs", log, time.monotonic() - started)
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[SyncLangGraphClient]:
    with get_sync_client(url=server.url, api_key=None, timeout=RUN_TIMEOUT) as client:
        yield client


def _run(
    client: SyncLangGraphClient, server: Server, input: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """Run one saga on a new thread; its thread id and final state."""
    thread_id = str(client.threads.create()["thread_id"])
    state = client.runs.wait(thread_id, "saga", input=input)
    assert isinstance(state, dict), state
    assert "__error__" not in state, f"{state['__error__']}\n{_tail(server.log)}"
    return thread_id, state


VIEW_FIELDS = {"saga_id", "status", "reason", "completed", "compensated", "outputs", "events"}
"""What a run returns: the fields of the JSON view that ``status --json`` prints."""


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_langgraph_json_names_an_uncompiled_saga_graph(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The server compiles the graph itself and refuses one that brings a checkpointer."""
    monkeypatch.setenv("SAGAGRAPH_LLM", "offline")  # what the module reads if first imported here
    monkeypatch.setenv("SAGAGRAPH_OUTPUTS", str(tmp_path))
    config = json.loads(CONFIG.read_text())
    assert "." in config["dependencies"]
    spec = config["graphs"]["saga"]
    module_name, _, attribute = (spec["path"] if isinstance(spec, dict) else spec).partition(":")
    graph = getattr(importlib.import_module(module_name), attribute)
    assert isinstance(graph, StateGraph) and not isinstance(graph, Pregel)
    assert set(STEPS) <= set(graph.nodes)


@pytest.mark.slow
def test_server_serves_the_saga_graph(server: Server, client: SyncLangGraphClient) -> None:
    assistants = client.assistants.search(graph_id="saga")
    assert [a["graph_id"] for a in assistants] == ["saga"]
    print(f"langgraph dev answered /ok {server.startup_seconds:.2f}s after launch")


@pytest.mark.slow
def test_a_complete_paper_completes(
    server: Server, client: SyncLangGraphClient, corpus: Path
) -> None:
    paper = corpus / "papers" / "attention_1706.03762v7.pdf"
    thread_id, view = _run(client, server, {"input": {"paper": str(paper)}})

    # The run's output is the JSON view's fields at the top level, nothing else.
    assert set(view) == VIEW_FIELDS, view
    assert view["status"] == "completed", view["reason"]
    assert view["saga_id"] == thread_id  # the server's thread id is the saga id
    assert view["completed"] == STEPS
    assert view["compensated"] == []
    folder = server.outputs / thread_id
    assert _files(folder) == sorted(folder / name for name in OUTPUT_FILES.values())
    for step, name in OUTPUT_FILES.items():
        assert Path(view["outputs"][step]).resolve() == (folder / name).resolve()
    assert len((folder / "summary.txt").read_text().split()) == 300
    # The server's own record of the thread agrees with what the run returned.
    stored = client.threads.get_state(thread_id)["values"]
    assert isinstance(stored, dict) and stored["status"] == "completed"
    assert server.log_problems() == []


@pytest.mark.slow
def test_a_failing_summarizer_rolls_the_saga_back(
    server: Server, client: SyncLangGraphClient, corpus: Path
) -> None:
    paper = corpus / "papers" / "attention_1706.03762v7.pdf"
    thread_id, view = _run(
        client, server, {"input": {"paper": str(paper)}, "fail_at": "summarizer"}
    )

    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["summarizer", "reviewer", "validator"]
    assert view["completed"] == [] and view["outputs"] == {}
    stored = saga_view(client.threads.get_state(thread_id)["values"])
    assert stored["failure"]["step"] == "summarizer"
    assert _files(server.outputs / thread_id) == []
    # The injected failure is logged as a warning; nothing at error level.
    assert server.log_problems() == []


@pytest.mark.slow
def test_an_incomplete_paper_ends_early_and_commits_nothing(
    server: Server, client: SyncLangGraphClient
) -> None:
    if not INCOMPLETE_PAPER.exists():
        pytest.fail(f"sample paper missing: {INCOMPLETE_PAPER}")
    thread_id, view = _run(client, server, {"input": {"paper": str(INCOMPLETE_PAPER)}})

    assert view["status"] == "rolled_back"
    assert view["reason"]
    assert view["completed"] == [] and view["outputs"] == {}
    executed = {e["step"] for e in view["events"] if e["action"] == "execute"}
    assert executed == {"validator"}  # reviewer and summarizer were never called
    assert _files(server.outputs / thread_id) == []
    assert server.log_problems() == []


def _refused(client: SyncLangGraphClient, input: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Run on a new thread, expecting a refusal: the thread id and the run's error."""
    thread_id = str(client.threads.create()["thread_id"])
    state = client.runs.wait(thread_id, "saga", input=input, raise_error=False)
    assert isinstance(state, dict) and isinstance(state.get("__error__"), dict), state
    return thread_id, state["__error__"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("input", "message"),
    [
        (
            {"input": {"paper": str(INCOMPLETE_PAPER)}, "fail_at": "bogus"},
            "fail_at: unknown step 'bogus' (steps: validator, reviewer, summarizer)",
        ),
        ({"input": {"paper": "/nonexistent/paper.pdf"}}, "/nonexistent/paper.pdf: no such file"),
        ({"input": {}}, "input.paper: missing"),
        (
            {"input": {"paper": str(INCOMPLETE_PAPER), "fail_at": "bogus"}},
            "fail_at: unknown step 'bogus'",
        ),
        (
            {"input": {"paper": str(INCOMPLETE_PAPER)}, "status": "completed", "completed": []},
            "run input: not run input fields: completed, status",
        ),
    ],
    ids=[
        "unknown-fail-at",
        "missing-paper",
        "no-paper",
        "unknown-fail-at-in-input",
        "state-fields",
    ],
)
def test_bad_input_is_refused_not_run(
    server: Server, client: SyncLangGraphClient, input: dict[str, Any], message: str
) -> None:
    thread_id, error = _refused(client, input)
    assert message in str(error.get("message")), error
    assert "--" not in str(error.get("message"))  # the server has no command-line flags
    values = client.threads.get_state(thread_id)["values"]
    assert not (isinstance(values, dict) and values.get("status")), values  # no saga started
    assert _files(server.outputs / thread_id) == []


@pytest.mark.slow
def test_an_injected_failure_reason_names_no_cli_flag(
    server: Server, client: SyncLangGraphClient
) -> None:
    complete = REPO / "examples" / "papers" / "complete_paper.md"
    _, view = _run(client, server, {"input": {"paper": str(complete)}, "fail_at": "reviewer"})
    assert view["status"] == "rolled_back"
    assert "fail_at" in view["reason"] and "--fail-at" not in view["reason"]


@pytest.mark.slow
def test_a_fail_at_inside_the_input_is_honoured(
    server: Server, client: SyncLangGraphClient
) -> None:
    complete = REPO / "examples" / "papers" / "complete_paper.md"
    _, view = _run(client, server, {"input": {"paper": str(complete), "fail_at": "reviewer"}})
    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["reviewer", "validator"]


@pytest.mark.slow
def test_the_readme_server_block_runs_against_the_url_the_server_printed(
    server: Server, tmp_path: Path
) -> None:
    from tests.docs.test_readme import NEEDS_SERVER, readme_block, run_block

    # The URL read from the banner `langgraph dev` logged, as the README tells the user to.
    proc = run_block(readme_block(NEEDS_SERVER), tmp_path, LANGGRAPH_URL=server.url)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "completed"


@pytest.mark.slow
def test_the_readme_recipe_as_written_completes_a_saga(tmp_path: Path) -> None:
    """The README's settings exactly: no ``SAGAGRAPH_OUTPUTS``, so the relative default
    ``outputs`` is resolved by the server (once, outside its event loop, which refuses blocking
    calls such as ``os.getcwd``) and the saga writes under the server's working folder."""
    from tests.docs.test_readme import NEEDS_SERVER, readme_block, run_block

    workdir = tmp_path / "served"
    workdir.mkdir()
    with langgraph_dev(workdir, None) as running:
        proc = run_block(readme_block(NEEDS_SERVER), tmp_path, LANGGRAPH_URL=running.url)
        problems = running.log_problems()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "completed"
    assert problems == []
    written = sorted(path.name for path in (workdir / "outputs").glob("*/*.txt"))
    assert written == ["review.txt", "summary.txt", "validation.txt"]
