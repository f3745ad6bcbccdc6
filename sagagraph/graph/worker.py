"""The queue worker: take sagas off the work queue and drive them to a final state.

``run_worker(graph_for, queue=..., db=..., concurrency=N)`` consumes the work queue with a
prefetch of N and runs each saga with the async engine (:func:`aresume_saga`) against the
shared checkpointer. A message is acknowledged only once its saga is final: completed,
rolled back, or waiting for an operator. Until then the message belongs to the worker, so a
worker that dies hands it back to the broker, which delivers it to another worker; that one
resumes the saga from its last checkpoint (steps that committed do not run again). The saga's
lease (:mod:`sagagraph.graph.worker_lease`) keeps two workers from driving one saga: a worker
that gets a saga another still holds waits for it.

- A saga whose worker keeps dying is dead-lettered by the broker after ``max_deliveries``
  deliveries (see :mod:`sagagraph.graph.work_queue`); a worker takes it from the dead-letter
  queue and records it in the saga's audit trail (``dead_letter`` in the view: it needs an
  operator). An error outside the saga's steps (the database is down) returns the message to
  the queue, so it too ends dead-lettered if it never clears.
- SIGTERM (or SIGINT): stop taking sagas, finish those in flight, return. A second signal
  hands the ones in flight back at once (they resume elsewhere from their last checkpoint).
- One log line per saga taken and per saga ended.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from aio_pika.abc import AbstractIncomingMessage

from sagagraph.checkpoints.async_factory import open_async_checkpointer
from sagagraph.checkpoints.factory import default_db_url
from sagagraph.errors import BusError, InputError, SagaBusyError, SagaNotFoundError
from sagagraph.graph.async_runner import aresume_saga
from sagagraph.graph.dead_letters import DEAD_LETTER, WORKER_STEP
from sagagraph.graph.runner import saga_config
from sagagraph.graph.work_queue import QueueAddress, connect, declare, decode_job, queue_address
from sagagraph.graph.worker_lease import WorkerLeases, worker_leases
from sagagraph.saga.names import TERMINAL_STATUSES
from sagagraph.saga.view import describe_error, make_event

log = logging.getLogger("sagagraph.worker")

GraphFor = Callable[[Mapping[str, Any]], Any]
"""Given a saga's recorded input, the uncompiled saga graph to run it with (return the same
graph object for the same settings: the worker compiles each graph once)."""

BUSY_POLL = 0.5
"""Seconds between tries for a saga whose lease another worker still holds."""
RETRY_DELAY = 1.0
"""Seconds before a saga that failed outside its steps goes back to the queue."""


@dataclass
class WorkerTally:
    """What one worker did, for its last log line and for callers of :func:`run_worker`."""

    taken: int = 0
    """Deliveries taken off the work queue."""
    ended: Counter[str] = field(default_factory=Counter)
    """Sagas brought to a final state, by status (``needs_operator`` when waiting)."""
    handed_back: int = 0
    """Deliveries returned to the queue unfinished (an error, or a forced stop)."""
    dead_letters: int = 0
    """Dead-lettered sagas recorded as needing an operator."""
    refused: int = 0
    """Deliveries this worker dead-lettered itself: not a saga job, or a saga not found."""


def final_state(view: Mapping[str, Any]) -> str | None:
    """The final state a saga's view shows (its status, or ``needs_operator``); else None."""
    if view.get("waiting_for_operator"):
        return "needs_operator"
    if view["status"] in TERMINAL_STATUSES or not view.get("next"):
        return str(view["status"])
    return None


class _HandBack(Exception):
    """The worker is stopping while a saga it took is still held by someone else."""


