"""The console's saga page shows the side of the pivot a saga is on, and the locks it holds;
past the pivot it offers only what carries the saga forward (retry the step, or take it as
done by hand), never a compensation's retry or a rollback."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from sagagraph import build_saga_graph, open_checkpointer, run_saga
from tests.console.conftest import console, post, view
from tests.support.console_sagas import Stores
from tests.support.pivot_saga import Journal, pivot_app, pivot_saga

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.support.pivot_saga:pivot_app"


def _stores(tmp_path: Path) -> Stores:
    return Stores(
        db=f"sqlite:///{tmp_path / 'sagas.sqlite'}",
        bus=f"sqlite:///{tmp_path / 'events.sqlite'}",
        outputs=tmp_path / "outputs",
    )


def stuck_past_the_pivot(stores: Stores, item: str) -> str:
    """A saga of ``pivot_app`` whose ``ship`` (retriable, past the pivot) gave up while it
    holds ``stock:<item>``; its id (new each call: the app's journal counts calls by key)."""
    saga_id = f"order-{uuid.uuid4().hex[:8]}"
    with open_checkpointer(stores.db) as saver:
        app = build_saga_graph(pivot_app()).compile(checkpointer=saver)
        stuck = run_saga(app, {"item": item, "ship_failures": 5}, saga_id=saga_id)
    assert (stuck["status"], stuck["past_pivot"]) == ("waiting_for_operator", True)
    return saga_id


def test_the_saga_page_shows_the_pivot_and_the_locks(tmp_path: Path) -> None:
    stores = _stores(tmp_path)
    definition = pivot_saga(Journal(tmp_path / "journal.sqlite"))
    with open_checkpointer(stores.db) as saver:
        app = build_saga_graph(definition).compile(checkpointer=saver)
        run_saga(app, {"item": "lamp", "ship_failures": 9}, saga_id="lamp-order")
        run_saga(app, {}, saga_id="undone-order", fail_at="charge")

    client = console(stores)
    page = client.get("/sagas/lamp-order").text
    assert "Pivot: charge · past it: the saga only goes forward" in page
    assert "Holds lock: stock:lamp (step reserve" in page
    assert "Past the pivot, a step gave up:</strong> ship after 4 attempt(s)" in page
    page = client.get("/sagas/undone-order").text
    assert "Pivot: charge · before it: the saga can still roll back" in page
    assert "Holds lock" not in page


def test_past_the_pivot_the_console_offers_only_what_goes_forward(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compensation's retry and skip, and a rollback, are neither offered nor taken; the
    step's retry carries the saga forward and its end releases the lock."""
    monkeypatch.setenv("SAGAGRAPH_APP", APP)
    stores = _stores(tmp_path)
    saga_id = stuck_past_the_pivot(stores, "lamp")
    client = console(stores)
    page = client.get(f"/sagas/{saga_id}").text
    assert ">Retry the step</button>" in page and ">Take the step as done by hand<" in page
    for refused in ("Retry the compensation", "Skip it, taking responsibility", "Roll back"):
        assert refused not in page
    for action in ("retry", "skip", "rollback"):
        reply = post(client, saga_id, action, who="ana", why="wrong button")
        assert reply.status_code == 409, action
        assert f"{action}: not allowed for this saga now" in reply.text

    reply = post(client, saga_id, "retry_step", who="ana", why="carrier is back")
    assert reply.status_code == 303, reply.text
    after = view(stores, saga_id)
    assert (after["status"], after["compensated"], after["locks"]) == ("completed", [], [])
    assert "operator: retry: carrier is back (by ana, console)" in [
        e["detail"] for e in after["events"]
    ]
    page = client.get(f"/sagas/{saga_id}?done=retry_step").text
    assert "Retry the step: done" in page and "Holds lock" not in page


def test_an_operator_takes_a_step_past_the_pivot_as_done_by_hand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGAGRAPH_APP", APP)
    stores = _stores(tmp_path)
    saga_id = stuck_past_the_pivot(stores, "desk")
    reply = post(console(stores), saga_id, "done_by_hand", who="bo", why="sent by courier")
    assert reply.status_code == 303, reply.text
    after = view(stores, saga_id)
    assert after["status"] == "completed" and after["compensated"] == []
    assert after["results"]["ship"] == {"done_by_operator": "sent by courier (by bo, console)"}


def test_a_saga_killed_past_its_pivot_is_offered_no_rollback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real process SIGKILLed in ``ship``: the saga is left running past its pivot; the
    console does not offer to roll it back (the application core would refuse)."""
    monkeypatch.setenv("SAGAGRAPH_APP", APP)
    stores = _stores(tmp_path)
    saga_id = f"killed-{uuid.uuid4().hex[:8]}"
    worker = [sys.executable, "-m", "tests.support.pivot_saga", "run", "--db", stores.db]
    worker += ["--journal", str(tmp_path / "journal.sqlite"), "--saga-id", saga_id]
    done = subprocess.run([*worker, "--kill-at", "ship"], cwd=ROOT, timeout=120, check=False)
    assert done.returncode == -9
    client = console(stores)
    left = view(stores, saga_id)
    assert (left["status"], left["past_pivot"]) == ("running", True)
    page = client.get(f"/sagas/{saga_id}").text
    assert "past it: the saga only goes forward" in page and "Roll back" not in page
    reply = post(client, saga_id, "rollback", who="cy", why="customer changed their mind")
    assert reply.status_code == 409
    assert view(stores, saga_id)["compensated"] == []
