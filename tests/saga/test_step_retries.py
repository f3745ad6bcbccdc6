"""One layer of retries: the client retries nothing, the step's Retry policy is every attempt.

Through the real ``ChatOpenAI`` client over HTTP against the scripted server, counting the
requests it receives; and ``--step-timeout`` bounds a hung model call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sagagraph.agents.paper_app import settings_of
from sagagraph.cli import main
from tests.support.openai_server import Reply, ScriptedOpenAIServer

PAPER = Path(__file__).resolve().parents[2] / "examples" / "papers" / "complete_paper.md"
ATTEMPTS = 2
"""The paper saga's default Retry for a model engine: two attempts a step."""


@pytest.fixture
def failing_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(lambda request: Reply(status=500, content="overloaded")) as server:
        yield configure(monkeypatch, tmp_path, server)


@pytest.fixture
def hung_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(lambda request: Reply(content="{}", delay=3.0)) as server:
        yield configure(monkeypatch, tmp_path, server)


def configure(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, server: ScriptedOpenAIServer
) -> ScriptedOpenAIServer:
    for name in ("SAGAGRAPH_DB", "SAGAGRAPH_BUS", "SAGAGRAPH_STEP_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-retries")
    monkeypatch.setenv("SAGAGRAPH_LLM", "openai")
    monkeypatch.chdir(tmp_path)
    return server


def executes(view: dict[str, object], step: str) -> list[dict[str, object]]:
    return [
        e
        for e in view["events"]  # type: ignore[attr-defined]
        if e["step"] == step and e["action"] == "execute"
    ]


def test_a_failing_model_is_called_once_per_attempt_and_every_attempt_is_an_event(
    failing_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(PAPER), "--saga-id", "r500", "--json"]) == 3
    view = json.loads(capsys.readouterr().out)
    assert len(failing_server.requests) == ATTEMPTS
    attempts = executes(view, "validator")
    assert [e["attempt"] for e in attempts] == list(range(1, ATTEMPTS + 1))
    assert attempts[-1]["outcome"] == "error"


def test_step_timeout_bounds_a_hung_model_and_is_recorded_for_resume(
    hung_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", str(PAPER), "--saga-id", "hung", "--step-timeout", "0.5", "--json"]
    assert main(args) == 3
    view = json.loads(capsys.readouterr().out)
    attempts = executes(view, "validator")
    assert [e["outcome"] for e in attempts][-1] == "timeout"
    assert len(attempts) == ATTEMPTS
    assert len(hung_server.requests) == ATTEMPTS  # no hidden client retry behind each attempt
    assert "within 0.5s" in view["reason"]

    # resume and recover rebuild the saga from what it recorded: the same timeout.
    recorded = {"input": {"settings": {"step_timeout": 0.5}}}
    settings = settings_of(recorded["input"])
    assert settings.step_timeout == 0.5
    assert main(["status", "hung", "--json"]) == 3
    capsys.readouterr()


def test_the_step_timeout_variable_applies_when_no_flag_is_given(
    hung_server: ScriptedOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SAGAGRAPH_STEP_TIMEOUT", "0.5")
    assert main(["run", str(PAPER), "--saga-id", "hung-env", "--json"]) == 3
    view = json.loads(capsys.readouterr().out)
    assert executes(view, "validator")[-1]["outcome"] == "timeout"
