"""Put sagas on the work queue, cancel them, requeue them: what submitters and operators call.

``submit_sagas`` records each saga ``queued`` first, as an input-only checkpoint (the graph's
``__start__`` wrote the input, the first step is next), so ``status`` and ``list`` see it at
once; then one Celery task per saga goes on the queue, confirmed by the broker. The task id
is the saga id, so a saga is submitted once: submitting an id that exists makes no second
saga and no second task (``Submitted.created`` is False). A saga whose task could not be
published is deleted again: nothing is left queued without a task.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from datetime import datetime
from typing import Any, NamedTuple

from langgraph.constants import START

from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.checkpoints.urls import default_db_url
from sagagraph.errors import BusError, InputError, SagaNotFoundError
from sagagraph.graph.definitions import (
    WORKER_KEY,
    CompiledSagas,
    Definitions,
    check_reference,
    recorded_reference,
)
from sagagraph.graph.hooks import check_new_input
from sagagraph.graph.leases import saga_lease
from sagagraph.graph.queue_tracing import submit_span, trace_headers
from sagagraph.graph.recover import rollback_leased
from sagagraph.graph.runner import (
    check_fail_at,
    check_storable_input,
    initial_state,
    saga_config,
    saga_status,
)
from sagagraph.graph.stored import read_view
from sagagraph.saga.names import new_saga_id, validate_saga_id
from sagagraph.saga.view import QUEUED, make_event
from sagagraph.workers.address import QueueAddress, queue_address
from sagagraph.workers.celery_app import MAX_PRIORITY, RUN_SAGA, make_celery_app
from sagagraph.workers.dead_letters import WORKER_STEP, keep_next_step, never_taken
from sagagraph.workers.drive import final_state
from sagagraph.workers.ledger import open_ledger

log = logging.getLogger("sagagraph.workers")


class SagaRequest(NamedTuple):
    """One saga to submit."""

    input: Mapping[str, Any]
    """The saga's input (small: paths and parameters)."""
    saga_id: str | None = None
    """Its id (default: a new one). Submitting an id twice makes one saga."""
    fail_at: str | None = None
    """Step into which a failure is injected, for demos and tests."""


class Submitted(NamedTuple):
    """What submitting one saga did."""

    saga_id: str
    created: bool
    """False: a saga with this id existed already; nothing was submitted for it."""
    status: str
    """The saga's status now (``queued`` for one just submitted)."""


class Schedule(NamedTuple):
    """When and how urgently the submitted sagas run."""

    priority: int = 0
    """0 (default) to 9: among waiting sagas, higher priorities go first."""
    countdown: float | None = None
    """Seconds to wait before the saga may start."""
    eta: datetime | None = None
    """The earliest time the saga may start (instead of ``countdown``)."""


