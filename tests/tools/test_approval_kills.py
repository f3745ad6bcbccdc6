"""The approving process SIGKILLed at each boundary of the approve path, then the operator
rejects or approves again (issue 38, item 2), on SQLite and PostgreSQL.

``charge_card`` is compensable and gated. Killed before the call, during it (the partner's
write not committed), after it (the partner holds the charge, the saga never heard) or after
the agent's step was checkpointed: whatever the operator does next, the charge is either
never made, or made and refunded exactly once, or made once and kept by a completed saga.

``send_wire`` (irreversible, gated) runs beside ``charge_card``, so each case pins where it
stands when the kill lands (``GATE_WIRE``, tests/support/gated_saga.py): a rejection then
reports it to an operator (``compensation_failed``, exit 4) exactly when its approval was
marked, so it may have run, and never runs it.
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

from sagagraph import build_saga_graph, new_saga_id, open_checkpointer, run_saga
from tests.support.gated_saga import Partner, definition, responder
from tests.support.openai_server import ScriptedOpenAIServer
from tests.support.services import saga_database

REPO = Path(__file__).resolve().parents[2]
APP = ["--app", "tests.support.gated_saga:graph"]
BOUNDARIES = {
    "before": ("charge_card", "before"),
    "during": ("charge_card", "during"),
    "after": ("charge_card", "after"),
    "checkpointed": ("notify", "before"),
}
"""Where the approving process dies: ``GATE_KILL_AT`` and ``GATE_KILL_WHEN``."""
WIRE = "sent"
"""Where ``send_wire`` stands when a kill at ``charge_card`` lands, in the boundary test: the
wire sent, its result lost."""


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(responder) as started:
        yield started


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sagagraph.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("answer", ["reject", "approve"])
@pytest.mark.parametrize("boundary", list(BOUNDARIES))
def test_an_approval_killed_at_any_boundary_charges_at_most_once_and_refunds_what_it_charged(
    boundary: str, answer: str, backend: str, tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    env = os.environ | {
        "PYTHONPATH": str(REPO),
        "GATE_DATA": str(tmp_path),
        "OPENAI_BASE_URL": server.base_url,
    }
    partner = Partner(tmp_path)
    with saga_database(backend, tmp_path) as db:
        with open_checkpointer(db) as checkpointer:
            app = build_saga_graph(definition(tmp_path, server.base_url)).compile(
                checkpointer=checkpointer
            )
            first = run_saga(app, {"traveller": "ada"}, saga_id=new_saga_id("pay"))
        saga_id = first["saga_id"]
        assert first["status"] == "waiting_for_operator"
        at, when = BOUNDARIES[boundary]
        kill = {"GATE_KILL_AT": at, "GATE_KILL_WHEN": when, "GATE_DB": db}
        if at == "charge_card":
            kill["GATE_WIRE"] = WIRE
        killed = cli("approve", saga_id, "--db", db, *APP, env=env | kill)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        charged = "charge_card" in partner.effects()
        assert charged == (boundary in ("after", "checkpointed"))

        if answer == "reject":
            done = cli("reject", saga_id, "--db", db, "--why", "over budget", *APP, "--json",
                       env=env)  # fmt: skip
            if boundary == "checkpointed":  # nothing waits any more: the operator rolls back
                assert done.returncode == 2, done.stderr
                done = cli("rollback", saga_id, "--db", db, *APP, "--json", env=env)
            view: dict[str, Any] = json.loads(done.stdout)
            # send_wire is irreversible and ran (approved with the charge): the rollback
            # escalates it to an operator and never pretends it rolled back.
            assert "send_wire" in partner.effects()
            assert view["status"] == "compensation_failed", done.stderr
            assert done.returncode == 4, done.stderr
            effect = partner.effects().get("charge_card")
            # Never made, or made and refunded exactly once.
            assert effect is None or (effect["state"], partner.undos("charge_card")) == (
                "undone",
                1,
            ), effect
            assert partner.effects()["hold_room"]["state"] == "undone"
        else:
            verb = "recover" if boundary == "checkpointed" else "approve"
            args = ["--db", db, *APP] if verb == "recover" else [saga_id, "--db", db, *APP]
            done = cli(verb, *args, env=env)
            assert done.returncode == 0, done.stderr
            rows = [r for r in partner.rows() if r["tool"] == "charge_card"]
            assert [r["state"] for r in rows] == ["done"]  # made once, kept
            assert partner.undos("charge_card") == 0


WIRE_CASES = {
    "unapproved": "rolled_back",
    "marked": "compensation_failed",
    "sent": "compensation_failed",
    "answered": "compensation_failed",
}
"""Where ``send_wire`` stands when the approving process dies (``unapproved``: only
``charge_card`` was approved), and how the operator's rejection then ends the saga."""


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("wire", list(WIRE_CASES))
def test_a_rejection_after_a_kill_escalates_the_wire_exactly_when_its_approval_may_have_run_it(
    wire: str, backend: str, tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    """Killed after the charge, wherever the parallel ``send_wire`` stands; then rejected.

    An approval of ``send_wire`` that may have reached the tool (it is marked before the
    tool runs) is a fact the rejection cannot undo: the saga ends ``compensation_failed``
    (exit 4) for an operator, whether or not the wire went out (the saga cannot tell). One
    never given ends ``rolled_back`` (exit 3). The rejection itself never sends the wire.
    """
    env = os.environ | {
        "PYTHONPATH": str(REPO),
        "GATE_DATA": str(tmp_path),
        "OPENAI_BASE_URL": server.base_url,
    }
    partner = Partner(tmp_path)
    with saga_database(backend, tmp_path) as db:
        with open_checkpointer(db) as checkpointer:
            app = build_saga_graph(definition(tmp_path, server.base_url)).compile(
                checkpointer=checkpointer
            )
            first = run_saga(app, {"traveller": "ada"}, saga_id=new_saga_id("wire"))
        saga_id = first["saga_id"]
        kill = {"GATE_KILL_AT": "charge_card", "GATE_KILL_WHEN": "after", "GATE_DB": db}
        if wire == "unapproved":
            (charge,) = [a["call"] for a in first["approvals"] if a["tool"] == "charge_card"]
            killed = cli("approve", saga_id, "--call", charge, "--db", db, *APP, env=env | kill)
        else:
            killed = cli("approve", saga_id, "--db", db, *APP, env=env | kill | {"GATE_WIRE": wire})
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        sent = "send_wire" in partner.effects()
        assert sent == (wire in ("sent", "answered"))

        done = cli("reject", saga_id, "--db", db, "--why", "over budget", *APP, "--json", env=env)
        view: dict[str, Any] = json.loads(done.stdout)
    assert view["status"] == WIRE_CASES[wire], done.stderr
    assert done.returncode == (3 if WIRE_CASES[wire] == "rolled_back" else 4)
    assert ("send_wire" in partner.effects()) == sent  # the rejection never sends the wire
    assert partner.effects()["charge_card"]["state"] == "undone"
    assert partner.undos("charge_card") == 1
    assert partner.effects()["hold_room"]["state"] == "undone"
    escalated = [
        e for e in view["events"] if e["action"] == "tool_undo" and e["outcome"] == "irreversible"
    ]
    assert [e["tool"] for e in escalated] == ([] if wire == "unapproved" else ["send_wire"])
