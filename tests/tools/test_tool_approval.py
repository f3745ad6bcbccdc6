"""The human gate before costly or irreversible tool calls, on SQLite and PostgreSQL.

The agent's model is the real ``ChatOpenAI`` client against the scripted server: one turn
asks for three calls, two of them gated (:mod:`tests.support.gated_saga`). The operator
approves, edits or rejects them from Python and from the ``sagagraph`` command; a process
killed while the calls wait leaves them waiting, and another process answers them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command

from sagagraph import (
    build_saga_graph,
    new_saga_id,
    open_checkpointer,
    resume_saga,
    rollback_saga,
    run_saga,
    saga_status,
)
from sagagraph.errors import InputError, ToolRejectedError
from sagagraph.graph import approve_tool_call, reject_tool_call
from tests.support.child_processes import reaped
from tests.support.gated_saga import Partner, definition, responder
from tests.support.openai_server import ScriptedOpenAIServer
from tests.support.services import saga_database

# Sagas paused for approval and answered from new processes: seconds each.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(responder) as started:
        yield started


@pytest.fixture
def app(durable_checkpointer_url: str, tmp_path: Path, server: ScriptedOpenAIServer) -> Any:
    graph = build_saga_graph(definition(tmp_path, server.base_url))
    with open_checkpointer(durable_checkpointer_url) as checkpointer:
        yield graph.compile(checkpointer=checkpointer)


def waiting(app: Any, tmp_path: Path) -> dict[str, Any]:
    """A new saga, run until its gated calls wait; the calls that need no approval ran."""
    view = run_saga(app, {"traveller": "ada"}, saga_id=new_saga_id("pay"))
    assert view["status"] == "waiting_for_operator"
    assert view["waiting_for_operator"] is True
    assert view["completed"] == ["order"]
    assert sorted(a["tool"] for a in view["approvals"]) == ["charge_card", "send_wire"]
    assert {a["step"] for a in view["approvals"]} == {"pay"}
    assert Partner(tmp_path).effects().keys() == {"hold_room"}
    return view


def the(view: dict[str, Any], tool: str) -> dict[str, Any]:
    return next(a for a in view["approvals"] if a["tool"] == tool)


def test_approved_calls_run_once_and_the_saga_goes_on(
    app: Any, tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    view = waiting(app, tmp_path)
    saga_id = view["saga_id"]
    assert saga_status(app, saga_id)["approvals"] == view["approvals"]  # durable, as read
    done = approve_tool_call(app, saga_id)
    assert done["status"] == "completed"
    assert done["completed"] == ["order", "pay", "notify"]
    assert done["approvals"] == []
    effects = Partner(tmp_path).effects()
    assert {t: e["state"] for t, e in effects.items()} == {
        "hold_room": "done",
        "charge_card": "done",
        "send_wire": "done",
    }
    assert [c["status"] for c in done["tools"]["pay"]] == ["forward"] * 3
    # The model asked once for the calls and once more with their results: approving
    # asks it nothing.
    assert len(server.requests) == 2


def test_calls_are_answered_one_by_one_and_an_edit_runs_the_operator_arguments(
    app: Any, tmp_path: Path
) -> None:
    view = waiting(app, tmp_path)
    saga_id = view["saga_id"]
    charge = the(view, "charge_card")
    assert charge["key"] == f"{saga_id}:pay:call-2"
    half = approve_tool_call(app, saga_id, call=charge["call"], edit={"amount_cents": 7_000})
    assert half["status"] == "waiting_for_operator"
    assert [a["tool"] for a in half["approvals"]] == ["send_wire"]
    assert Partner(tmp_path).effects()["charge_card"]["args"] == {"amount_cents": 7_000}
    done = approve_tool_call(app, saga_id, call=the(half, "send_wire")["key"])
    assert done["status"] == "completed"
    # The log, so the undo, holds what ran: the operator's amount, not the model's.
    calls = {c["tool"]: c for c in done["results"]["pay"]["tool_calls"]}
    assert calls["charge_card"]["args"] == {"amount_cents": 7_000}
    assert calls["send_wire"]["args"] == {"to": "hotel", "amount_cents": 500}


def test_a_rejection_fails_the_step_and_the_saga_compensates(app: Any, tmp_path: Path) -> None:
    view = waiting(app, tmp_path)
    saga_id = view["saga_id"]
    approve_tool_call(app, saga_id, call=the(view, "charge_card")["call"])
    done = reject_tool_call(app, saga_id, "no wires this week")
    assert done["status"] == "rolled_back"
    assert done["compensated"] == ["pay", "order"]
    assert done["failure"]["step"] == "pay"
    assert done["failure"]["error"].startswith("ToolRejectedError: operator rejected send_wire")
    assert "no wires this week" in done["failure"]["error"]
    # The rejected call never ran, so nothing undoes it; the others are undone by key.
    tools = {c["tool"]: c["status"] for c in done["tools"]["pay"]}
    assert tools == {"hold_room": "undone", "charge_card": "undone", "send_wire": "failed"}
    effects = Partner(tmp_path).effects()
    assert {t: e["state"] for t, e in effects.items()} == {
        "hold_room": "undone",
        "charge_card": "undone",
    }
    assert not (tmp_path / f"{saga_id}.order").exists()


def test_langgraph_command_resume_answers_by_interrupt_id(app: Any, tmp_path: Path) -> None:
    view = waiting(app, tmp_path)
    config = {"configurable": {"thread_id": view["saga_id"]}}
    answers = {a["id"]: {"type": "approve"} for a in view["approvals"]}
    app.invoke(Command(resume=answers), config, durability="sync")
    assert saga_status(app, view["saga_id"])["status"] == "completed"


def test_answers_that_fit_no_waiting_call_are_refused(app: Any, tmp_path: Path) -> None:
    view = waiting(app, tmp_path)
    saga_id = view["saga_id"]
    with pytest.raises(InputError, match="no tool call 'call_nope' waits"):
        approve_tool_call(app, saga_id, call="call_nope")
    with pytest.raises(InputError, match="--edit needs one call"):
        approve_tool_call(app, saga_id, edit={"amount_cents": 1})
    with pytest.raises(InputError, match="--why is required"):
        reject_tool_call(app, saga_id, "  ")
    with pytest.raises(InputError, match="tool calls wait for approval; reject them"):
        rollback_saga(app, saga_id)
    assert resume_saga(app, saga_id)["approvals"] == view["approvals"]  # still waiting
    approve_tool_call(app, saga_id)
    with pytest.raises(InputError, match="no tool call waits for approval"):
        approve_tool_call(app, saga_id)


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sagagraph.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_process_killed_while_calls_wait_leaves_them_waiting_for_the_cli(
    backend: str, tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    saga_id = new_saga_id("pay")
    env = os.environ | {
        "PYTHONPATH": str(REPO),
        "GATE_DATA": str(tmp_path),
        "OPENAI_BASE_URL": server.base_url,
        "SAGAGRAPH_LLM": "offline",
    }
    with saga_database(backend, tmp_path) as db:
        command = [sys.executable, "-m", "tests.support.gate_worker", "--data", str(tmp_path)]
        command += ["--db", db, "--saga-id", saga_id, "--base-url", server.base_url]
        with reaped(subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)) as proc:
            assert proc.stdout is not None
            first = json.loads(proc.stdout.readline())
            assert first["status"] == "waiting_for_operator"
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(timeout=30) == -signal.SIGKILL
            proc.stdout.close()

        # Another process reads it (with the paper saga's graph: from the checkpoint alone).
        status = cli("status", saga_id, "--db", db, "--json", env=env)
        assert status.returncode == 4, status.stderr
        seen = json.loads(status.stdout)
        assert seen["status"] == "waiting_for_operator"
        assert {a["id"] for a in seen["approvals"]} == {a["id"] for a in first["approvals"]}

        # recover leaves it waiting: an operator decides, not a restart.
        recover = cli("recover", "--db", db, env=env)
        assert recover.returncode == 4, recover.stderr
        assert f"waiting for an operator: {saga_id}" in recover.stderr
        assert Partner(tmp_path).effects().keys() == {"hold_room"}

        app_flag = ["--app", "tests.support.gated_saga:graph"]
        # Without the saga's graph the command says what it needs, and changes nothing.
        refused = cli("approve", saga_id, "--db", db, env=env)
        assert refused.returncode == 2
        assert "--app" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1

        charge = the(first, "charge_card")["call"]
        edit = json.dumps({"amount_cents": 8_000})
        half = cli("approve", saga_id, "--db", db, "--call", charge, "--edit", edit, *app_flag,
                   "--json", env=env)  # fmt: skip
        assert half.returncode == 4, half.stderr
        assert [a["tool"] for a in json.loads(half.stdout)["approvals"]] == ["send_wire"]

        done = cli("approve", saga_id, "--db", db, *app_flag, "--json", env=env)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["completed"] == ["order", "pay", "notify"]
    effects = Partner(tmp_path).effects()
    assert effects["charge_card"]["args"] == {"amount_cents": 8_000}
    assert {t: e["state"] for t, e in effects.items()} == dict.fromkeys(
        ("hold_room", "charge_card", "send_wire"), "done"
    )


def test_reject_from_the_cli_rolls_the_saga_back(
    tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    env = os.environ | {
        "PYTHONPATH": str(REPO),
        "GATE_DATA": str(tmp_path),
        "OPENAI_BASE_URL": server.base_url,
        "SAGAGRAPH_APP": "tests.support.gated_saga:graph",
    }
    with open_checkpointer(db) as checkpointer:
        app = build_saga_graph(definition(tmp_path, server.base_url)).compile(
            checkpointer=checkpointer
        )
        view = waiting(app, tmp_path)
    bad = cli("approve", view["saga_id"], "--db", db, "--edit", "[1]", env=env)
    assert bad.returncode == 2
    assert "--edit: expected a JSON object" in bad.stderr
    nowhere = cli("approve", view["saga_id"], "--db", db, "--app", "tests.nope:graph", env=env)
    assert nowhere.returncode == 2
    assert nowhere.stderr.count("\n") == 1
    assert "--app 'tests.nope:graph': ModuleNotFoundError: No module named 'tests.nope'" in (
        nowhere.stderr
    )
    done = cli("reject", view["saga_id"], "--db", db, "--why", "over budget", "--json", env=env)
    assert done.returncode == 3, done.stderr
    rolled = json.loads(done.stdout)
    assert rolled["status"] == "rolled_back"
    assert "over budget" in rolled["failure"]["error"]
    assert {e["state"] for e in Partner(tmp_path).effects().values()} == {"undone"}


def test_the_middleware_alone_rolls_back_a_rejected_run(
    tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    from sagagraph import create_compensating_agent
    from tests.support.gated_saga import chat_model, payout_tools

    partner = Partner(tmp_path)
    with open_checkpointer(f"sqlite:///{tmp_path / 'agent.sqlite'}") as checkpointer:
        agent, _ = create_compensating_agent(
            chat_model(server.base_url), payout_tools(partner), checkpointer=checkpointer
        )
        config = {"configurable": {"thread_id": "trip-1"}}
        paused = agent.invoke({"messages": [("user", "pay")]}, config, durability="sync")
        pending = paused["__interrupt__"]
        assert sorted(i.value["name"] for i in pending) == ["charge_card", "send_wire"]
        answers = {
            i.id: {"type": "approve"}
            if i.value["name"] == "charge_card"
            else {"type": "reject", "message": "not today"}
            for i in pending
        }
        with pytest.raises(ToolRejectedError, match="not today"):
            agent.invoke(Command(resume=answers), config, durability="sync")
        log = {c["tool"]: c["status"] for c in agent.get_state(config).values["tool_calls"]}
    assert log == {"hold_room": "undone", "charge_card": "undone", "send_wire": "failed"}
    assert {t: e["state"] for t, e in partner.effects().items()} == {
        "hold_room": "undone",
        "charge_card": "undone",
    }


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_process_killed_while_carrying_out_an_approval_leaves_the_calls_waiting_again(
    backend: str, tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    """The approving process dies (SIGKILL) as the approved ``charge_card`` is about to write:
    the decision dies with it, so the calls wait again, and the next approval runs each call
    once (a call that ran before the kill runs again with its key: the partner keeps one)."""
    env = os.environ | {
        "PYTHONPATH": str(REPO),
        "GATE_DATA": str(tmp_path),
        "OPENAI_BASE_URL": server.base_url,
    }
    with saga_database(backend, tmp_path) as db:
        with open_checkpointer(db) as checkpointer:
            app = build_saga_graph(definition(tmp_path, server.base_url)).compile(
                checkpointer=checkpointer
            )
            view = waiting(app, tmp_path)
        saga_id = view["saga_id"]
        app_flag = ["--app", "tests.support.gated_saga:graph"]
        killed = cli(
            "approve", saga_id, "--db", db, *app_flag, env=env | {"GATE_KILL_AT": "charge_card"}
        )
        assert killed.returncode == -signal.SIGKILL
        assert "charge_card" not in Partner(tmp_path).effects()

        with open_checkpointer(db) as checkpointer:
            app = build_saga_graph(definition(tmp_path, server.base_url)).compile(
                checkpointer=checkpointer
            )
            again = saga_status(app, saga_id)
            assert again["status"] == "waiting_for_operator"
            assert {a["id"] for a in again["approvals"]} == {a["id"] for a in view["approvals"]}
            assert resume_saga(app, saga_id)["status"] == "waiting_for_operator"
            done = approve_tool_call(app, saga_id)
    assert done["status"] == "completed"
    rows = Partner(tmp_path).rows()
    assert [r["tool"] for r in rows] == ["hold_room", "charge_card", "send_wire"]
    assert {r["state"] for r in rows} == {"done"}


def test_a_gated_call_without_a_checkpointer_is_refused_in_one_line(
    tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    """Nothing could resume the pause: the run fails, and the calls it made are undone."""
    from sagagraph import create_compensating_agent
    from sagagraph.errors import ConfigurationError
    from tests.support.gated_saga import chat_model, payout_tools

    partner = Partner(tmp_path)
    agent, _ = create_compensating_agent(chat_model(server.base_url), payout_tools(partner))
    with pytest.raises(ConfigurationError, match="needs an operator's approval, and the pause"):
        agent.invoke({"messages": [("user", "pay")]})
    assert {t: e["state"] for t, e in partner.effects().items()} == {"hold_room": "undone"}
