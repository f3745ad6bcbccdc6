"""End to end, with a real worker process on real RabbitMQ (issue 38, item 8): a queued saga
whose factory no worker of the queue runs is handed back a bounded number of times, then
dead-lettered with the reason, never run; ``requeue`` to a worker that runs its factory then
completes it. The worker hands back every 0.2 s here (``--hand-back-after``) instead of 5 s,
so the bound is reached in seconds."""

from __future__ import annotations

from pathlib import Path

import pytest

from sagagraph.graph.definitions import Definitions
from sagagraph.workers import SagaRequest, requeue_saga, submit_sagas
from sagagraph.workers.celery_app import NOT_MINE_RETRIES
from tests.support.queue_support import (
    WorkerProcess,
    delete_queue,
    unique_queue,
    wait_for,
    worker_env,
)
from tests.support.toy_saga import Journal
from tests.workers.test_drive import TOY, view_of

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]


def test_a_saga_no_worker_runs_is_dead_lettered_after_the_bounded_hand_backs(
    tmp_path: Path, amqp_url: str
) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    journal = tmp_path / "journal.sqlite"
    queue = unique_queue(amqp_url, max_deliveries=3)
    try:
        submit_sagas(
            [SagaRequest({"journal": str(journal)}, "unowned")], app=TOY, queue=queue, db=db
        )
        # A worker of the queue that runs the paper app only (its default), not the toy saga.
        paper_only = WorkerProcess(
            ["--db", db, "--queue", queue], cwd=tmp_path, env=worker_env(), hand_back_after=0.2
        )
        try:
            wait_for(
                lambda: view_of(db, "unowned", journal).get("dead_letter") is not None,
                timeout=120,
                what="the saga dead-lettered",
                every=0.5,
            )
        finally:
            lines = list(paper_only.lines)
            assert paper_only.terminate() == 0, "\n".join(lines[-30:])
        view = view_of(db, "unowned", journal)
        detail = view["dead_letter"]["detail"]
        assert f"handed back {NOT_MINE_RETRIES} times" in detail, detail
        assert f"runs {TOY}" in detail and f"--app {TOY}" in detail, detail
        refusals = [line for line in lines if "which this worker does not run" in line]
        assert len(refusals) == NOT_MINE_RETRIES + 1, "\n".join(lines[-30:])  # then no more
        assert Journal(journal).calls("unowned") == []  # never run
        assert view["next"] == ["s1"]  # its next step kept for a requeue

        # The fix an operator applies: a worker that runs the factory, then requeue.
        toy = WorkerProcess(
            ["--db", db, "--queue", queue, "--app", TOY], cwd=tmp_path, env=worker_env()
        )
        try:
            requeue_saga("unowned", queue=queue, db=db, definitions=Definitions.load([TOY]))
            wait_for(
                lambda: view_of(db, "unowned", journal)["status"] == "completed",
                timeout=120,
                what="the requeued saga completed",
                every=0.5,
            )
        finally:
            lines = list(toy.lines)
            assert toy.terminate() == 0, "\n".join(lines[-30:])
        assert Journal(journal).calls("unowned", "execute") == ["s1", "s2", "s3"]
    finally:
        delete_queue(queue)
