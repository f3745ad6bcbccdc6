"""The approving process SIGKILLed at a random moment (issue 38's adversarial pass), not only
at the boundaries tests/tools/test_approval_kills.py picks, then the operator goes on from a
new process: approve again, reject, or ``recover``, until the saga is final.

Seeded, so a failing seed runs again as it did. Whatever the moment, the saga ends whole:
completed with the order kept and the charge made once, or rolled back with the order gone
and the charge never made or made and refunded exactly once (an ``irreversible`` wire that
ran, or whose approval may have run it, leaves it ``compensation_failed``, as a rollback never
pretends to undo it: the rollback waits at that step for an operator, the order not yet
undone); no committed step runs twice.
"""

from __future__ import annotations

import os
import random
import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sagagraph import build_saga_graph, new_saga_id, open_checkpointer, run_saga
from sagagraph.graph.runner import saga_status
from tests.support.gated_saga import Partner, definition, responder
from tests.support.openai_server import ScriptedOpenAIServer
from tests.support.services import saga_database
from tests.tools.test_approval_kills import APP, REPO, cli

pytestmark = pytest.mark.kill_fleet
SEEDS = [11, 23, 37, 41, 53, 67, 79, 97]
PACE = 0.1
"""Each partner write or undo takes about 3 x PACE seconds (``GATE_PACE``)."""
WINDOW = (0.0, 0.6)
"""Seconds after the agent's step starts in the approving process in which it is killed:
about its approve path here (two paced gated calls, the model's last turn, the step's
checkpoint, the last step), so kills land before, inside and after the calls."""
FINAL = ("completed", "rolled_back", "compensation_failed")


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(responder) as started:
        yield started


def view_of(db: str, folder: Path, base_url: str, saga_id: str) -> dict[str, Any]:
    with open_checkpointer(db) as checkpointer:
        app = build_saga_graph(definition(folder, base_url)).compile(checkpointer=checkpointer)
        return saga_status(app, saga_id)


@pytest.mark.parametrize(
    ("seed", "backend"), [(s, "postgres" if i % 2 else "sqlite") for i, s in enumerate(SEEDS)]
)
def test_an_approval_killed_at_a_random_moment_ends_whole(
    seed: int, backend: str, tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    rng = random.Random(seed)
    env = os.environ | {
        "PYTHONPATH": str(REPO),
        "GATE_DATA": str(tmp_path),
        "OPENAI_BASE_URL": server.base_url,
        "GATE_PACE": str(PACE),
    }
    partner = Partner(tmp_path)
    with saga_database(backend, tmp_path) as db:
        with open_checkpointer(db) as checkpointer:
            app = build_saga_graph(definition(tmp_path, server.base_url)).compile(
                checkpointer=checkpointer
            )
            saga_id = run_saga(app, {"traveller": "ada"}, saga_id=new_saga_id("rnd"))["saga_id"]
        delay = rng.uniform(*WINDOW)
        killed = cli(
            "approve", saga_id, "--db", db, *APP, env=env | {"GATE_KILL_AFTER": f"{delay:.3f}"}
        )
        assert killed.returncode in (0, -signal.SIGKILL), killed.stderr
        after_kill = sorted(f"{t}:{e['state']}" for t, e in partner.effects().items())
        steps: list[str] = []
        errors: list[str] = []  # what a command that failed unexpectedly (exit 1) said
        for _ in range(4):
            view = view_of(db, tmp_path, server.base_url, saga_id)
            if view["status"] in FINAL:
                break
            if view["approvals"]:
                answer = rng.choice(["approve", "reject"])
                args = ["--why", "over budget"] if answer == "reject" else []
                done = cli(answer, saga_id, "--db", db, *args, *APP, env=env)
            else:
                answer = "recover"
                done = cli("recover", "--db", db, *APP, env=env)
            steps.append(f"{answer}:{done.returncode}")
            if done.returncode == 1:
                errors.append(done.stderr[-400:])
            assert done.returncode in (0, 1, 2, 3, 4), done.stderr
        print(
            f"seed {seed}: killed after {delay:.3f}s ({killed.returncode}), {after_kill}, {steps}"
        )
    assert view["status"] in FINAL, (seed, view["status"], steps, errors)
    effects = partner.effects()
    rows = Counter(r["tool"] for r in partner.rows())
    assert all(n == 1 for n in rows.values()), rows  # one effect per call key: no call twice
    committed = Counter(
        e["step"] for e in view["events"] if (e["action"], e["outcome"]) == ("execute", "ok")
    )
    assert all(n == 1 for n in committed.values()), committed  # no committed step re-ran
    order = (tmp_path / f"{saga_id}.order").exists()
    if view["status"] == "completed":
        assert order and effects["charge_card"]["state"] == "done", effects
        assert partner.undos("charge_card") == partner.undos("hold_room") == 0
    else:
        # The irreversible wire goes to an operator when it ran, or when its approval was
        # marked and so it may have run (the saga cannot tell); a rollback never hides it.
        # The escalation pauses the rollback at ``pay`` until the operator answers, so the
        # order, an earlier step, is still there; a saga rolled back has none.
        assert order == (view["status"] == "compensation_failed"), view["status"]
        escalated = {
            e.get("tool")
            for e in view["events"]
            if (e["action"], e["outcome"]) == ("tool_undo", "irreversible")
        }
        assert escalated <= {"send_wire"}, escalated
        assert "send_wire" not in effects or "send_wire" in escalated, (view, effects)
        expected = "compensation_failed" if escalated else "rolled_back"
        assert view["status"] == expected, (view["status"], escalated, effects)
        for tool in ("charge_card", "hold_room"):  # never made, or refunded exactly once
            made = effects.get(tool)
            assert made is None or (made["state"], partner.undos(tool)) == ("undone", 1), (
                tool,
                made,
                partner.undos(tool),
            )
