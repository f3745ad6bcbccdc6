"""Rolling back a saga run with ``--llm openai`` never needs the model's key.

A ``sagagraph run --llm openai`` (the real ChatOpenAI client against the scripted server) is
killed right after its validator's checkpoint: ``validation.txt`` is written and the saga is
``running``. Then, with no ``OPENAI_API_KEY`` at all (an operator whose key expired):
``recover --compensate`` rolls it back and no file is left; ``resume`` and ``status`` of the
finished saga read it; ``recover`` finds nothing. Compensating only deletes files: no model
is built. A forward ``recover`` still says the key is missing, before touching the saga.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sagagraph.agents.pdf.loader import load_paper
from tests.agents.test_openai_engine import sample_responder
from tests.agents.test_paper_saga import visible_files
from tests.support.kill_saver import KILL_EXIT_CODE
from tests.support.openai_server import Reply, ScriptedOpenAIServer, structured

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "examples" / "papers" / "complete_paper.md"
STEPS = ["validator", "reviewer", "summarizer"]


def responder() -> Any:
    """The paper engine's answers, and the LLM router's: the next step not committed yet."""
    engine = sample_responder(load_paper(PAPER))

    def respond(request: dict[str, Any]) -> Reply:
        if "next_step" not in json.dumps(request.get("response_format") or request.get("tools")):
            return engine(request)
        view = json.loads(request["messages"][-1]["content"])
        left = [s for s in view["steps"] if s not in view["committed"]]
        return structured(request, {"next_step": left[0] if left else "finish", "reason": "ok"})

    return respond


def base_env(db: str, outputs: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    return env | {"PYTHONPATH": str(REPO), "SAGAGRAPH_DB": db, "SAGAGRAPH_OUTPUTS": str(outputs)}


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sagagraph.cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def killed_after_validator(env: dict[str, str], router: str, saga_id: str, outputs: Path) -> str:
    """Run the saga, killed after each ``put`` in turn until one leaves it running with
    ``validation.txt`` written (the first step committed, the next not begun); that saga's id.
    The sagas killed before are left running too."""
    for put in range(1, 12):
        killer = [
            sys.executable,
            "-m",
            "tests.support.cli_kill_worker",
            "kill",
            "put",
            str(put),
            "exit",
        ]
        command = ["run", str(PAPER), "--llm", "openai", "--router", router, "--saga-id"]
        code = subprocess.run(
            [*killer, "--", *command, f"{saga_id}-{put}"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        ).returncode
        assert code == KILL_EXIT_CODE, f"put {put}: the run was not killed (exit {code})"
        folder = outputs / f"{saga_id}-{put}"
        if folder.is_dir() and [p.name for p in folder.iterdir()] == ["validation.txt"]:
            return f"{saga_id}-{put}"
    raise AssertionError("no put left the validator committed and the reviewer not begun")


@pytest.mark.parametrize("router", ["deterministic", "llm"])
def test_recover_compensate_rolls_back_an_openai_saga_without_the_key(
    tmp_path: Path, router: str
) -> None:
    outputs = tmp_path / "outputs"
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    with ScriptedOpenAIServer(responder()) as server:
        with_key = base_env(db, outputs) | {
            "OPENAI_API_KEY": "sk-test-expired-soon",
            "OPENAI_BASE_URL": server.base_url,
        }
        saga_id = killed_after_validator(with_key, router, "nokey", outputs)
    # No key, no server: the model cannot be reached at all; the shell still says openai.
    no_key = base_env(db, outputs) | {"SAGAGRAPH_LLM": "openai"}

    # The killed sagas, one each put, are all left running: roll every one back.
    recovered = cli(no_key, "recover", "--compensate", "--json")
    assert recovered.returncode == 0, recovered.stderr
    assert "OPENAI_API_KEY" not in recovered.stderr
    views = [json.loads(line) for line in recovered.stdout.splitlines() if line.startswith("{")]
    assert views and {v["status"] for v in views} == {"rolled_back"}, recovered.stderr
    assert visible_files(outputs) == []

    assert saga_id in {v["saga_id"] for v in views}
    status = cli(no_key, "status", saga_id, "--json")  # read without a key
    assert json.loads(status.stdout)["status"] == "rolled_back", status.stderr

    # resume of a finished saga reads it and says how it ended (status's exit code).
    resumed = cli(no_key, "resume", saga_id, "--json")
    assert resumed.returncode == status.returncode, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "rolled_back"
    again = cli(no_key, "recover")
    assert again.returncode == 0 and "nothing to recover" in again.stderr, again.stderr


def test_a_forward_recover_without_the_key_says_so_and_leaves_the_saga(tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    with ScriptedOpenAIServer(responder()) as server:
        with_key = base_env(db, outputs) | {
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": server.base_url,
        }
        saga_id = killed_after_validator(with_key, "deterministic", "fwd", outputs)
    forward = cli(base_env(db, outputs), "recover")
    assert forward.returncode != 0
    assert "OPENAI_API_KEY" in forward.stderr
    assert (outputs / saga_id / "validation.txt").is_file()
