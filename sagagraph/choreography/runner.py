"""Run choreographed sagas: start one, run its step services (in this process or one per process),
and read what happened from the event log.

These are the functions the CLI wires:

- :func:`run_choreographed_saga`: start a saga, run every service in this process, return its view;
- :func:`run_step_service`: run ONE service until stopped (``sagagraph agent NAME --bus amqp://...``);
- :func:`start_choreographed_saga` / :func:`wait_for_sagas`: start sagas for step services that run
  elsewhere, and wait for them to end;
- :func:`saga_events`: a saga's event log; :func:`choreography_status`: its JSON view;
  :func:`choreographed_sagas`: the views of every saga on the bus.

A bus is named by URL (``memory://``, ``sqlite:///path``, ``amqp://...``) or passed as an
:class:`~sagagraph.choreography.bus.EventBus` object.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, Literal

from sagagraph.checkpoints.urls import default_bus_url
from sagagraph.choreography.admission import with_refusals
from sagagraph.choreography.bus import EventBus
from sagagraph.choreography.hosting import (
    AGENT_START_TIMEOUT,
    BusRef,
    CommitHook,
    ServiceFailures,
    bus_for,
    run_step_service,
    service_consumer,
    services_in_threads,
)
from sagagraph.choreography.messages import SagaMessage, encode, new_message
from sagagraph.choreography.projection import EventTeller, choreography_view
from sagagraph.choreography.step_reactions import DefinitionFor
from sagagraph.choreography.topology import Choreography, EventNames, derive_choreography
from sagagraph.errors import BusError, ConfigurationError, InputError, SagaNotFoundError
from sagagraph.saga.hooks import SagaHooks, combine_hooks
from sagagraph.saga.names import new_saga_id, validate_saga_id
from sagagraph.saga.protocol import SagaDefinition
from sagagraph.saga.tracing import OPEN_TELEMETRY, saga_span

__all__ = [
    "AGENT_START_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "BusRef",
    "CommitHook",
    "ServiceFailures",
    "ServicePlacement",
    "choreographed_sagas",
    "choreography_status",
    "default_bus_url",
    "place_services",
    "run_choreographed_saga",
    "run_step_service",
    "saga_events",
    "service_consumer",
    "services_in_threads",
    "start_choreographed_saga",
    "wait_for_sagas",
]

log = logging.getLogger("sagagraph")

DEFAULT_TIMEOUT = 600.0
"""Seconds :func:`run_choreographed_saga` waits for a saga to end."""

ServicePlacement = Literal["auto", "in-process", "external"]
"""Where a run's step services run: ``in-process`` (threads of the run), ``external`` (each its own
``sagagraph agent`` process, already serving), ``auto`` (external when every step service serves,
in-process when none does; a mix is refused)."""


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
    """Publish a saga's start event for step services running elsewhere; return its id.

    InputError when the id is already on the bus.
    """
    choreography = derive_choreography(definition, names)
    saga_id = saga_id or new_saga_id()
    _check_start(choreography, input, saga_id, fail_at)
    # The start event carries this span's context: the step services' spans join its trace.
    with saga_span(saga_id, "start"):
        start = _start_message(choreography, input, saga_id, fail_at)
        with bus_for(bus_url) as bus:
            _refuse_existing(bus, saga_id)
            bus.prepare(choreography)
            bus.publish([start])
    return saga_id


def _refuse_existing(bus: EventBus, saga_id: str) -> None:
    # Only a start event makes a saga exist: stray events under its id were refused.
    if any(m["kind"] == "start" for m in bus.read_log([saga_id])):
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
    agents: ServicePlacement | bool | None = None,
    definition_for: DefinitionFor | None = None,
    hooks: SagaHooks | None = None,
) -> dict[str, Any]:
    """Start a saga, let its step services run it until it ends, and return its view.

    The view has the same keys as orchestration's ``status`` (``mode`` is ``choreography``).
    ``agents`` says where the step services run (:data:`ServicePlacement`; None is ``auto``, True
    ``in-process``, False ``external``): never a mix, because a step service started here beside a
    copy serving elsewhere would split its events between two ledgers, and a step service missing
    from a set of processes must not be run here silently. ``hooks`` observe the run and the
    step services run here (each event as the log shows it, in log order). ConfigurationError
    when the step services serving on the bus do not fit; BusError when the saga has not ended
    within ``timeout`` seconds or a step service lost the bus.
    """
    choreography = derive_choreography(definition, names)
    saga_id = saga_id or new_saga_id()
    _check_start(choreography, input, saga_id, fail_at)
    if definition.check_input is not None:  # as run_saga: bad input starts no saga
        definition.check_input(input)
    told = combine_hooks(OPEN_TELEMETRY, hooks)
    told.on_run_start(saga_id, "run")
    try:
        with bus_for(bus_url, state_dir=state_dir) as bus:
            # The start event carries the run's trace context: the step services' spans join it.
            start = _start_message(choreography, input, saga_id, fail_at)
            _refuse_existing(bus, saga_id)
            bus.prepare(choreography)
            steps = place_services(bus, choreography, agents)
            messages = serve_until_ended(
                bus,
                choreography,
                [saga_id],
                steps,
                timeout,
                before=lambda: bus.publish([start]),
                definition_for=definition_for,
                hooks=hooks,
            )
            view = choreography_view(saga_id, messages)
    except BaseException:
        told.on_run_end(saga_id, "error")
        raise
    told.on_run_end(saga_id, str(view["status"]))
    return view


def place_services(
    bus: EventBus, choreography: Choreography, agents: ServicePlacement | bool | None
) -> list[str]:
    """The steps whose step services run in this process; ConfigurationError when that is unsafe."""
    placement: ServicePlacement = (
        "auto" if agents is None else "in-process" if agents is True else "external"
    )
    if isinstance(agents, str):
        placement = agents
    serving = {s: bus.listeners(f"{choreography.saga}.{s}") > 0 for s in choreography.step_names}
    live = [s for s, on in serving.items() if on]
    missing = [s for s, on in serving.items() if not on]
    start_them = "start them with: sagagraph agent NAME --bus URL"
    if placement == "external" and missing:
        raise ConfigurationError(
            f"--agents external: no service serves {', '.join(missing)} on {bus.url}; {start_them}"
        )
    if placement == "in-process" and live:
        raise ConfigurationError(
            f"--agents in-process: {', '.join(live)} already serve on {bus.url}; a second copy "
            "would split their events (stop them, or use --agents external)"
        )
    if placement == "auto" and live and missing:
        serve = "step service {} serves" if len(live) == 1 else "step services {} serve"
        do_not = "does not" if len(missing) == 1 else "do not"
        raise ConfigurationError(
            f"{serve.format(', '.join(live))} on {bus.url} but {', '.join(missing)} {do_not}: "
            f"{start_them} (or stop the others to run all step services in this process)"
        )
    return [] if placement == "external" or (placement == "auto" and live) else missing


def serve_until_ended(
    bus: EventBus,
    choreography: Choreography,
    saga_ids: Collection[str],
    steps: Collection[str],
    timeout: float,
    *,
    before: Callable[[], None] | None = None,
    definition_for: DefinitionFor | None = None,
    hooks: SagaHooks | None = None,
) -> list[SagaMessage]:
    """Run the step services of ``steps`` here until every saga of ``saga_ids`` ended; their events.

    ``before`` runs once the step services listen (it publishes a start event). ``hooks``
    observe the step services and each event of the sagas as the log shows it. BusError when
    a saga has not ended within ``timeout`` seconds or a step service lost the bus.
    """
    ids = set(saga_ids)
    tell = EventTeller(combine_hooks(hooks)) if hooks is not None else None

    def all_finished(messages: list[SagaMessage]) -> bool:
        if tell is not None:
            tell(messages)
        return {m["saga_id"] for m in messages if m["terminal"] is not None} >= ids

    with services_in_threads(
        bus, choreography, steps, definition_for=definition_for, hooks=hooks
    ) as failed:
        if before is not None:
            before()
        messages = bus.wait_log(ids, all_finished, timeout, interrupt=failed.signal)
        failed.raise_if_any()
    if not all_finished(messages):
        left = sorted(ids - {m["saga_id"] for m in messages if m["terminal"] is not None})
        raise BusError(
            f"saga {', '.join(map(repr, left))}: did not end within {timeout:g}s on {bus.url}"
        )
    return messages


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

    with bus_for(bus_url, create=False) as bus:
        messages = bus.wait_log(ids, all_finished, timeout)
    by_saga: dict[str, list[SagaMessage]] = {s: [] for s in ids}
    for m in messages:
        by_saga[m["saga_id"]].append(m)
    return {s: choreography_view(s, by_saga[s]) for s in ids if by_saga[s]}


def saga_events(
    bus_url: BusRef,
    saga_id: str,
    definition: SagaDefinition | None = None,
    *,
    names: EventNames | None = None,
) -> list[dict[str, Any]]:
    """A saga's events as the bus logged them, in order, each once ([] when none).

    Every event on the log is listed, the refused ones too: each of those carries
    ``refused``, why the step services do not obey it (unsigned or badly signed, when the bus has a
    key; with ``definition``, also an event the saga's history does not allow).
    """
    validate_saga_id(saga_id)
    with bus_for(bus_url, create=False) as bus:
        logged = bus.read_log([saga_id], unauthentic=True)
        check = bus.authenticator.check
    choreography = derive_choreography(definition, names) if definition is not None else None
    return with_refusals(choreography, saga_id, logged, check)


def choreography_status(bus_url: BusRef, saga_id: str) -> dict[str, Any]:
    """The JSON view of a choreographed saga; SagaNotFoundError when the bus has no event of it."""
    validate_saga_id(saga_id)
    with bus_for(bus_url, create=False) as bus:
        return choreography_view(saga_id, bus.read_log([saga_id]))


def choreographed_sagas(bus_url: BusRef = None) -> list[dict[str, Any]]:
    """The JSON view (as :func:`choreography_status` prints it) of every saga on the bus log.

    One read of the log, folded per saga, in the order sagas first appear. A SQLite log
    that does not exist yet is not created: there is nothing to list.
    """
    with bus_for(bus_url, create=False) as bus:
        messages = bus.read_log()
    by_saga: dict[str, list[SagaMessage]] = {}
    for message in messages:
        by_saga.setdefault(message["saga_id"], []).append(message)
    views = []
    for saga_id, events in by_saga.items():
        try:
            views.append(choreography_view(saga_id, events))
        except SagaNotFoundError:
            continue  # only events nobody started a saga for: refused by the step services
    return views
