"""Every ``python`` and ``bash`` block of README.md and docs/*.md runs as pasted.

Each block runs as a script in a subprocess, from a fresh folder, offline, with the
``sagagraph`` command of the environment running the tests on its PATH. A ``bash`` block has the
repository's ``examples/`` beside it (the docs run commands "from the repository root"); a
``python`` block runs from anywhere: only ``sagagraph`` is importable, as installed from the
checkout, and a block that uses ``examples/`` finds it from ``sagagraph.__file__``. A bash
block runs under ``set -euo pipefail``: every command in it must succeed.

A block that needs a service says so on a line of its own, ``# needs: postgres``,
``# needs: rabbitmq`` or ``# needs: model`` (several: ``# needs: postgres, rabbitmq``). Outside
CI a block whose service is unreachable is skipped with the reason; under ``CI=true`` it fails.
``model`` is the scripted OpenAI-compatible server of the tests (``OPENAI_BASE_URL``).
``# needs: server`` marks the LangGraph Server block, run by
``tests/server/test_langgraph_server.py`` against the ``langgraph dev`` it starts.

What is meant to be adapted rather than pasted (a synopsis with ``PAPER.pdf``, a deployment's
host names, a long-running worker) is fenced ``text``, not ``bash``: this test holds every
``bash`` block to running as written. README's Python blocks are run by ``test_readme.py``
(twice each, from a fresh folder), so they are listed here but not run twice over.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.openai_server import ScriptedOpenAIServer
from tests.support.services import require_postgres, require_rabbitmq

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUN = ("python", "bash")
SERVICES = ("postgres", "rabbitmq", "model", "server")
FENCE = re.compile(r"^([ \t]*)```(\w*)[^\n]*\n(.*?)^[ \t]*```", re.S | re.M)
"""A fenced block, at the start of a line or indented under a list item."""
NEEDS = re.compile(r"^\s*# needs: ([\w ,]+)$", re.M)


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int
    language: str
    code: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    @property
    def needs(self) -> set[str]:
        return {n.strip() for found in NEEDS.findall(self.code) for n in found.split(",")}


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            indent, language, code = match.groups()
            found.append(Block(page, line, language, textwrap.dedent(code) if indent else code))
    return found


RUNNABLE = [b for b in blocks() if b.language in RUN]
HERE = [b for b in RUNNABLE if not (b.page.name == "README.md" and b.language == "python")]


def test_blocks_are_found_and_markers_name_known_services() -> None:
    assert {b.page.name for b in RUNNABLE} >= {"README.md", "tools.md", "blackboard.md"}
    assert any(b.language == "bash" for b in HERE)
    for block in RUNNABLE:
        assert block.needs <= set(SERVICES), f"{block.name}: unknown service in {block.needs}"


@pytest.fixture
def model() -> Iterator[ScriptedOpenAIServer]:
    from tests.graph.test_llm_router import ScriptedRouter

    with ScriptedOpenAIServer(ScriptedRouter()) as server:
        yield server


def environment(block: Block, model: ScriptedOpenAIServer) -> dict[str, str]:
    """The block's environment: the test's, without sagagraph's or OpenAI's settings (a new
    user's), with the repository importable and the ``sagagraph`` command on PATH."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    path = os.pathsep.join([str(Path(sys.executable).parent), base.get("PATH", "")])
    env = base | {"PYTHONPATH": str(REPO), "PATH": path, "SAGAGRAPH_LLM": "offline"}
    if "model" in block.needs:
        env |= {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-docs"}
        env.pop("SAGAGRAPH_LLM")
    return env


def marked(block: Block) -> object:
    """``block`` as a test case carrying the markers of the services it needs, so the fast loop
    (`make check`) leaves it out by marker."""
    marks = [getattr(pytest.mark, n) for n in sorted(block.needs & {"postgres", "rabbitmq"})]
    return pytest.param(block, marks=marks, id=block.name)


@pytest.mark.slow
@pytest.mark.parametrize("block", [marked(b) for b in HERE])
def test_each_doc_block_runs_as_pasted(
    block: Block, tmp_path: Path, model: ScriptedOpenAIServer
) -> None:
    if "server" in block.needs:
        pytest.skip("run by tests/server/test_langgraph_server.py beside the langgraph dev")
    if "postgres" in block.needs:
        require_postgres()
    if "rabbitmq" in block.needs:
        require_rabbitmq()
    env = environment(block, model)
    if block.language == "python":
        # A Python block runs from anywhere, as a script file: sagagraph importable (as
        # installed from the checkout), nothing else of the checkout, neither examples/
        # beside it nor on the path.
        site = tmp_path / "site"
        site.mkdir()
        (site / "sagagraph").symlink_to(REPO / "sagagraph")
        env["PYTHONPATH"] = str(site)
        script = tmp_path / "block.py"
        script.write_text(block.code)
        command = [sys.executable, str(script)]
    else:
        # Shell blocks are commands "from the repository root", as the pages say.
        (tmp_path / "examples").symlink_to(REPO / "examples")
        script = tmp_path / "block.sh"
        script.write_text("set -euo pipefail\n" + block.code)
        command = ["bash", str(script)]
    # A session of its own: whatever the block leaves running is stopped with it.
    proc = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=300)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == 0, f"{block.name} exited {proc.returncode}:\n{err}"
    assert "Traceback" not in err, err
