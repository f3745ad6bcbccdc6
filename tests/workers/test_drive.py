"""One delivery, without Celery: what a worker does with "run or resume saga ID" on a SQLite
checkpointer. A saga that waits for an operator comes back as final (it holds no task); a
saga delivered more often than the limit is dead-lettered without running; a cancel request
compensates before any step runs; a factory the worker was not given is not run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from langgraph.constants import START

from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.graph.definitions import WORKER_KEY, CompiledSagas, Definitions
from sagagraph.graph.runner import initial_state, saga_config, saga_status
from sagagraph.saga.protocol import SagaDefinition
from sagagraph.saga.view import QUEUED
from sagagraph.workers.drive import DEAD_LETTERED, NEEDS_OPERATOR, NOT_MINE, Driver
from sagagraph.workers.ledger import open_ledger
from tests.support.toy_saga import Journal, toy_saga

TOY = "tests.workers.test_drive:toy_factory"


def toy_factory(saga_input: Mapping[str, Any]) -> SagaDefinition:
    """Three toy steps journaled in ``saga_input["journal"]``."""
    return toy_saga(3, Journal(Path(saga_input["journal"])))


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'sagas.sqlite'}"


@pytest.fixture
def driver(db: str) -> Iterator[Driver]:
    lines: list[str] = []
    found = Driver(db, 3, Definitions.load([TOY]), "q", lines.append)
    yield found
    found.close()


def queued(db: str, saga_id: str, saga_input: dict[str, Any]) -> None:
    """Record a saga ``queued`` as ``submit`` does (the broker is not needed here)."""
    saga_input = saga_input | {WORKER_KEY: {"app": TOY, "queue": "q"}}
    with open_checkpointer(db) as checkpointer:
        view = {"saga_id": saga_id, "input": saga_input}
        app = CompiledSagas(checkpointer, Definitions.load([TOY])).app_for(view)
        values = initial_state(saga_id, saga_input) | {"status": QUEUED}
        app.update_state(saga_config(saga_id), values, as_node=START)


def view_of(db: str, saga_id: str, journal: Path) -> dict[str, Any]:
    with open_checkpointer(db) as checkpointer:
        view = {"saga_id": saga_id, "input": {"journal": str(journal), WORKER_KEY: {"app": TOY}}}
        app = CompiledSagas(checkpointer, Definitions.load([TOY])).app_for(view)
        return saga_status(app, saga_id)


def test_a_saga_waiting_for_an_operator_ends_the_delivery(
    db: str, driver: Driver, tmp_path: Path
) -> None:
    journal = tmp_path / "journal.sqlite"
    queued(db, "parked", {"journal": str(journal), "fail": "s3", "broken_undo": ["s2"]})
    assert driver.drive("parked") == NEEDS_OPERATOR
    view = view_of(db, "parked", journal)
    assert view["waiting_for_operator"] and view["status"] == "compensation_failed"
    # Delivered again (a duplicate task): nothing runs, it is still the operator's.
    calls = Journal(journal).calls("parked", "compensate")
    assert driver.drive("parked") == NEEDS_OPERATOR
    assert Journal(journal).calls("parked", "compensate") == calls


def test_a_saga_past_its_delivery_limit_is_dead_lettered_without_running(
    db: str, driver: Driver, tmp_path: Path
) -> None:
    journal = tmp_path / "journal.sqlite"
    queued(db, "poison", {"journal": str(journal)})
    with open_ledger(db) as ledger:
        for _ in range(3):  # three workers died with it
            ledger.deliver("poison")
    assert driver.drive("poison") == DEAD_LETTERED
    assert Journal(journal).calls("poison") == []
    view = view_of(db, "poison", journal)
    assert "after 3 deliveries" in view["dead_letter"]["detail"]


def test_a_cancel_request_compensates_before_the_next_step(
    db: str, driver: Driver, tmp_path: Path
) -> None:
    journal = tmp_path / "journal.sqlite"
    queued(db, "called-off", {"journal": str(journal)})
    with open_ledger(db) as ledger:
        ledger.request_cancel("called-off", "alice", "cancelled: wrong trip")
    assert driver.drive("called-off") == "rolled_back"
    assert Journal(journal).calls("called-off") == []
    view = view_of(db, "called-off", journal)
    assert any(
        e.get("by") == "alice" and "cancelled: wrong trip" in e["detail"] for e in view["events"]
    )
    # Its first step never started: nothing is compensated, the cancel is the saga's.
    assert view["compensated"] == [] and view["failure"] is None
    assert {e["step"] for e in view["events"]} == {"saga"}


def test_a_factory_the_worker_was_not_given_is_not_run(db: str, tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite"
    queued(db, "elsewhere", {"journal": str(journal)})
    other = Driver(db, 3, Definitions.load(["sagagraph.agents.paper_app:paper_saga"]), "q", print)
    try:
        assert other.drive("elsewhere") == NOT_MINE
    finally:
        other.close()
    assert Journal(journal).calls("elsewhere") == []


def test_a_saga_no_worker_runs_is_dead_lettered_with_the_reason_and_keeps_its_next_step(
    db: str, driver: Driver, tmp_path: Path
) -> None:
    """Issue 38 item 8: a queued saga whose factory no worker runs is not handed back
    forever: it is dead-lettered, through a stand-in of its graph, with the reason; the worker
    that runs its factory then completes it."""
    journal = tmp_path / "journal.sqlite"
    queued(db, "unowned", {"journal": str(journal)})
    other = Driver(db, 3, Definitions.load(["sagagraph.agents.paper_app:paper_saga"]), "q", print)
    try:
        assert other.drive("unowned") == NOT_MINE
        assert other.dead_letter_unowned("unowned", 12)
    finally:
        other.close()
    view = view_of(db, "unowned", journal)
    assert "no worker of queue q runs" in view["dead_letter"]["detail"]
    assert TOY in view["dead_letter"]["detail"]
    assert view["next"] == ["s1"]
    with open_ledger(db) as ledger:
        ledger.reset("unowned")
    assert driver.drive("unowned") == "completed"
    assert Journal(journal).calls("unowned", "execute") == ["s1", "s2", "s3"]