class _Worker:
    def __init__(
        self,
        graph_for: GraphFor,
        checkpointer: Any,
        leases: WorkerLeases,
        address: QueueAddress,
        say: Callable[[str], None],
        stopping: asyncio.Event,
    ) -> None:
        self.stopping = stopping
        self.graph_for = graph_for
        self.checkpointer = checkpointer
        self.leases = leases
        self.address = address
        self.say = say
        self.tally = WorkerTally()
        self._apps: dict[int, tuple[Any, Any]] = {}

    def _app(self, saga_input: Mapping[str, Any]) -> Any:
        graph = self.graph_for(saga_input)
        known = self._apps.get(id(graph))
        if known is None or known[0] is not graph:
            known = (graph, graph.compile(checkpointer=self.checkpointer))
            self._apps[id(graph)] = known
        return known[1]

    async def _saga_input(self, saga_id: str) -> Mapping[str, Any]:
        found = await self.checkpointer.aget_tuple(saga_config(saga_id))
        if found is None or not found.checkpoint["channel_values"]:
            raise SagaNotFoundError(f"saga {saga_id!r}: not found in this checkpointer")
        saga_input: Mapping[str, Any] = found.checkpoint["channel_values"].get("input") or {}
        return saga_input

    async def resume_under_lease(self, saga_id: str) -> dict[str, Any]:
        """Resume the saga under its lease until it is final; wait while another holds it."""
        app = self._app(await self._saga_input(saga_id))
        while True:
            try:
                async with self.leases.hold(saga_id):
                    return await aresume_saga(app, saga_id)
            except SagaBusyError:
                if self.stopping.is_set():
                    raise _HandBack from None  # not started here: nothing to finish
                await asyncio.sleep(BUSY_POLL)

    async def take(self, message: AbstractIncomingMessage) -> None:
        """One delivery of the work queue, settled only once its saga is final."""
        self.tally.taken += 1
        count = (message.headers or {}).get("x-delivery-count")
        delivery = (count if isinstance(count, int) else 0) + 1
        try:
            saga_id = decode_job(message.body)
        except InputError as error:
            self.say(f"worker: dead-lettering a message that is not a saga job: {error}")
            await message.reject(requeue=False)
            self.tally.refused += 1
            return
        self.say(
            f"worker: took saga {saga_id} (delivery {delivery} of {self.address.max_deliveries})"
        )
        start = time.monotonic()
        try:
            view = await self.resume_under_lease(saga_id)
        except asyncio.CancelledError:
            await self._hand_back(message, saga_id)
            raise
        except _HandBack:
            await self._hand_back(message, saga_id)
            return
        except SagaNotFoundError as error:
            self.say(f"worker: saga {saga_id}: {error}; dead-lettering its message")
            await message.reject(requeue=False)
            self.tally.refused += 1
            return
        except Exception as error:
            self.say(f"worker: saga {saga_id} failed: {describe_error(error)}; back to the queue")
            await asyncio.sleep(RETRY_DELAY)
            await _settle(message.nack(requeue=True))
            self.tally.handed_back += 1
            return
        ended = final_state(view)
        if ended is None:
            self.say(
                f"worker: saga {saga_id} stopped unfinished ({view['status']}); back to the queue"
            )
            await _settle(message.nack(requeue=True))
            self.tally.handed_back += 1
            return
        await message.ack()
        self.tally.ended[ended] += 1
        self.say(f"worker: saga {saga_id} {ended} in {time.monotonic() - start:.1f} s")

    async def _hand_back(self, message: AbstractIncomingMessage, saga_id: str) -> None:
        await _settle(message.nack(requeue=True))
        self.tally.handed_back += 1
        self.say(f"worker: saga {saga_id} handed back to the queue (stopping)")

    async def record_dead_letter(self, message: AbstractIncomingMessage) -> None:
        """Record a dead-lettered saga in its audit trail, so its view says it needs an operator.

        The event is a state update (LangGraph's ``aupdate_state``) made as the node that wrote
        last: it adds the event and leaves the saga's next step as it was, so an operator's
        ``resume`` continues the saga from where it stopped.
        """
        try:
            saga_id = decode_job(message.body)
        except InputError as error:
            self.say(f"worker: dropping a dead letter that is not a saga job: {error}")
            await message.ack()
            return
        found = await self.checkpointer.aget_tuple(saga_config(saga_id))
        if found is None:
            self.say(f"worker: dead letter for saga {saga_id}, which is not in this checkpointer")
            await message.ack()
            return
        status = found.checkpoint["channel_values"].get("status")
        if status not in TERMINAL_STATUSES:
            detail = (
                f"dead-lettered by queue {self.address.name} after "
                f"{self.address.max_deliveries} deliveries: its worker stopped each time"
            )
            event = make_event(WORKER_STEP, "escalate", DEAD_LETTER, detail=detail)
            app = self._app(await self._saga_input(saga_id))
            await app.aupdate_state(saga_config(saga_id), {"events": [event]})
            self.tally.dead_letters += 1
            self.say(f"worker: saga {saga_id} dead-lettered; it needs an operator")
        await message.ack()


