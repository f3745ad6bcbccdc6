"""A durable "approved" mark decides whether a rejected compensable call may have run (issue
38's adversarial pass): a call rejected without ever being approved never ran, so it is
logged ``failed`` and no undo is asked for; one whose approval reached the tool (the
approving process then died) is ``unknown`` and undone, as tests/tools/test_approval_kills.py
checks at every boundary. On SQLite and PostgreSQL, where the mark lives in the saga
store's own tables."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sagagraph import build_saga_graph, new_saga_id, open_checkpointer, run_saga
from sagagraph.graph import reject_tool_call
from tests.support.gated_saga import Partner, definition, responder
from tests.support.openai_server import ScriptedOpenAIServer
from tests.support.services import saga_database
from tests.tools.test_approval_kills import APP, REPO, cli


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(responder) as started:
        yield started


def calls_of(view: dict[str, Any], tool: str, action: str) -> list[dict[str, Any]]:
    return [e for e in view["events"] if e["action"] == action and f"{tool} " in e["detail"]]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_call_rejected_without_an_approval_asks_for_no_undo(
    backend: str, tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    partner = Partner(tmp_path)
    with saga_database(backend, tmp_path) as db, open_checkpointer(db) as checkpointer:
        app = build_saga_graph(definition(tmp_path, server.base_url)).compile(
            checkpointer=checkpointer
        )
        first = run_saga(app, {"traveller": "ada"}, saga_id=new_saga_id("mark"))
        assert first["status"] == "waiting_for_operator"
        view = reject_tool_call(app, first["saga_id"], "over budget")
    assert view["status"] == "rolled_back", view["reason"]
    assert partner.undo_calls("charge_card") == 0  # it never ran: nothing to undo
    assert partner.undo_calls("hold_room") == 1  # it ran (no approval needed): undone once
    (call,) = calls_of(view, "charge_card", "tool_call")
    assert call["outcome"] == "error" and "never approved" in call["detail"], call
    assert calls_of(view, "charge_card", "tool_undo") == []


def test_a_call_approved_then_killed_then_rejected_is_still_undone(
    tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    """The mark is written before the tool runs: a kill right after the partner's write
    leaves the call's outcome unknown, so the rejection undoes it exactly once.

    Only ``charge_card`` is approved, so the irreversible ``send_wire`` beside it never
    runs (tests/tools/test_approval_kills.py covers each place it can stand)."""
    env = os.environ | {
        "PYTHONPATH": str(REPO),
        "GATE_DATA": str(tmp_path),
        "OPENAI_BASE_URL": server.base_url,
    }
    partner = Partner(tmp_path)
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    with open_checkpointer(db) as checkpointer:
        app = build_saga_graph(definition(tmp_path, server.base_url)).compile(
            checkpointer=checkpointer
        )
        first = run_saga(app, {"traveller": "ada"}, saga_id=new_saga_id("mark"))
    saga_id = first["saga_id"]
    (charge,) = [a["call"] for a in first["approvals"] if a["tool"] == "charge_card"]
    kill = {"GATE_KILL_AT": "charge_card", "GATE_KILL_WHEN": "after"}
    killed = cli("approve", saga_id, "--call", charge, "--db", db, *APP, env=env | kill)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    done = cli("reject", saga_id, "--db", db, "--why", "too late", *APP, env=env)
    assert done.returncode == 3, done.stderr  # rolled back
    assert partner.effects()["charge_card"]["state"] == "undone"
    assert partner.undo_calls("charge_card") == 1
    assert "send_wire" not in partner.effects()
