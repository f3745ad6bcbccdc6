"""The ``run_saga`` task's result says how the saga ended: Flower (and any task-event reader)
sees ``{"saga_id": ..., "status": "rolled_back", "reason": ..., "compensated": [...]}`` in the
``task-succeeded`` event, not only SUCCESS. A rolled-back saga is still a task that succeeded
(it ran to its end): a FAILURE would have Celery treat a decided saga as an error to retry or
alert on.
"""

from __future__ import annotations

import ast
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from sagagraph.cli.entry import main as sagagraph
from sagagraph.workers.celery_app import make_celery_app
from tests.support.queue_support import WorkerProcess, wait_for, worker_env, write_papers

pytestmark = [pytest.mark.postgres, pytest.mark.rabbitmq, pytest.mark.slow]

INCOMPLETE = Path(__file__).resolve().parents[2] / "examples" / "papers" / "incomplete_paper.md"


class TaskEvents:
    """A real Celery event receiver on the broker, collecting ``task-succeeded`` and
    ``task-failed`` events of the given task ids (other workers may share the broker)."""

    def __init__(self, queue: str, db: str, ids: set[str]) -> None:
        self.ids = ids
        self.got: dict[str, dict[str, Any]] = {}
        self.celery = make_celery_app(queue, db)
        self.ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._receiver: Any = None

    def __enter__(self) -> TaskEvents:
        self._thread.start()
        assert self.ready.wait(30), "the event receiver never connected"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._receiver is not None:
            self._receiver.should_stop = True
        self._thread.join(timeout=15)
        self.celery.close()

    def _take(self, event: dict[str, Any]) -> None:
        if event.get("uuid") in self.ids:
            self.got[event["uuid"]] = event

    def _run(self) -> None:
        with self.celery.connection_for_read() as connection:
            self._receiver = self.celery.events.Receiver(
                connection,
                handlers={"task-succeeded": self._take, "task-failed": self._take},
            )
            # Ready once its queue is bound to the events exchange and consumed.
            self._receiver.on_consume_ready = lambda *args, **kwargs: self.ready.set()
            self._receiver.capture(limit=None, timeout=None, wakeup=False)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    capsys.readouterr()
    assert sagagraph(list(args)) == 0
    return json.loads(capsys.readouterr().out)


def test_the_task_result_says_how_the_saga_ended(
    tmp_path: Path, env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    (complete, failing) = write_papers(tmp_path / "papers", 2)
    ids = {}
    with TaskEvents(env["queue"], env["db"], set()) as events:
        for name, args in (
            ("completed", [str(complete)]),
            ("halted", [str(INCOMPLETE)]),
            ("failed", [str(failing), "--fail-at", "summarizer"]),
        ):
            (row,) = cli(capsys, "submit", *args, *env["flags"], "--json")
            ids[name] = row["saga_id"]
        events.ids.update(ids.values())
        flags = ["--db", env["db"], "--queue", env["queue"], "--concurrency", "2"]
        pool = WorkerProcess(flags, cwd=tmp_path, env=worker_env())
        try:
            wait_for(lambda: len(events.got) == 3, timeout=180, what="three task events")
        finally:
            assert pool.terminate() == 0, "\n".join(pool.lines)
    results = {}
    for name, saga_id in ids.items():
        event = events.got[saga_id]
        assert event["type"] == "task-succeeded", event  # a decided saga is no task failure
        results[name] = ast.literal_eval(event["result"])  # Celery sends the result's repr
    assert {name: (r["saga_id"], r["status"]) for name, r in results.items()} == {
        "completed": (ids["completed"], "completed"),
        "halted": (ids["halted"], "rolled_back"),
        "failed": (ids["failed"], "rolled_back"),
    }
    assert results["completed"]["reason"] is None and results["completed"]["compensated"] == []
    assert results["halted"]["reason"] and results["failed"]["reason"]
    assert results["failed"]["compensated"] == ["summarizer", "reviewer", "validator"]
