"""``sagagraph rollback ID`` rolls back one saga; ``status`` names orphaned and dead-lettered
sagas. On SQLite and PostgreSQL.

Two paper sagas are killed (SIGKILL) after their reviewer wrote its review: both are
``running (orphaned)``. Rolling back one compensates its reviewer and validator, records who
asked and why, and leaves the other saga and its files alone.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from sagagraph.cli import main
from tests.cli.test_recovery_cli import PAPER, faulty_run, files_under

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("offline_cli")]


def killed_after_review(tmp_path: Path, db: str, outputs: Path, saga_id: str) -> None:
    args = [str(PAPER), "--db", db, "--outputs", str(outputs), "--llm", "offline"]
    died = faulty_run(
        tmp_path, ["--crash", "reviewer:execute:after:sigkill"], *args, "--saga-id", saga_id
    )
    assert died.returncode == -signal.SIGKILL, died.stderr


def status(capsys: pytest.CaptureFixture[str], db: str, saga_id: str) -> tuple[int, dict[str, Any]]:
    code = main(["status", saga_id, "--db", db, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_rollback_one_orphaned_saga_leaves_the_other_alone(
    durable_checkpointer_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, outputs = durable_checkpointer_url, tmp_path / "outputs"
    killed_after_review(tmp_path, db, outputs, "roll-me")
    killed_after_review(tmp_path, db, outputs, "keep-me")

    code, view = status(capsys, db, "roll-me")
    assert code == 75
    assert (view["status"], view["orphaned"], view["dead_lettered"]) == ("running", True, False)
    assert main(["status", "roll-me", "--db", db]) == 75
    assert capsys.readouterr().out.splitlines()[0] == "saga roll-me: running (orphaned)"

    code = main(
        ["rollback", "roll-me", "--db", db, "--reason", "wrong paper", "--by", "alice", "--json"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    rolled = json.loads(out)
    assert rolled["status"] == "rolled_back"
    # The reviewer was in flight when the process died: compensated first, then the validator.
    assert rolled["compensated"] == ["reviewer", "validator"]
    assert "wrong paper" in rolled["reason"]
    (asked,) = [e for e in rolled["events"] if e["outcome"] == "rollback"]
    assert (asked["by"], asked["detail"]) == ("alice", "alice: wrong paper")

    assert files_under(outputs) == ["keep-me/review.txt", "keep-me/validation.txt"]
    code, kept = status(capsys, db, "keep-me")
    assert (code, kept["status"], kept["orphaned"]) == (75, "running", True)
    code, view = status(capsys, db, "roll-me")
    assert (code, view["status"], view["orphaned"]) == (3, "rolled_back", False)

    # Once rolled back, a second rollback is refused in one line; so is an unknown id.
    assert main(["rollback", "roll-me", "--db", db]) == 2
    assert "already rolled_back; nothing to roll back" in capsys.readouterr().err
    assert main(["rollback", "nobody", "--db", db]) == 2
    assert "saga 'nobody': not found" in capsys.readouterr().err


def test_status_and_list_name_a_dead_lettered_saga(
    durable_checkpointer_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from langgraph.graph import START

    from sagagraph.agents.paper_app import PAPER_APP
    from sagagraph.agents.paper_saga import paper_saga_definition
    from sagagraph.checkpoints.factory import open_checkpointer
    from sagagraph.graph.builder import build_saga_graph
    from sagagraph.graph.definitions import WORKER_KEY
    from sagagraph.graph.runner import initial_state, saga_config
    from sagagraph.saga.view import QUEUED, make_event
    from sagagraph.workers.dead_letters import DEAD_LETTER, WORKER_STEP

    def queued_state(saga_id: str) -> dict[str, object]:
        """What ``submit`` records for a saga it puts on the queue."""
        saga_input = {"paper": str(PAPER), WORKER_KEY: {"app": PAPER_APP, "queue": "papers"}}
        return initial_state(saga_id, saga_input) | {"status": QUEUED}

    db = durable_checkpointer_url
    graph = build_saga_graph(paper_saga_definition(outputs_dir=tmp_path / "outputs"))
    with open_checkpointer(db) as checkpointer:
        app = graph.compile(checkpointer=checkpointer)
        # What a queue worker leaves when it gives up on a saga's message.
        values = queued_state("dead-1")
        app.update_state(saga_config("dead-1"), values, as_node=START)
        event = make_event(WORKER_STEP, "escalate", DEAD_LETTER, detail="redelivered 5 times")
        app.update_state(saga_config("dead-1"), {"events": [event]})
        # And one a worker has yet to take.
        values = queued_state("waits-1")
        app.update_state(saga_config("waits-1"), values, as_node=START)

    code, view = status(capsys, db, "dead-1")
    assert code == 4
    assert (view["status"], view["dead_lettered"], view["orphaned"]) == ("queued", True, False)
    assert main(["status", "dead-1", "--db", db]) == 4
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "saga dead-1: queued (dead-lettered)"
    assert "  dead-lettered by the work queue: redelivered 5 times" in lines

    assert main(["list", "--status", "dead_letter", "--db", db, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["saga_id"], r["dead_lettered"]) for r in rows] == [("dead-1", True)]
    assert main(["list", "--status", "dead_letter", "--db", db]) == 0
    assert "queued (dead-lettered)" in capsys.readouterr().out

    # A saga still on the queue is not rolled back behind the queue's back; a dead-lettered
    # one is (nothing of it ran: its first step is compensated for whatever it may have left).
    assert main(["rollback", "waits-1", "--db", db]) == 2
    assert "queued on the work queue and not started" in capsys.readouterr().err
    assert main(["rollback", "dead-1", "--db", db, "--by", "ops", "--json"]) == 0
    rolled = json.loads(capsys.readouterr().out)
    assert rolled["status"] == "rolled_back"
    assert rolled["completed"] == [] and rolled["outputs"] == {}
    code, view = status(capsys, db, "dead-1")
    assert (code, view["dead_lettered"]) == (3, False)


def queued_state(saga_id: str, saga_input: dict[str, Any], queue: str) -> dict[str, Any]:
    """The values ``submit`` writes for a queued saga (its input names the queue)."""
    from sagagraph.agents.paper_app import PAPER_APP
    from sagagraph.graph.definitions import WORKER_KEY
    from sagagraph.graph.runner import initial_state

    recorded = saga_input | {WORKER_KEY: {"app": PAPER_APP, "queue": queue}}
    return initial_state(saga_id, recorded) | {"status": "queued"}
