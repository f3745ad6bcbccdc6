"""Celery beat as docs/workers.md starts it (``celery -A sagagraph.workers.main beat
--schedule FILE``) sends ``sagagraph.recover``, and a worker of the queue takes over an
orphaned saga with it.

The beat's schedule says ``sagagraph.recover`` every minute; its schedule file remembers when
each entry last ran. The test's file says the last run was two minutes ago (a beat that was
down for a while), so the restarted beat sends the task at once instead of after a minute.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sagagraph.graph.runner import saga_status
from sagagraph.workers.celery_app import RECOVER, make_celery_app
from tests.support.child_processes import default_signals, reaped
from tests.support.paper_apps import paper_app
from tests.support.queue_support import (
    DIE_EXIT_CODE,
    PAPER_FILES,
    WorkerProcess,
    files_of,
    wait_for,
    worker_env,
    write_papers,
)

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

CELERY = Path(sys.executable).parent / "celery"
ENTRY = "sagagraph-recover"


def due_schedule(path: Path, queue: str, db: str) -> None:
    """A beat schedule file whose ``sagagraph.recover`` entry last ran two minutes ago."""
    from celery.beat import PersistentScheduler

    celery = make_celery_app(queue, db)
    scheduler = PersistentScheduler(app=celery, schedule_filename=str(path))
    try:
        entry = scheduler.schedule[ENTRY]
        assert entry.task == RECOVER
        entry.last_run_at = datetime.now(UTC) - timedelta(minutes=2)
        scheduler.sync()
    finally:
        scheduler.close()
        celery.close()


def test_celery_beat_sends_recover_and_a_worker_takes_over_the_orphan(
    tmp_path: Path, queue: str
) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    outputs = tmp_path / "outputs"
    (paper,) = write_papers(tmp_path / "papers", 1)
    saga_id = "beaten"
    env = worker_env()
    # A run that dies in its reviewer: the saga is left running, orphaned.
    run = WorkerProcess(
        [
            str(paper),
            "--saga-id",
            saga_id,
            "--db",
            db,
            "--outputs",
            str(outputs),
            "--llm",
            "offline",
        ],
        cwd=tmp_path,
        env=env,
        verb="run",
        die_once=f"{saga_id}:reviewer:write:{tmp_path / 'died'}",
    )
    assert run.reap(timeout=120) == DIE_EXIT_CODE, "\n".join(run.lines)
    with paper_app(db, llm="offline") as readers:
        assert saga_status(readers, saga_id)["status"] == "running"

    schedule = tmp_path / "sagagraph-beat"
    due_schedule(schedule, queue, db)
    beat_env = env | {"SAGAGRAPH_QUEUE": queue, "SAGAGRAPH_DB": db}
    beat_log = tmp_path / "beat.log"
    command = [str(CELERY), "-A", "sagagraph.workers.main", "beat", "--schedule", str(schedule)]
    worker = WorkerProcess(["--db", db, "--queue", queue], cwd=tmp_path, env=env)
    with (
        beat_log.open("w") as log,
        reaped(
            subprocess.Popen(
                [*command, "--loglevel", "INFO"],
                cwd=tmp_path,
                env=beat_env,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=default_signals,
            )
        ) as beat,
    ):
        try:
            wait_for(
                lambda: worker.count(f"recover: saga {saga_id} completed"),
                timeout=120,
                what="the worker to take over the orphan",
            )
        finally:
            beat.send_signal(signal.SIGTERM)
            beat.wait(timeout=30)
            assert worker.terminate() == 0, "\n".join(worker.lines)
    logged = beat_log.read_text()
    assert f"Sending due task {ENTRY} ({RECOVER})" in logged, logged
    assert worker.count(f"recover: taking over saga {saga_id} (running)") == 1
    with paper_app(db, llm="offline") as readers:
        assert saga_status(readers, saga_id)["status"] == "completed"
    assert sorted(files_of(outputs, saga_id)) == sorted(PAPER_FILES.values())
