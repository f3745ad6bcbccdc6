"""What a worker does with one delivery of "run or resume saga ID", Celery aside.

The saga's state is in the shared checkpointer, the message is only a claim ticket
(docs/workers.md). The worker reads the saga's recorded reference (``module:factory``,
:mod:`sagagraph.graph.definitions`), builds its graph, takes the saga's lease (no two
processes drive it at once, on any machine), counts the delivery in the ledger
(:mod:`.ledger`), and continues the saga from its last checkpoint as ``resume`` would, until it
is final or waits for an operator; a saga parked for an operator holds no task. A saga
delivered more than ``max_deliveries`` times is not run again but dead-lettered
(:mod:`.dead_letters`); a cancel request in the ledger, read at each step boundary, turns the
saga to compensation with the request's reason.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.errors import InputError
from sagagraph.graph.definitions import CompiledSagas, Definitions, recorded_reference
from sagagraph.graph.leases import saga_lease
from sagagraph.graph.recover import rollback_leased
from sagagraph.graph.runner import DEFAULT_DURABILITY, RunOutput, saga_config, saga_status
from sagagraph.graph.stored import read_view
from sagagraph.graph.views import finished_view
from sagagraph.saga.names import TERMINAL_STATUSES
from sagagraph.saga.view import make_event
from sagagraph.workers.dead_letters import (
    DEAD_LETTER,
    WORKER_STEP,
    dead_letter_unbuilt,
    keep_next_step,
    never_taken,
)
from sagagraph.workers.ledger import WorkerLedger, open_ledger

NEEDS_OPERATOR = "needs_operator"
DEAD_LETTERED = "dead_lettered"
NOT_FOUND = "not_found"
NOT_MINE = "not_mine"
"""Outcomes of a delivery besides the saga's final status."""


def final_state(view: Mapping[str, Any]) -> str | None:
    """The final state a saga's view shows (its status, or ``needs_operator``); else None."""
    if view.get("waiting_for_operator"):
        return NEEDS_OPERATOR
    if view["status"] in TERMINAL_STATUSES or not view.get("next"):
        return str(view["status"])
    return None


