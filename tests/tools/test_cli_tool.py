"""The ``sagagraph`` command as a tool: progress on stderr, exit codes, flags, closed pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sagagraph.cli import main
from sagagraph.cli.parser import build_parser
from tests.cli.test_bad_input import text_pdf

REPO = Path(__file__).resolve().parents[2]
PAPERS = REPO / "examples" / "papers"
COMPLETE = PAPERS / "complete_paper.md"
INCOMPLETE = PAPERS / "incomplete_paper.md"


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    return env | {"PYTHONPATH": str(REPO), "SAGAGRAPH_LLM": "offline"}


def sagagraph(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sagagraph.cli", *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


# Each case runs the command line on the travel swarm: seconds each.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("offline_cli")]


# -- 4. progress ---------------------------------------------------------------------------------


def test_run_json_shows_pages_then_the_id_then_steps_on_stderr(tmp_path: Path) -> None:
    lines = COMPLETE.read_text().splitlines()
    pdf = tmp_path / "long.pdf"
    pdf.write_bytes(text_pdf(40, lambda i: lines[i % len(lines)] or "text"))

    proc = sagagraph(tmp_path, "run", str(pdf), "--saga-id", "prog-1", "--json")

    view = json.loads(proc.stdout)  # stdout is the JSON object and nothing else
    assert view["saga_id"] == "prog-1"
    err = proc.stderr.splitlines()
    pages = [line for line in err if line.startswith("loading long.pdf: page ")]
    assert pages[-1] == "loading long.pdf: page 40/40" and 2 <= len(pages) <= 11
    # The id is announced once the saga exists: after the paper is read and checked.
    announced = [i for i, line in enumerate(err) if line.startswith("saga prog-1: ")]
    assert len(announced) == 1 and "long.pdf" in err[announced[0]]
    assert err.index(pages[-1]) < announced[0] < err.index("  > validator    execute started")
    assert any(
        line[2:].startswith(("+ validator    execute", "! validator    execute")) for line in err
    )


def test_each_step_says_when_it_starts_and_ends_and_so_does_each_compensation(
    tmp_path: Path,
) -> None:
    proc = sagagraph(tmp_path, "run", str(COMPLETE), "--saga-id", "p2", "--fail-at", "summarizer")
    assert proc.returncode == 3, proc.stderr
    marks = [line.split()[:3] for line in proc.stderr.splitlines() if line.startswith("  ")]
    forward = [m for m in marks if m[2] == "execute"]
    assert forward == [
        [">", "validator", "execute"],
        ["+", "validator", "execute"],
        [">", "reviewer", "execute"],
        ["+", "reviewer", "execute"],
        # --fail-at raises in place of the summarizer's execute: its attempt starts and fails.
        [">", "summarizer", "execute"],
        ["x", "summarizer", "execute"],
    ]
    assert marks[: len(forward)] == forward
    # The rollback is one superstep; each compensation's start is said by the step as it
    # starts, its end comes from the run's stream as it ends: each start before its own end,
    # starts and ends each in reverse order, the finish last.
    back = marks[len(forward) :]
    order = ["summarizer", "reviewer", "validator"]
    assert [m[1] for m in back if m[0] == "<"] == order
    assert [m[1] for m in back if m[0] == "+" and m[2] == "compensate"] == order
    for step in order:
        assert back.index(["<", step, "compensate"]) < back.index(["+", step, "compensate"])
    assert back[-1] == ["+", "saga", "finish"]
    assert len(back) == 2 * len(order) + 1


# -- 10. exit codes ------------------------------------------------------------------------------


def test_halted_rolled_back_and_completed_have_their_own_codes_in_run_and_status(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", str(COMPLETE), "--saga-id", "ok"]) == 0
    assert main(["run", str(COMPLETE), "--saga-id", "failed", "--fail-at", "reviewer"]) == 3
    assert main(["run", str(INCOMPLETE), "--saga-id", "invalid"]) == 5
    for saga_id, code in (("ok", 0), ("failed", 3), ("invalid", 5)):
        assert main(["status", saga_id]) == code, saga_id
        assert main(["status", saga_id, "--json"]) == code, saga_id
    capsys.readouterr()


def test_the_choreographed_invalid_paper_exits_5_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(INCOMPLETE), "--mode", "choreography", "--saga-id", "ci"]) == 5
    assert main(["status", "ci"]) == 5
    capsys.readouterr()


# -- 9. flags, help, errors in the CLI's words ---------------------------------------------------


def subcommand(name: str) -> object:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return action.choices[name]  # type: ignore[index]


def options(name: str) -> set[str]:
    return {o for a in subcommand(name)._actions for o in a.option_strings}  # type: ignore[attr-defined]


def test_each_command_has_only_the_flags_it_uses() -> None:
    assert not options("status") & {"--llm", "--model", "--outputs"}
    assert not options("list") & {"--llm", "--model", "--outputs"}
    # events reads the bus, or the checkpointer (--db) for an orchestrated saga
    assert not options("events") & {"--llm", "--model", "--outputs"}
    assert "--db" not in options("agent") and "--json" not in options("agent")
    assert "--bus" not in options("resolve")  # an operator's answer is orchestration's
    assert "--bus" in options("resume") & options("recover")  # they find choreographed sagas
    assert {"--step-timeout", "--db", "--bus", "--llm", "--json"} <= options("run")
    assert "--step-timeout" in options("resume") & options("recover")


def test_every_argument_of_every_command_has_help() -> None:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    for name, sub in action.choices.items():
        for arg in sub._actions:
            if arg.dest in ("help", "debug"):
                continue
            assert arg.help, f"{name} {arg.option_strings or arg.dest}: no help text"
    assert all(a.help for a in parser._actions if a.dest not in ("help", "command"))


def test_version_comes_from_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib import metadata

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"sagagraph {metadata.version('sagagraph')}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--parallel", "--router", "llm"], "--parallel needs --router deterministic"),
        (["--parallel", "--mode", "choreography"], "--parallel needs --mode orchestration"),
        (["--router", "llm", "--mode", "choreography"], "--router llm needs --mode orchestration"),
        (
            ["--router", "llm", "--llm", "offline"],
            "--router llm needs a chat model: set OPENAI_API_KEY",
        ),
        (["--step-timeout", "soon"], "--step-timeout='soon': expected seconds"),
        (["--step-timeout", "-1"], "--step-timeout='-1': expected a positive number of seconds"),
    ],
)
def test_errors_speak_the_cli(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(COMPLETE), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"sagagraph: error: {message}"), err
    assert "Step.after" not in err[-1] and "router=" not in err[-1]
    assert "use --llm offline" not in err[-1]


def test_step_timeout_from_the_environment_is_checked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SAGAGRAPH_STEP_TIMEOUT", "zero")
    assert main(["run", str(COMPLETE)]) == 2
    assert "SAGAGRAPH_STEP_TIMEOUT='zero': expected seconds" in capsys.readouterr().err


# -- 8. a closed pipe ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        # `true` exits before the CLI has started: its first write meets a closed pipe.
        "list --json | true",
        "events sagaX --json | true",
        "status sagaX --json | true",
        "list | true",
        "list --json | head -c 10",
    ],
)
def test_a_closed_pipe_ends_quietly(tmp_path: Path, command: str) -> None:
    for i in range(3):
        assert main(["run", str(COMPLETE), "--saga-id", f"s{i:02d}", "--json"]) == 0
    assert main(["run", str(COMPLETE), "--mode", "choreography", "--saga-id", "sagaX"]) == 0
    verb, _, rest = command.partition(" | ")
    shell = (
        f"{sys.executable} -m sagagraph.cli {verb} 2>err.txt | {rest} >/dev/null; "
        "echo ${PIPESTATUS[0]}"
    )
    proc = subprocess.run(
        ["bash", "-c", shell], cwd=tmp_path, env=clean_env(), capture_output=True, text=True
    )
    assert proc.stdout.strip() in ("0", "141"), proc.stdout
    err = (tmp_path / "err.txt").read_text()
    assert "Traceback" not in err and "error" not in err, err
