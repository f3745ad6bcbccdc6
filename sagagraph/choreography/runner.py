"""Run choreographed sagas: start one, run its agents (in this process or one per process),
and read what happened from the event log.

These are the functions the CLI wires:

- :func:`run_choreographed_saga`: start a saga, run every agent in this process, return its view;
- :func:`run_agent`: run ONE agent until stopped (``sagagraph agent NAME --bus amqp://...``);
- :func:`start_choreographed_saga` / :func:`wait_for_sagas`: start sagas for agents that run
  elsewhere, and wait for them to end;
- :func:`saga_events`: a saga's event log; :func:`choreography_status`: its JSON view;
  :func:`choreographed_sagas`: the views of every saga on the bus.

A bus is named by URL (``memory://``, ``sqlite:///path``, ``amqp://...``) or passed as an
:class:`~sagagraph.choreography.bus.EventBus` object.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from sagagraph.agents.ids import new_saga_id, validate_saga_id
from sagagraph.agents.protocol import SagaDefinition
from sagagraph.agents.view import describe_error
from sagagraph.choreography.agent import ChoreographyAgent
from sagagraph.choreography.bus import Consumer, EventBus, Handler, open_bus
from sagagraph.choreography.ledger import AgentLedger
from sagagraph.choreography.messages import SagaMessage, encode, new_message
from sagagraph.choreography.projection import choreography_view, is_finished
from sagagraph.choreography.topology import Choreography, EventNames, derive_choreography
from sagagraph.config import Settings
from sagagraph.errors import BusError, ConfigurationError, InputError

log = logging.getLogger("sagagraph")

DEFAULT_TIMEOUT = 600.0
"""Seconds :func:`run_choreographed_saga` waits for a saga to end."""
AGENT_START_TIMEOUT = 30.0

BusRef = str | EventBus | None
"""A bus URL, an open bus, or None for the default (``$SAGAGRAPH_BUS``, then
``$SAGAGRAPH_AMQP_URL``, then ``sqlite:///sagagraph-events.sqlite``)."""
CommitHook = Callable[[SagaMessage, list[SagaMessage]], None]


def default_bus_url() -> str:
    """``SAGAGRAPH_BUS``, else ``SAGAGRAPH_AMQP_URL``, else the SQLite log in this folder."""
    return Settings.resolve().bus


@contextmanager
def _bus(
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


def agent_consumer(
    choreography: Choreography,
    step: str,
    ledger: AgentLedger,
    *,
    on_committed: CommitHook | None = None,
) -> Consumer:
    """The bus-facing side of one agent.

    ``on_committed(event, emitted)`` runs after the agent recorded its decision and before
    the emitted events are published (metrics; crash tests kill the process there).
    """
    agent = ChoreographyAgent(choreography, step, ledger)
    handle: Handler = agent.handle
    if on_committed is not None:
        hook = on_committed

        def handle_then_hook(message: SagaMessage) -> list[SagaMessage]:
            emitted = agent.handle(message)
            hook(message, emitted)
            return emitted

        handle = handle_then_hook
    return Consumer(
        name=f"{choreography.saga}.{step}",
        saga=choreography.saga,
        topics=agent.role.subscriptions,
        handle=handle,
    )


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set ``stop``: the agent finishes the event in hand, then exits.

    Main thread only (Python runs signal handlers there).
    """

    def request_stop(signum: int, frame: FrameType | None) -> None:
        log.warning("agent: stopping after the event in hand (signal %d)", signum)
        stop.set()

    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run_agent(
    definition: SagaDefinition,
    step_name: str,
    bus_url: BusRef = None,
    stop_event: threading.Event | None = None,
    *,
    names: EventNames | None = None,
    state_dir: str | Path | None = None,
    ready: threading.Event | None = None,
    on_committed: CommitHook | None = None,
) -> None:
    """Run one agent until ``stop_event`` is set (or, without one, until SIGINT/SIGTERM).

    The agent resumes where its durable subscription stands (queue or log cursor); events it
    handled before a crash are recognised by its ledger and not handled twice.
    """
    choreography = derive_choreography(definition, names)
    choreography.role(step_name)
    stop = stop_event if stop_event is not None else threading.Event()
    with _bus(bus_url, state_dir=state_dir) as bus:
        # Every agent declares the whole saga's queues, so no event it emits is routed nowhere
        # because the agent that should hear it has not started yet.
        bus.prepare(choreography)
        consumer_name = f"{choreography.saga}.{step_name}"
        with bus.ledger(consumer_name) as ledger:
            consumer = agent_consumer(choreography, step_name, ledger, on_committed=on_committed)
            log.info("agent %s: listening on %s for %s", step_name, bus.url, consumer.topics)
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


def _check_start(
    choreography: Choreography, input: Mapping[str, Any], saga_id: str, fail_at: str | None
) -> None:
    validate_saga_id(saga_id)
    if fail_at is not None and fail_at not in choreography.step_names:
        raise ConfigurationError(
            f"fail_at: unknown step {fail_at!r} (steps: {', '.join(choreography.step_names)})"
        )
    if not isinstance(input, Mapping):
        raise InputError(f"saga input: expected a mapping, got {type(input).__name__}")


def _start_message(
    choreography: Choreography, input: Mapping[str, Any], saga_id: str, fail_at: str | None
) -> SagaMessage:
    message = new_message(
        type=choreography.start_event,
        kind="start",
        saga=choreography.saga,
        saga_id=saga_id,
        input=input,
        next_step=choreography.roles[0].name,
        fail_at=fail_at,
    )
    try:
        encode(message)
    except BusError as error:
        raise InputError(f"saga input: {error}") from None
    return message


def start_choreographed_saga(
    definition: SagaDefinition,
    input: Mapping[str, Any],
    saga_id: str | None = None,
    bus_url: BusRef = None,
    *,
    fail_at: str | None = None,
    names: EventNames | None = None,
) -> str:
    """Publish a saga's start event for agents running elsewhere; return its id.

    InputError when the id is already on the bus.
    """
    choreography = derive_choreography(definition, names)
    saga_id = saga_id or new_saga_id()
    _check_start(choreography, input, saga_id, fail_at)
    start = _start_message(choreography, input, saga_id, fail_at)
    with _bus(bus_url) as bus:
        _refuse_existing(bus, saga_id)
        bus.prepare(choreography)
        bus.publish([start])
    return saga_id


def _refuse_existing(bus: EventBus, saga_id: str) -> None:
    if bus.read_log([saga_id]):
        raise InputError(f"saga {saga_id!r}: already exists on {bus.url}; pick another id")


def run_choreographed_saga(
    definition: SagaDefinition,
    input: Mapping[str, Any],
    saga_id: str | None = None,
    bus_url: BusRef = None,
    *,
    fail_at: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    names: EventNames | None = None,
    state_dir: str | Path | None = None,
    agents: bool | None = None,
) -> dict[str, Any]:
    """Start a saga, run its agents in this process until it ends, and return its view.

    The view has the same keys as orchestration's ``status`` (``mode`` is ``choreography``).
    ``agents=None`` runs in this process every agent that is not already listening elsewhere
    (RabbitMQ tells; a log bus does not, so all run here), ``True`` runs all of them here,
    ``False`` none (agents run as their own processes). Two copies of one agent on RabbitMQ
    would split its events between two ledgers, hence the default.
    BusError when the saga has not ended within ``timeout`` seconds or an agent lost the bus.
    """
    choreography = derive_choreography(definition, names)
    saga_id = saga_id or new_saga_id()
    _check_start(choreography, input, saga_id, fail_at)
    start = _start_message(choreography, input, saga_id, fail_at)
    with _bus(bus_url, state_dir=state_dir) as bus:
        _refuse_existing(bus, saga_id)
        bus.prepare(choreography)
        steps = [
            step
            for step in choreography.step_names
            if agents or (agents is None and not bus.listeners(f"{choreography.saga}.{step}"))
        ]
        with agents_in_threads(bus, choreography, steps) as failed:
            bus.publish([start])
            messages = bus.wait_log([saga_id], is_finished, timeout, interrupt=failed.signal)
            failed.raise_if_any()
        if not is_finished(messages):
            raise BusError(f"saga {saga_id!r}: did not end within {timeout:g}s on {bus.url}")
        return choreography_view(saga_id, messages)


class AgentFailures:
    """Errors raised by agent threads; ``signal`` is set at the first one."""

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
            if isinstance(error, BusError):
                raise error
            raise BusError(f"an agent stopped: {describe_error(error)}") from error


@contextmanager
def agents_in_threads(
    bus: EventBus, choreography: Choreography, steps: Collection[str] | None = None
) -> Iterator[AgentFailures]:
    """Run the agents of ``steps`` (default: all), each in its own thread, while the block runs.

    Yields once all agents listen. When the block ends, each agent finishes the event in
    hand and stops. An agent that dies records its error in the yielded object.
    """
    stop = threading.Event()
    failures = AgentFailures()
    threads: list[threading.Thread] = []
    readies: list[threading.Event] = []

    def run(step: str, ready: threading.Event) -> None:
        try:
            with bus.ledger(f"{choreography.saga}.{step}") as ledger:
                bus.serve(agent_consumer(choreography, step, ledger), stop, ready)
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
                raise BusError(f"agents did not start within {AGENT_START_TIMEOUT:g}s")
        failures.raise_if_any()
        yield failures
    finally:
        stop.set()
        for thread in threads:
            thread.join()


def wait_for_sagas(
    bus_url: BusRef, saga_ids: Collection[str], timeout: float = DEFAULT_TIMEOUT
) -> dict[str, dict[str, Any]]:
    """Wait until every saga ended (or ``timeout`` passed); return each one's view by id.

    A saga still running at the timeout is returned with its current status.
    """
    ids = [validate_saga_id(s) for s in saga_ids]

    def all_finished(messages: list[SagaMessage]) -> bool:
        done = {m["saga_id"] for m in messages if m["terminal"] is not None}
        return done >= set(ids)

    with _bus(bus_url, create=False) as bus:
        messages = bus.wait_log(ids, all_finished, timeout)
    by_saga: dict[str, list[SagaMessage]] = {s: [] for s in ids}
    for m in messages:
        by_saga[m["saga_id"]].append(m)
    return {s: choreography_view(s, by_saga[s]) for s in ids if by_saga[s]}


def saga_events(bus_url: BusRef, saga_id: str) -> list[SagaMessage]:
    """A saga's events as the bus logged them, in order, each once ([] when none)."""
    validate_saga_id(saga_id)
    with _bus(bus_url, create=False) as bus:
        return bus.read_log([saga_id])


def choreography_status(bus_url: BusRef, saga_id: str) -> dict[str, Any]:
    """The JSON view of a choreographed saga; SagaNotFoundError when the bus has no event of it."""
    return choreography_view(saga_id, saga_events(bus_url, saga_id))


def choreographed_sagas(bus_url: BusRef = None) -> list[dict[str, Any]]:
    """The JSON view (as :func:`choreography_status` prints it) of every saga on the bus log.

    One read of the log, folded per saga, in the order sagas first appear. A SQLite log
    that does not exist yet is not created: there is nothing to list.
    """
    with _bus(bus_url, create=False) as bus:
        messages = bus.read_log()
    by_saga: dict[str, list[SagaMessage]] = {}
    for message in messages:
        by_saga.setdefault(message["saga_id"], []).append(message)
    return [choreography_view(saga_id, events) for saga_id, events in by_saga.items()]