@dataclass
class Driver:
    """One worker process's means to drive sagas: a ledger it shares between its threads, and
    a checkpointer and compiled graphs per thread (a checkpointer serialises its connection)."""

    db: str
    max_deliveries: int
    definitions: Definitions
    """The sagas this worker runs (``--app``), by reference; others are handed back."""
    queue_name: str
    say: Callable[[str], None]
    _stack: ExitStack = field(default_factory=ExitStack)
    _local: threading.local = field(default_factory=threading.local)
    _ledger: WorkerLedger | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ledger(self) -> WorkerLedger:
        with self._lock:
            if self._ledger is None or _closed(self._ledger.connection):
                # A database connection that was cut stays closed: open another.
                self._ledger = self._stack.enter_context(open_ledger(self.db))
            return self._ledger

    def sagas(self) -> CompiledSagas:
        sagas: CompiledSagas | None = getattr(self._local, "sagas", None)
        if sagas is None or _closed(getattr(sagas.checkpointer, "conn", None)):
            # This thread's checkpointer lost its database connection (a network cut, a
            # restarted server): a closed psycopg connection never reopens, so every later
            # saga would fail on it. Open a new checkpointer; the dead one closes with the
            # driver.
            with self._lock:
                checkpointer = self._stack.enter_context(open_checkpointer(self.db))
            sagas = self._local.sagas = CompiledSagas(checkpointer, self.definitions)
        return sagas

    def close(self) -> None:
        self._stack.close()

    def drive(self, saga_id: str) -> str:
        """Drive the saga to a final state; the outcome (its status, or why it did not run).

        SagaBusyError when another process holds the saga's lease (try again later).
        """
        return str(self.drive_to_end(saga_id)["status"])

    def drive_to_end(self, saga_id: str) -> dict[str, Any]:
        """:meth:`drive`, answered as the task's result: how the saga ended, in a few keys
        (:func:`task_result`) that Flower and any task-event reader show."""
        outcome, view = self._drive(saga_id)
        return task_result(saga_id, outcome, view)

    def _drive(self, saga_id: str) -> tuple[str, Mapping[str, Any] | None]:
        sagas = self.sagas()
        stored = read_view(sagas.checkpointer, saga_id)
        if stored is None:
            self.say(f"worker: saga {saga_id} is not in this checkpointer; dropped")
            return NOT_FOUND, None
        try:
            app = sagas.app_for(stored)
        except InputError:
            reference = recorded_reference(stored["input"]) or stored.get("saga")
            self.say(f"worker: saga {saga_id} runs {reference}, which this worker does not run")
            return NOT_MINE, None
        started = time.perf_counter()
        with saga_lease(sagas.checkpointer, saga_id):
            view = saga_status(app, saga_id)
            done = final_state(view)
            if done is not None:
                return done, view
            ledger = self.ledger()
            delivery = ledger.deliver(saga_id)
            self.say(f"worker: took saga {saga_id} (delivery {delivery} of {self.max_deliveries})")
            if delivery > self.max_deliveries:
                self._dead_letter(app, saga_id, delivery - 1)
                return DEAD_LETTERED, None
            view = self._run(app, saga_id, ledger, delivery)
        outcome = final_state(view) or str(view["status"])
        self.say(f"worker: saga {saga_id} {outcome} in {time.perf_counter() - started:.1f} s")
        return outcome, view

    def dead_letter_unowned(self, saga_id: str, hand_backs: int) -> bool:
        """Dead-letter a saga this worker handed back ``hand_backs`` times because no worker
        of the queue runs its factory; its next step is kept (``requeue`` with the right
        ``--app`` runs it). False when it is no longer waiting on the queue."""
        sagas = self.sagas()
        stored = read_view(sagas.checkpointer, saga_id)
        if stored is None:
            return False
        reference = recorded_reference(stored["input"]) or stored.get("saga")
        detail = (
            f"dead-lettered by queue {self.queue_name}: no worker of queue {self.queue_name} "
            f"runs {reference} (handed back {hand_backs} times); start one with --app "
            f"{reference}, then requeue"
        )
        with saga_lease(sagas.checkpointer, saga_id):
            done = dead_letter_unbuilt(sagas.checkpointer, saga_id, detail)
        if done:
            self.say(f"worker: saga {saga_id} dead-lettered: no worker runs {reference}")
        return done

    def _run(self, app: Any, saga_id: str, ledger: WorkerLedger, delivery: int) -> dict[str, Any]:
        """Continue the saga until it ends or pauses, checking for a cancel between steps
        (``delivery``: this one's number, 1 when no worker took the saga before)."""
        cancel = ledger.cancel_request(saga_id)
        if cancel is None:
            output = RunOutput()
            stream = app.stream(
                None, saga_config(saga_id), durability=DEFAULT_DURABILITY, stream_mode=output.modes
            )
            for chunk in stream:
                output.take(chunk)
                if chunk[0] == "values" and (cancel := ledger.cancel_request(saga_id)):
                    stream.close()  # before the next step starts
                    break
            else:
                finished = output.finished()
                if finished is not None:
                    return finished_view(finished, saga_id)
                return saga_status(app, saga_id)
        view = saga_status(app, saga_id)
        if final_state(view) is not None:
            return view
        self.say(f"worker: saga {saga_id} cancelled by {cancel.by}; compensating")
        # Cancelled before its first step, by the first worker to take it: nothing ran.
        started = not never_taken(view, delivery - 1)
        return rollback_leased(app, saga_id, cancel.reason, by=cancel.by, started=started)

    def _dead_letter(self, app: Any, saga_id: str, deaths: int) -> None:
        """Record in the saga's events that it is dead-lettered; its next step stays as it was,
        so ``requeue`` (or ``resume``) continues it where it stopped."""
        detail = (
            f"dead-lettered by queue {self.queue_name} after {deaths} deliveries: "
            "its worker stopped each time"
        )
        event = make_event(WORKER_STEP, "escalate", DEAD_LETTER, detail=detail)
        keep_next_step(app, saga_id, {"events": [event]})
        self.say(f"worker: saga {saga_id} dead-lettered; it needs an operator")


def task_result(saga_id: str, outcome: str, view: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the ``run_saga`` task returns: ``saga_id``, ``status`` (the saga's final status, or
    ``needs_operator``, ``dead_lettered``, ``not_found``, ``not_mine``), and from its view the
    ``reason`` it ended for and the steps ``compensated``. Celery marks the task SUCCESS
    whenever the saga was decided (a rolled-back saga is no task failure to retry); this
    result, in the ``task-succeeded`` event, says how it was decided."""
    result: dict[str, Any] = {"saga_id": saga_id, "status": outcome}
    if view is not None:
        result["reason"] = view.get("reason")
        result["compensated"] = list(view.get("compensated") or [])
    return result


def _closed(conn: Any) -> bool:
    """True for a psycopg connection that is closed (or broken); SQLite's never say so."""
    return bool(getattr(conn, "closed", False)) or bool(getattr(conn, "broken", False))
