"""The Celery app of sagagraph's workers: RabbitMQ delivers "run or resume saga ID", the
shared checkpointer keeps the saga.

:func:`make_celery_app` configures Celery for sagas that take minutes and must not be lost
(docs/workers.md): a task is acknowledged only when its saga is decided (``acks_late``,
``reject_on_worker_lost``), so a dead worker's saga is delivered to another, which resumes it
from its last checkpoint; prefetch one a slot, on a priority queue for ``submit --priority``;
``time_limit`` kills a hung saga's process and hands the saga back, with no soft limit (its
exception would land inside a step and be taken for the step's failure); task events for
Flower, each ``run_saga`` result saying how its saga ended. Its beat schedule runs
``sagagraph.recover`` every minute and, with a retention period (``SAGAGRAPH_RETENTION=30d``
or ``retention=``), ``sagagraph.prune`` every hour (:mod:`sagagraph.graph.retention`).

Use it from the CLI (``sagagraph worker``) or as ``celery -A sagagraph.workers.main worker``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from sagagraph.checkpoints.urls import default_db_url
from sagagraph.errors import SagaBusyError
from sagagraph.graph.definitions import Definitions, check_reference
from sagagraph.graph.retention import configured_period
from sagagraph.workers.address import QueueAddress, queue_address

try:
    from celery import Celery
    from kombu import Exchange, Queue
except ImportError:  # pragma: no cover - depends on installed extras
    from sagagraph.errors import ConfigurationError

    raise ConfigurationError(
        "workers need the extra: make extra EXTRA=workers, in the checkout"
    ) from None

RUN_SAGA = "sagagraph.run_saga"
"""The task "run or resume saga ID"; its task id is the saga id."""
RECOVER = "sagagraph.recover"
"""The periodic task that takes over sagas whose process died."""
MAX_PRIORITY = 9
"""Priorities run from 0 (the default) to 9 (first)."""
BUSY_RETRY = 2.0
"""Seconds before a saga held by another process is tried again."""
ERROR_RETRY = 5.0
"""Seconds before a saga that failed outside its steps (the database is down) is tried again."""
NOT_MINE_RETRIES = 12
"""Hand-backs of a saga whose factory this worker does not run (one each ``ERROR_RETRY``
seconds) before it is dead-lettered: no worker of the queue runs it."""
RECOVER_EVERY = 60.0
PRUNE = "sagagraph.prune"
"""The periodic task of retention (scheduled only when a retention period is set)."""
PRUNE_EVERY = 3600.0


def work_queue(address: QueueAddress) -> Queue:
    """The durable priority queue of ``address`` (every submitter and worker declares it so)."""
    return Queue(
        address.name,
        Exchange(address.name, type="direct", durable=True),
        routing_key=address.name,
        durable=True,
        queue_arguments={"x-max-priority": MAX_PRIORITY},
    )


def make_celery_app(
    queue: str | None = None,
    db: str | None = None,
    *,
    apps: Iterable[str] = (),
    time_limit: float | None = None,
    rate_limit: str | None = None,
    say: Callable[[str], None] | None = None,
    retention: timedelta | None = None,
) -> Celery:
    """A Celery app for the work queue at ``queue`` (default ``SAGAGRAPH_QUEUE``) and the
    checkpointer ``db`` (default ``SAGAGRAPH_DB``); its workers run the sagas of ``apps``
    (references ``module:factory``; none: it only submits and controls). ``retention``
    (default ``SAGAGRAPH_RETENTION``; None: no pruning) schedules :data:`PRUNE`."""
    retention = retention or configured_period()
    schedule: dict[str, Any] = {"sagagraph-recover": {"task": RECOVER, "schedule": RECOVER_EVERY}}
    if retention is not None:
        schedule["sagagraph-prune"] = {"task": PRUNE, "schedule": PRUNE_EVERY}
    address = queue_address(queue)
    db = db or default_db_url()
    accepted = [check_reference(a) for a in apps]
    app = Celery("sagagraph", broker=address.connect_url, set_as_current=False)
    app.conf.update(
        task_queues=[work_queue(address)],
        task_default_queue=address.name,
        task_default_exchange=address.name,
        task_default_routing_key=address.name,
        task_queue_max_priority=MAX_PRIORITY,
        task_default_priority=0,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        # A saga's errors are handled inside the task; a hard time limit gives it back.
        task_acks_on_failure=True,
        task_acks_on_timeout=False,
        task_ignore_result=True,
        task_time_limit=time_limit,
        worker_prefetch_multiplier=1,
        worker_send_task_events=True,
        task_send_sent_event=True,
        worker_redirect_stdouts=False,
        worker_hijack_root_logger=False,
        worker_cancel_long_running_tasks_on_connection_loss=False,
        broker_connection_retry_on_startup=True,
        broker_connection_timeout=10,
        broker_transport_options={"confirm_publish": True},
        task_publish_retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5},
        beat_schedule=schedule,
        timezone="UTC",
    )
    app.conf.sagagraph = {"address": address, "db": db, "accepted": accepted}
    _register_tasks(app, address, db, accepted, rate_limit, say or say_line)
    _register_prune(app, db, retention, say or say_line)
    return app


_stderr_lock = threading.Lock()


def say_line(line: str) -> None:
    """One line on stderr, whole: the pool's threads never interleave two lines."""
    with _stderr_lock:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _register_tasks(
    app: Celery,
    address: QueueAddress,
    db: str,
    accepted: list[str],
    rate_limit: str | None,
    say: Callable[[str], None],
) -> None:
    from sagagraph.workers.drive import DEAD_LETTERED, NOT_MINE, Driver, task_result

    definitions = Definitions.load(accepted) if accepted else Definitions()
    driver = Driver(db, address.max_deliveries, definitions, address.name, say)

    # ``shared=False``: each app keeps its own tasks. Celery otherwise adds every app's tasks
    # to every app finalized later in the process, and a worker app made after a submitter's
    # (an embedded worker, a console that submits) would run the submitter's ``run_saga``,
    # with its database and accepted factories.
    @app.task(  # type: ignore[untyped-decorator]
        name=RUN_SAGA,
        shared=False,
        bind=True,
        acks_late=True,
        reject_on_worker_lost=True,
        max_retries=None,
        rate_limit=rate_limit,
    )
    def run_saga(task: Any, saga_id: str) -> dict[str, Any]:
        """Drive the saga; how it ended (:func:`sagagraph.workers.drive.task_result`)."""
        from sagagraph.graph.queue_tracing import worker_span

        try:
            # In the submitter's trace when the message carries one (Celery puts a
            # message's own headers on the request).
            with worker_span(saga_id, task.request):
                result = driver.drive_to_end(saga_id)
        except SagaBusyError:
            raise task.retry(countdown=BUSY_RETRY) from None
        except Exception as error:
            # Outside the saga's steps (their failures compensate): the database, the
            # broker, a factory that cannot be imported. The saga stays where it was.
            say(f"worker: saga {saga_id} not driven: {error}; trying again")
            raise task.retry(countdown=ERROR_RETRY) from None
        if result["status"] == NOT_MINE:
            # Handed back for a worker that runs its factory; when none took it in
            # NOT_MINE_RETRIES hand-backs, it is dead-lettered with that reason.
            retries = int(task.request.retries or 0)
            if retries >= NOT_MINE_RETRIES and driver.dead_letter_unowned(saga_id, retries):
                return task_result(saga_id, DEAD_LETTERED, None)
            raise task.retry(countdown=ERROR_RETRY)
        return result

    @app.task(name=RECOVER, ignore_result=True, shared=False)  # type: ignore[untyped-decorator]
    def recover() -> int:
        from sagagraph.workers.watch import take_over_orphans

        return len(take_over_orphans(db, definitions, say=say))


def _register_prune(
    app: Celery, db: str, retention: timedelta | None, say: Callable[[str], None]
) -> None:
    @app.task(name=PRUNE, ignore_result=True, shared=False)  # type: ignore[untyped-decorator]
    def prune() -> int:
        from sagagraph.checkpoints.factory import open_checkpointer
        from sagagraph.graph.retention import prune_sagas

        cutoff = datetime.now(UTC) - retention if retention is not None else None
        with open_checkpointer(db) as saver:
            done = prune_sagas(saver, finished_before=cutoff)
        if done.deleted or done.compacted:
            say(f"worker: pruned {len(done.deleted)} old saga(s), compacted {len(done.compacted)}")
        return len(done.deleted) + len(done.compacted)
