"""Recovery that nobody has to call: take over the sagas whose process died.

A saga is driven under its lease (:mod:`sagagraph.graph.leases`), which lives exactly as long
as the process holding it. A saga left ``running`` or ``compensating`` whose lease is free has
no live process behind it: ``list`` shows it orphaned. :func:`take_over_orphans` resumes each
such saga under its lease, so two takers never run one saga at once. Queued, dead-lettered and
operator-waiting sagas are left alone. A saga of the work queue is taken over as a worker
would take it (:class:`~sagagraph.workers.drive.Driver`): the delivery counts, so a poison saga
is dead-lettered here too. ``sagagraph recover --watch`` runs it in a loop, Celery beat as the
periodic task ``sagagraph.recover``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.checkpoints.saga_index import latest_checkpoints
from sagagraph.errors import InputError, SagaBusyError, SagaGraphError
from sagagraph.graph.definitions import WORKER_KEY, CompiledSagas, Definitions
from sagagraph.graph.leases import saga_lease
from sagagraph.graph.recover import is_unfinished, recover_saga
from sagagraph.graph.runner import saga_status
from sagagraph.graph.stored import read_view
from sagagraph.saga.names import TERMINAL_STATUSES
from sagagraph.saga.view import describe_error
from sagagraph.workers.address import DEFAULT_MAX_DELIVERIES
from sagagraph.workers.drive import Driver

log = logging.getLogger("sagagraph.workers")


def recorded_limit(worker: Any, default: int) -> int:
    """The delivery limit a saga's queue recorded at submit (its URL's ``max_deliveries``),
    else ``default``: the watcher's queue URL, else the default limit."""
    limit = worker.get("max_deliveries") if isinstance(worker, dict) else None
    return (
        limit if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1 else default
    )


def take_over_orphans(
    db: str,
    definitions: Definitions,
    *,
    max_deliveries: int = DEFAULT_MAX_DELIVERIES,
    say: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Resume every orphaned saga of checkpointer ``db`` whose definition is among
    ``definitions``; the views of those taken over. A saga another process holds is left
    to it. A queued saga is driven as its queue's workers would, with the delivery limit
    its queue recorded (else ``max_deliveries``)."""
    say = say or log.info
    taken = []
    drivers: dict[str, Driver] = {}
    with ExitStack() as stack:
        checkpointer = stack.enter_context(open_checkpointer(db))
        sagas = CompiledSagas(checkpointer, definitions)
        for summary in latest_checkpoints(checkpointer, skip=TERMINAL_STATUSES):
            stored = read_view(checkpointer, summary.saga_id)
            if stored is None:
                continue
            try:
                app = sagas.app_for(stored, "recover")
            except InputError:
                continue  # a definition this process does not run
            saga_input = stored["input"]
            try:
                view = saga_status(app, summary.saga_id)
                if not is_unfinished(view) or view.get("dead_letter"):
                    continue
                with saga_lease(checkpointer, summary.saga_id):
                    pass  # held by a live process: SagaBusyError, and it is left alone
                say(f"recover: taking over saga {summary.saga_id} ({view['status']})")
                worker = saga_input.get(WORKER_KEY) or {}
                queue = worker.get("queue")
                if queue:
                    if queue not in drivers:
                        limit = recorded_limit(worker, max_deliveries)
                        drivers[queue] = Driver(db, limit, definitions, queue, say)
                        stack.callback(drivers[queue].close)
                    drivers[queue].drive(summary.saga_id)
                    view = saga_status(app, summary.saga_id)
                else:
                    view = recover_saga(app, summary.saga_id)
            except SagaBusyError:
                continue  # a live process drives it
            except SagaGraphError as error:
                say(f"recover: saga {summary.saga_id} not taken over: {describe_error(error)}")
                continue
            say(f"recover: saga {summary.saga_id} {view['status']}")
            taken.append(view)
    return taken
