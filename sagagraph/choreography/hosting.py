"""Hosting step services: one as a process of its own, or a saga's in threads.

Each step service hears its events through the bus, judges each by the saga's history on the bus log
(:mod:`.admission`), and records what it decided in its ledger before anything is published.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from sagagraph.checkpoints.urls import default_bus_url
from sagagraph.choreography.bus import Consumer, EventBus, Handler
from sagagraph.choreography.buses import open_bus
from sagagraph.choreography.ledger import StepLedger
from sagagraph.choreography.messages import SagaMessage
from sagagraph.choreography.step_reactions import DefinitionFor
from sagagraph.choreography.step_service import StepService
from sagagraph.choreography.topology import Choreography, EventNames, derive_choreography
from sagagraph.errors import BusError, SagaGraphError
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.protocol import SagaDefinition
from sagagraph.saga.view import describe_error

log = logging.getLogger("sagagraph")

AGENT_START_TIMEOUT = 30.0

BusRef = str | EventBus | None
"""A bus URL, an open bus, or None for the default (``$SAGAGRAPH_BUS``, then
``$SAGAGRAPH_AMQP_URL``, then ``sqlite:///sagagraph-events.sqlite``)."""
CommitHook = Callable[[SagaMessage, list[SagaMessage]], None]


@contextmanager
def bus_for(
    ref: BusRef, *, state_dir: str | Path | None = None, create: bool = True
) -> Iterator[EventBus]:
    """The bus ``ref`` names; closed on exit only when opened here."""
    if ref is not None and not isinstance(ref, str):
        yield ref
        return
    bus = open_bus(ref or default_bus_url(), state_dir=state_dir, create=create)
    try:
        yield bus
    finally:
        bus.close()


def service_consumer(
    choreography: Choreography,
    step: str,
    ledger: StepLedger,
    *,
    bus: EventBus | None = None,
    on_committed: CommitHook | None = None,
    definition_for: DefinitionFor | None = None,
    hooks: SagaHooks | None = None,
) -> Consumer:
    """The bus-facing side of one step service.

    With ``bus``, the step service judges each event by the saga's history on that bus's log, and
    checks and signs events with that bus's key.
    ``on_committed(event, emitted)`` runs after the step service recorded its decision and before
    the emitted events are published (metrics; crash tests kill the process there).
    """
    history = (lambda saga_id: bus.read_log([saga_id])) if bus is not None else None
    service = StepService(
        choreography,
        step,
        ledger,
        history=history,
        definition_for=definition_for,
        hooks=hooks,
        authenticator=bus.authenticator if bus is not None else None,
    )
    handle: Handler = service.handle
    if on_committed is not None:
        hook = on_committed

        def handle_then_hook(message: SagaMessage) -> list[SagaMessage]:
            emitted = service.handle(message)
            hook(message, emitted)
            return emitted

        handle = handle_then_hook
    return Consumer(
        name=f"{choreography.saga}.{step}",
        saga=choreography.saga,
        topics=service.role.subscriptions,
        handle=handle,
    )


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set ``stop``: the step service finishes the event in hand, then exits.

    Main thread only (Python runs signal handlers there).
    """

    def request_stop(signum: int, frame: FrameType | None) -> None:
        log.warning("step service: stopping after the event in hand (signal %d)", signum)
        stop.set()

    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run_step_service(
    definition: SagaDefinition,
    step_name: str,
    bus_url: BusRef = None,
    stop_event: threading.Event | None = None,
    *,
    names: EventNames | None = None,
    state_dir: str | Path | None = None,
    ready: threading.Event | None = None,
    on_committed: CommitHook | None = None,
    definition_for: DefinitionFor | None = None,
    hooks: SagaHooks | None = None,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Run one step service until ``stop_event`` is set (or, without one, until SIGINT/SIGTERM).

    The step service resumes where its durable subscription stands (queue or log cursor); events it
    handled before a crash are recognised by its ledger and not handled twice.
    ``definition_for`` picks the definition per saga from its input (its outputs folder);
    ``hooks`` observe each event's handling (an alert on escalation, say); ``announce``
    receives one line (service, bus with any password hidden, queue or cursor) once the
    service is connected.
    """
    choreography = derive_choreography(definition, names)
    choreography.role(step_name)
    stop = stop_event if stop_event is not None else threading.Event()
    with bus_for(bus_url, state_dir=state_dir) as bus:
        # Every service declares the whole saga's queues, so no event it emits is routed nowhere
        # because the step service that should hear it has not started yet.
        bus.prepare(choreography)
        consumer_name = f"{choreography.saga}.{step_name}"
        with bus.ledger(consumer_name) as ledger:
            consumer = service_consumer(
                choreography,
                step_name,
                ledger,
                bus=bus,
                on_committed=on_committed,
                definition_for=definition_for,
                hooks=hooks,
            )
            line = listening_line(bus, consumer)
            log.info("%s", line)
            if announce is not None:
                announce(line)
            with bus.presence(consumer_name):
                if stop_event is None and threading.current_thread() is threading.main_thread():
                    with _stop_on_signals(stop):
                        _serve_beside_main_thread(bus, consumer, stop, ready)
                else:
                    bus.serve(consumer, stop, ready)


def _serve_beside_main_thread(
    bus: EventBus, consumer: Consumer, stop: threading.Event, ready: threading.Event | None
) -> None:
    """Serve on a worker thread while the main thread only waits for it.

    A signal handler runs on the main thread between two bytecodes; if that thread were
    inside ``stop.wait()`` holding the event's lock, ``stop.set()`` in the handler would
    deadlock on it. Here the main thread only joins, so the handler can set ``stop`` safely.
    """
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            bus.serve(consumer, stop, ready)
        except BaseException as error:  # re-raised on the main thread
            errors.append(error)

    worker = threading.Thread(target=serve, name=f"sagagraph:{consumer.name}")
    worker.start()
    while worker.is_alive():
        worker.join(0.5)
    if errors:
        raise errors[0]


class ServiceFailures:
    """Errors raised by step service threads; ``signal`` is set at the first one."""

    signal: threading.Event
    errors: list[BaseException]

    def __init__(self) -> None:
        self.signal = threading.Event()
        self.errors: list[BaseException] = []

    def add(self, error: BaseException) -> None:
        self.errors.append(error)
        self.signal.set()

    def raise_if_any(self) -> None:
        if self.errors:
            error = self.errors[0]
            if isinstance(error, SagaGraphError):
                raise error
            raise BusError(f"a step service stopped: {describe_error(error)}") from error


@contextmanager
def services_in_threads(
    bus: EventBus,
    choreography: Choreography,
    steps: Collection[str] | None = None,
    *,
    definition_for: DefinitionFor | None = None,
    hooks: SagaHooks | None = None,
) -> Iterator[ServiceFailures]:
    """Run the services of ``steps`` (default: all), each in its own thread, while the block runs.

    Yields once all services listen. When the block ends, each service finishes the event in
    hand and stops. A step service that dies records its error in the yielded object.
    """
    stop = threading.Event()
    failures = ServiceFailures()
    threads: list[threading.Thread] = []
    readies: list[threading.Event] = []

    def run(step: str, ready: threading.Event) -> None:
        try:
            with bus.ledger(f"{choreography.saga}.{step}") as ledger:
                consumer = service_consumer(
                    choreography,
                    step,
                    ledger,
                    bus=bus,
                    definition_for=definition_for,
                    hooks=hooks,
                )
                bus.serve(consumer, stop, ready)
        except BaseException as error:  # reported to the caller's thread
            failures.add(error)
            ready.set()

    chosen = [choreography.role(s).name for s in steps] if steps is not None else None
    try:
        for step in choreography.step_names if chosen is None else chosen:
            ready = threading.Event()
            thread = threading.Thread(target=run, args=(step, ready), name=f"sagagraph:{step}")
            thread.start()
            threads.append(thread)
            readies.append(ready)
        for ready in readies:
            if not ready.wait(AGENT_START_TIMEOUT):
                raise BusError(f"step services did not start within {AGENT_START_TIMEOUT:g}s")
        failures.raise_if_any()
        yield failures
    finally:
        stop.set()
        for thread in threads:
            thread.join()


def listening_line(bus: EventBus, consumer: Consumer) -> str:
    """The service's start line: its step, the bus (password hidden) and its queue or cursor."""
    queue_name = getattr(bus, "queue_name", None)
    where = f"queue {queue_name(consumer.name)}" if queue_name else f"cursor {consumer.name}"
    step = consumer.name.rsplit(".", 1)[-1]
    return f"step {step}: listening on {bus.url} ({where}; events: {', '.join(consumer.topics)})"