def submit_sagas(
    requests: Sequence[SagaRequest],
    *,
    app: str,
    queue: str | None = None,
    db: str | None = None,
    schedule: Schedule | None = None,
    definitions: Definitions | None = None,
) -> list[Submitted]:
    """Submit sagas of the saga factory ``app`` (``module:factory``) to the work queue at
    ``queue`` (default ``SAGAGRAPH_QUEUE``), recorded in checkpointer ``db`` (default
    ``SAGAGRAPH_DB``, shared with the workers). Every request is checked before anything is
    written; BusError (one line, password hidden) when the broker cannot be reached.
    ``definitions``: where ``app``'s factory is found (default: imported by its reference)."""
    address = queue_address(queue)
    db = db or default_db_url()
    schedule = schedule or Schedule()
    check_reference(app)
    if definitions is None or app not in definitions.factories:
        definitions = Definitions.load([app])
    if not 0 <= schedule.priority <= MAX_PRIORITY:
        raise InputError(f"--priority: expected 0 to {MAX_PRIORITY}, got {schedule.priority}")
    ids = [validate_saga_id(r.saga_id or new_saga_id()) for r in requests]
    if len(set(ids)) != len(ids):
        raise InputError("submit: the same saga id was given twice")
    with ExitStack() as stack:
        checkpointer = stack.enter_context(open_checkpointer(db))
        sagas = CompiledSagas(checkpointer, definitions)
        # The delivery limit goes with the saga, so whoever takes it over (``recover
        # --watch``) dead-letters it where the queue's own workers would.
        recorded = {
            WORKER_KEY: {
                "app": app,
                "queue": address.name,
                "max_deliveries": address.max_deliveries,
            }
        }
        inputs = [dict(r.input) | recorded for r in requests]
        for saga_input in inputs:
            check_storable_input(saga_input)
        prepared = []
        for saga_id, request, saga_input in zip(ids, requests, inputs, strict=True):
            graph = sagas.app_for({"saga_id": saga_id, "input": saga_input}, "submit")
            check_fail_at(graph, request.fail_at)
            check_new_input(graph, saga_input)
            prepared.append((saga_id, saga_input, request.fail_at, graph))
        results: list[Submitted] = []
        written: list[tuple[str, Any]] = []
        for saga_id, saga_input, fail_at, graph in prepared:
            with saga_lease(checkpointer, saga_id):
                existing = read_view(checkpointer, saga_id)
                if existing is not None:
                    status = saga_status(graph, saga_id)["status"]
                    results.append(Submitted(saga_id, False, str(status)))
                    continue
                values = initial_state(saga_id, saga_input, fail_at=fail_at) | {"status": QUEUED}
                graph.update_state(saga_config(saga_id), values, as_node=START)
            written.append((saga_id, graph))
            results.append(Submitted(saga_id, True, QUEUED))
        publish = [saga_id for saga_id, _ in written]
        try:
            publish_tasks(address, db, publish, schedule)
        except BaseException:
            for saga_id, _ in written:
                checkpointer.delete_thread(saga_id)
            raise
    return results


def publish_tasks(
    address: QueueAddress, db: str, saga_ids: Sequence[str], schedule: Schedule | None = None
) -> None:
    """One "run or resume saga ID" task per saga on the queue, each confirmed by the broker."""
    if not saga_ids:
        return
    schedule = schedule or Schedule()
    celery = make_celery_app(address.url, db)
    try:
        with celery.connection_for_write() as connection:
            for saga_id in saga_ids:
                # The worker's run joins the submitter's trace (W3C headers on the message).
                with submit_span(saga_id):
                    celery.send_task(
                        RUN_SAGA,
                        args=[saga_id],
                        task_id=saga_id,
                        queue=address.name,
                        priority=schedule.priority,
                        countdown=schedule.countdown,
                        eta=schedule.eta,
                        connection=connection,
                        retry=True,
                        headers=trace_headers(),
                    )
    except BusError:
        raise
    except Exception as error:
        raise address.error("cannot publish", error) from None
    finally:
        celery.close()


def _saga_app(checkpointer: Any, saga_id: str, definitions: Definitions, command: str) -> Any:
    """The graph of a saga submitted to the work queue, from the reference it recorded,
    when ``definitions`` (the factories this process was given) has it: a checkpoint names
    the code it runs, and nothing imports what a checkpoint names unless it was accepted
    (as a worker accepts only its ``--app``). InputError otherwise, naming the flag."""
    view = read_view(checkpointer, saga_id)
    if view is None:
        raise SagaNotFoundError(f"saga {saga_id!r}: not found in this checkpointer")
    reference = recorded_reference(view["input"])
    if reference is None:
        raise InputError(f"saga {saga_id!r}: not submitted to a work queue")
    return CompiledSagas(checkpointer, definitions).app_for(view, command)


NOTHING_STARTED = "stopped before its first step: nothing to compensate"
"""``cancel`` of a queued saga that no worker took: nothing ran, so nothing was undone."""


