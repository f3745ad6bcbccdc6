"""Cancel and requeue from the console: a saga on the work queue (real RabbitMQ, a SQLite
checkpointer, no worker running) is cancelled or requeued through the queue's own operations,
and its events say who acted and why."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sagagraph.agents.paper_app import PAPER_APP, PaperSettings
from sagagraph.console.actions import ACTIONS, ActionRequest, cancellable, queue_of, requeueable
from sagagraph.console.source import SagaSource
from sagagraph.graph.definitions import WORKER_KEY, Definitions
from sagagraph.workers.address import queue_address
from sagagraph.workers.broker import queue_counts
from sagagraph.workers.control import SagaRequest, submit_sagas
from sagagraph.workers.drive import DEAD_LETTERED, Driver
from sagagraph.workers.ledger import open_ledger
from tests.console.conftest import console, post, view
from tests.support.console_sagas import PAPER, Stores
from tests.support.queue_support import delete_queue, unique_queue


@pytest.fixture
def queue(amqp_url: str) -> Iterator[str]:
    """A queue of this test's own, deleted after it."""
    url = unique_queue(amqp_url)
    yield url
    delete_queue(url)


@pytest.fixture
def stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Stores:
    monkeypatch.setenv("SAGAGRAPH_LLM", "offline")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return Stores(
        f"sqlite:///{tmp_path / 'sagas.sqlite'}",
        f"sqlite:///{tmp_path / 'events.sqlite'}",
        tmp_path / "outputs",
    )


def submit(stores: Stores, queue: str, saga_id: str) -> None:
    """The paper saga submitted to ``queue`` as ``sagagraph submit`` does; no worker runs it."""
    settings = PaperSettings.resolve(outputs=str(stores.outputs), llm="offline")
    saga_input = {"paper": str(PAPER), "settings": settings.recorded()}
    request = SagaRequest(saga_input, saga_id)
    (done,) = submit_sagas([request], app=PAPER_APP, queue=queue, db=stores.db)
    assert done.created and done.status == "queued"


def dead_letter(stores: Stores, queue: str, saga_id: str) -> None:
    """Three workers died with the saga; the fourth delivery dead-letters it, as a worker does."""
    with open_ledger(stores.db) as ledger:
        for _ in range(3):
            ledger.deliver(saga_id)
    driver = Driver(stores.db, 3, Definitions.load([PAPER_APP]), queue_address(queue).name, print)
    try:
        assert driver.drive(saga_id) == DEAD_LETTERED
    finally:
        driver.close()


def offered(page: str) -> list[str]:
    return re.findall(r'id="action-([a-z-]+)"', page)


def test_a_queued_saga_is_cancelled_and_rolled_back_with_who_and_why(
    stores: Stores, queue: str
) -> None:
    submit(stores, queue, "queued-1")
    client = console(stores, queue=queue)
    assert "cancel" in offered(client.get("/sagas/queued-1").text)
    assert "requeue" not in offered(client.get("/sagas/queued-1").text)
    reply = post(client, "queued-1", "cancel", who="ana", why="wrong paper, ticket 9")
    assert reply.status_code == 303, reply.text
    assert reply.headers["location"] == "/sagas/queued-1?done=cancel"
    after = view(stores, "queued-1")
    assert after["status"] == "rolled_back"
    assert after["completed"] == []
    details = [e["detail"] for e in after["events"]]
    assert "ana: cancelled: wrong paper, ticket 9 (console)" in details
    page = client.get("/sagas/queued-1?done=cancel").text
    assert "Cancel this saga: done" in page and "cancel" not in offered(page)
    # Finished now: a second cancel is refused and changes nothing.
    again = post(client, "queued-1", "cancel", who="bo", why="again")
    assert again.status_code == 409 and "not allowed for this saga now" in again.text
    assert [e["detail"] for e in view(stores, "queued-1")["events"]] == details


def test_a_dead_lettered_saga_is_requeued_and_queued_again(stores: Stores, queue: str) -> None:
    submit(stores, queue, "poison-1")
    dead_letter(stores, queue, "poison-1")
    before = view(stores, "poison-1")
    assert before["dead_letter"] and before["status"] == "queued"
    client = console(stores, queue=queue)
    assert "requeue" in offered(client.get("/sagas/poison-1").text)
    reply = post(client, "poison-1", "requeue", who="cy", why="store fixed")
    assert reply.status_code == 303, reply.text
    after = view(stores, "poison-1")
    assert after["status"] == "queued" and after["dead_letter"] is None
    assert after["events"][-1]["detail"] == "requeued: store fixed (by cy, console)"
    with open_ledger(stores.db) as ledger:
        assert ledger.deliveries("poison-1") == 0
    # The submitted message and the requeued one wait on the saga's queue.
    assert queue_counts(queue_address(queue)).ready == 2
    assert "requeue" not in offered(client.get("/sagas/poison-1").text)


def test_requeue_goes_to_the_queue_the_saga_was_submitted_to(
    stores: Stores, queue: str, amqp_url: str
) -> None:
    other = f"{amqp_url}?queue=sagagraph-test-other-{uuid.uuid4().hex[:10]}"
    try:
        submit(stores, queue, "poison-2")
        dead_letter(stores, queue, "poison-2")
        reply = post(console(stores, queue=other), "poison-2", "requeue", who="cy", why="again")
        assert reply.status_code == 303, reply.text
        assert queue_counts(queue_address(queue)).ready == 2
        assert queue_counts(queue_address(other)).ready == 0
    finally:
        delete_queue(other)


def test_cancel_and_requeue_apply_only_to_sagas_on_the_work_queue() -> None:
    on_queue = {"input": {"paper": "p.pdf", WORKER_KEY: {"app": PAPER_APP, "queue": "q"}}}
    for status in ("queued", "running"):
        assert cancellable(on_queue | {"status": status})
    for status in ("completed", "rolled_back", "compensating", "compensation_failed"):
        assert not cancellable(on_queue | {"status": status})
    assert not cancellable(on_queue | {"status": "running", "waiting_for_operator": True})
    assert not cancellable({"input": {"paper": "p.pdf"}, "status": "running"})
    assert requeueable(on_queue | {"status": "queued", "dead_letter": {"detail": "x"}})
    assert requeueable(on_queue | {"status": "queued", "dead_lettered": True})
    assert not requeueable(on_queue | {"status": "queued", "dead_letter": None})
    assert not requeueable({"input": {}, "status": "queued", "dead_lettered": True})
    assert list(ACTIONS)[-2:] == ["cancel", "requeue"]


def test_the_queue_acted_on_is_the_one_the_saga_was_submitted_to_on_the_consoles_broker() -> None:
    view = {"saga_id": "s", "input": {WORKER_KEY: {"app": PAPER_APP, "queue": "papers"}}}
    source = SagaSource.from_urls("memory://", None, "amqp://u:p@mq:5672/v?max_deliveries=5")
    address = queue_address(queue_of(ActionRequest(source, view, "ana", "why")))
    assert (address.name, address.max_deliveries) == ("papers", 5)
    assert address.connect_url == "amqp://u:p@mq:5672/v"
    same = SagaSource.from_urls("memory://", None, "amqp://u:p@mq/?queue=papers")
    assert queue_of(ActionRequest(same, view, "ana", "why")) == "amqp://u:p@mq/?queue=papers"
    remote = ActionRequest(source, view, "ana", "why", "10.1.2.3")
    assert remote.where == "console, from 10.1.2.3"