async def _settle(settling: Coroutine[Any, Any, Any]) -> None:
    """Settle a delivery; a lost channel has returned the message to the queue already."""
    try:
        await settling
    except Exception as error:  # the broker redelivers what it never saw settled
        log.warning("worker: could not settle a delivery: %s", describe_error(error))


async def arun_worker(
    graph_for: GraphFor,
    *,
    queue: str | None = None,
    db: str | None = None,
    concurrency: int = 1,
    stop: asyncio.Event | None = None,
    handle_signals: bool = False,
    say: Callable[[str], None] | None = None,
) -> WorkerTally:
    """Consume the work queue until ``stop`` is set (or SIGTERM/SIGINT with
    ``handle_signals``); finish the sagas in flight and return what was done.

    ``queue`` and ``db`` default to ``SAGAGRAPH_QUEUE`` and ``SAGAGRAPH_DB``. BusError when the
    broker connection is lost (the sagas in flight go back to the queue).
    """
    if concurrency < 1:
        raise InputError(f"worker: concurrency must be >= 1, got {concurrency}")
    address = queue_address(queue)
    db = db or default_db_url()
    stop = stop or asyncio.Event()
    say = say or log.info
    async with open_async_checkpointer(db) as checkpointer, worker_leases(db) as leases:
        worker = _Worker(graph_for, checkpointer, leases, address, say, stop)
        async with await connect(address) as connection:
            lost = asyncio.Event()
            connection.close_callbacks.add(lambda *_: lost.set())
            channel = await connection.channel()
            await channel.set_qos(prefetch_count=concurrency)
            queues = await declare(channel, address)
            tasks: set[asyncio.Task[None]] = set()

            def spawn(work: Coroutine[Any, Any, None]) -> None:
                task = asyncio.create_task(work)
                tasks.add(task)
                task.add_done_callback(tasks.discard)

            def hand_back() -> None:
                for task in list(tasks):
                    task.cancel()

            if handle_signals:
                _install_signals(stop, hand_back)

            async def on_work(message: AbstractIncomingMessage) -> None:
                spawn(worker.take(message))

            async def on_dead(message: AbstractIncomingMessage) -> None:
                spawn(worker.record_dead_letter(message))

            work_tag = await queues.work.consume(on_work)
            dead_tag = await queues.dead.consume(on_dead)
            say(
                f"worker: consuming queue {address.name} at {address.shown} ({concurrency} at once)"
            )
            stopped = asyncio.create_task(stop.wait())
            broken = asyncio.create_task(lost.wait())
            await asyncio.wait({stopped, broken}, return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
            broken.cancel()
            if not lost.is_set():
                await queues.work.cancel(work_tag)
                await queues.dead.cancel(dead_tag)
            if tasks:
                say(f"worker: stopping; finishing {len(tasks)} saga(s) in flight")
                await asyncio.gather(*tasks, return_exceptions=True)
            if lost.is_set():
                raise BusError(f"queue {address.shown!r}: connection to the broker lost")
        tally = worker.tally
        say(
            f"worker: stopped after {tally.taken} deliveries: "
            + (", ".join(f"{n} {s}" for s, n in sorted(tally.ended.items())) or "none finished")
            + f"; {tally.handed_back} handed back; {tally.dead_letters + tally.refused} "
            + f"dead-lettered ({tally.refused} not a saga job or not found)"
        )
        return tally


def _install_signals(stop: asyncio.Event, hand_back: Callable[[], None]) -> None:
    """First SIGTERM/SIGINT: stop taking work; a second: hand what is in flight back."""
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if stop.is_set():
            hand_back()
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)


def run_worker(
    graph_for: GraphFor,
    *,
    queue: str | None = None,
    db: str | None = None,
    concurrency: int = 1,
    say: Callable[[str], None] | None = None,
) -> WorkerTally:
    """Run a worker in this process until SIGTERM or SIGINT; see :func:`arun_worker`."""
    return asyncio.run(
        arun_worker(
            graph_for, queue=queue, db=db, concurrency=concurrency, handle_signals=True, say=say
        )
    )