def cancel_saga(
    saga_id: str,
    *,
    by: str,
    why: str,
    queue: str | None = None,
    db: str | None = None,
    definitions: Definitions | None = None,
) -> dict[str, Any]:
    """Cancel a queued or running saga; its view (``cancel`` says what happened:
    ``compensated``, :data:`NOTHING_STARTED`, or requested of its worker).

    The saga's task is revoked (a worker that gets it drops it), and the request is written
    to the ledger. A saga no process holds (queued, or orphaned) is compensated here, now; a
    running one by its worker, at its next step boundary. Either way its events record who
    cancelled it (the event's ``by``) and why. InputError for a finished saga, one waiting
    for an operator, or one whose factory is not in ``definitions`` (default: none).
    """
    if not by.strip() or not why.strip():
        raise InputError("cancel: say who cancels (--by) and why (--reason)")
    address = queue_address(queue)
    db = db or default_db_url()
    by, reason = by.strip(), f"cancelled: {why.strip()}"
    with open_checkpointer(db) as checkpointer:
        app = _saga_app(checkpointer, saga_id, definitions or Definitions(), "cancel")
        view = saga_status(app, saga_id)
        _check_cancellable(view, saga_id)
        with open_ledger(db) as ledger:
            ledger.request_cancel(saga_id, by, reason)
            _revoke(address, db, saga_id)
            try:
                with saga_lease(checkpointer, saga_id):
                    view = saga_status(app, saga_id)
                    if final_state(view) is None:
                        # A saga no worker took has no step to compensate.
                        started = not never_taken(view, ledger.deliveries(saga_id))
                        view = rollback_leased(app, saga_id, reason, by=by, started=started)
                        if not started:
                            return view | {"cancel": NOTHING_STARTED}
                    return view | {"cancel": "compensated"}
            except InputError as error:
                if "in use by" not in str(error):
                    raise
        return view | {"cancel": "requested: its worker compensates it at its next step"}


def _check_cancellable(view: Mapping[str, Any], saga_id: str) -> None:
    if view.get("waiting_for_operator"):
        raise InputError(f"saga {saga_id!r}: waiting for an operator; use resolve, not cancel")
    if final_state(view) is not None:
        raise InputError(f"saga {saga_id!r}: already {view['status']}; nothing to cancel")


def _revoke(address: QueueAddress, db: str, saga_id: str) -> None:
    """Revoke the saga's task on every worker. Best effort: the ledger is the record a worker
    reads, so a broker that cannot be reached now only delays the cancel until the saga is
    taken (it then compensates before its first step)."""
    celery = make_celery_app(address.url, db)
    try:
        celery.control.revoke(saga_id)
    except Exception as error:
        log.warning("%s", address.error("cannot revoke", error))
    finally:
        celery.close()


def requeue_saga(
    saga_id: str,
    *,
    queue: str | None = None,
    db: str | None = None,
    schedule: Schedule | None = None,
    note: str = "",
    definitions: Definitions | None = None,
) -> dict[str, Any]:
    """Put a dead-lettered (or still queued) saga back on the queue with a fresh delivery
    count; its view. The saga's events record the requeue. InputError when its factory is
    not in ``definitions`` (default: none)."""
    address = queue_address(queue)
    db = db or default_db_url()
    with open_checkpointer(db) as checkpointer:
        app = _saga_app(checkpointer, saga_id, definitions or Definitions(), "requeue")
        with saga_lease(checkpointer, saga_id):
            view = saga_status(app, saga_id)
            if view.get("dead_letter") is None and view["status"] != QUEUED:
                raise InputError(
                    f"saga {saga_id!r}: {view['status']}, not dead-lettered or queued; "
                    "nothing to requeue"
                )
            with open_ledger(db) as ledger:
                ledger.reset(saga_id)
            detail = "requeued" + (f": {note}" if note else "")
            event = make_event(WORKER_STEP, "resolve", "ok", detail=detail)
            keep_next_step(app, saga_id, {"events": [event]})
        publish_tasks(address, db, [saga_id], schedule)
        return saga_status(app, saga_id)
