"""Every Python block of the README runs as written, twice in a row, from a folder that is
not the repository: fixed ids or files would collide on the second run.

Each block runs as a script in a subprocess, in a fresh temporary folder, offline. The LLM
router block needs a chat model, as the README says: it gets ``OPENAI_BASE_URL`` pointing at
the scripted OpenAI-compatible server. The LangGraph Server block is run by
``tests/server/test_langgraph_server.py``, against the ``langgraph dev`` it starts.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.graph.test_llm_router import ScriptedRouter
from tests.support.openai_server import ScriptedOpenAIServer

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
NEEDS_SERVER = "LANGGRAPH_URL"
"""Blocks that name this run against LangGraph Server (tested beside it)."""
NEEDS_MODEL = "make_chat_model()"
"""Blocks that call this need a chat model: the scripted server stands in."""


def python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def readme_block(marker: str) -> str:
    """The one Python block of the README that contains ``marker``."""
    found = [b for b in python_blocks() if marker in b]
    assert len(found) == 1, f"{len(found)} README blocks contain {marker!r}"
    return found[0]


def run_block(block: str, folder: Path, **env: str) -> subprocess.CompletedProcess[str]:
    script = folder / "snippet.py"
    script.write_text(block)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=folder,
        env=base | {"PYTHONPATH": str(REPO)} | env,
        capture_output=True,
        text=True,
        timeout=180,
    )


BLOCKS = [b for b in python_blocks() if NEEDS_SERVER not in b]


@pytest.fixture
def router_model() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(ScriptedRouter()) as server:
        yield server


def test_the_readme_has_python_blocks() -> None:
    assert len(BLOCKS) >= 3
    assert any(NEEDS_MODEL in b for b in BLOCKS)
    assert len([b for b in python_blocks() if NEEDS_SERVER in b]) == 1


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i + 1}" for i in range(len(BLOCKS))])
def test_each_readme_block_runs_twice_from_a_fresh_folder(
    block: str, tmp_path: Path, router_model: ScriptedOpenAIServer
) -> None:
    env = {}
    if NEEDS_MODEL in block:
        env = {"OPENAI_BASE_URL": router_model.base_url, "OPENAI_API_KEY": "sk-readme"}
    for run in (1, 2):
        proc = run_block(block, tmp_path, **env)
        assert proc.returncode == 0, f"run {run}:\n{proc.stderr}"
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.stdout.strip(), f"run {run} printed nothing"
    if NEEDS_MODEL in block:
        assert router_model.requests, "the router block never asked its model"
        assert proc.stdout.startswith("completed"), proc.stdout
