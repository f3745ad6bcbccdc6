"""The lifecycle of choreographed sagas after a crash: ``recover`` and ``resume`` find them.

A choreographed saga lives in the bus log and in the step services' durable subscriptions (log
cursors, queues) and ledgers. A process that died (a ``run`` with its services in threads, or an
service process) left its events where they were: running the saga's services again, from their
cursors, finishes it, since each step service recognises what it handled before. So recovering is
driving the step services until every unfinished saga ended. ``compensate=True`` first rolls each
running saga back from the step due next: that step's compensation event is published
without running it, and the services' history rule refuses that step's forward event from then on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict, Unpack

from sagagraph.choreography.admission import fold_history
from sagagraph.choreography.bus import EventBus
from sagagraph.choreography.hosting import bus_for
from sagagraph.choreography.ledger import StepLedger
from sagagraph.choreography.messages import SagaMessage
from sagagraph.choreography.projection import choreography_view
from sagagraph.choreography.runner import (
    DEFAULT_TIMEOUT,
    BusRef,
    ServicePlacement,
    choreographed_sagas,
    place_services,
    serve_until_ended,
)
from sagagraph.choreography.saga_facts import facts_from_history
from sagagraph.choreography.step_reactions import DefinitionFor
from sagagraph.choreography.step_service import StepService
from sagagraph.choreography.topology import Choreography, EventNames, derive_choreography
from sagagraph.errors import SagaNotFoundError
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.names import validate_saga_id
from sagagraph.saga.protocol import SagaDefinition

UNFINISHED = ("running", "compensating")
ABORT_REASON = "rolled back by recover --compensate"


def unfinished_choreographed(bus_url: BusRef = None) -> list[dict[str, Any]]:
    """Views of the sagas on the bus log that are still running or compensating."""
    return [v for v in choreographed_sagas(bus_url) if v["status"] in UNFINISHED]


class ServiceOptions(TypedDict, total=False):
    """How :func:`recover_choreographed` and :func:`resume_choreographed` run the step services."""

    timeout: float
    """Seconds each saga may take to end (default ``DEFAULT_TIMEOUT``); BusError after."""
    agents: ServicePlacement | bool | None
    """Which step services run here, as :func:`place_services` reads it."""
    names: EventNames | None
    """The saga's event names, when not derived from its steps."""
    state_dir: str | Path | None
    """Where the step services' ledgers are."""
    definition_for: DefinitionFor | None
    """The definition a saga recorded it was started with (its settings)."""
    hooks: SagaHooks | None
    """Observe the step services run here, as under orchestration (an alert on escalation)."""


def recover_choreographed(
    definition: SagaDefinition,
    bus_url: BusRef = None,
    *,
    compensate: bool = False,
    **options: Unpack[ServiceOptions],
) -> list[dict[str, Any]]:
    """Finish every unfinished saga of ``definition``'s type on the bus; their final views.

    Forward by default; ``compensate=True`` rolls running sagas back instead (a saga already
    compensating goes on compensating). Step services run where :func:`place_services` says. Nothing
    is created when the bus log does not exist. BusError when a saga has not ended within
    ``timeout`` seconds.
    """
    with _opened(definition, bus_url, options) as (bus, choreography):
        pending = [v for v in unfinished_choreographed(bus) if v["saga"] == choreography.saga]
        if not pending:
            return []
        ids = [v["saga_id"] for v in pending]
        return _finish(bus, choreography, ids, options, compensate=compensate)


def resume_choreographed(
    definition: SagaDefinition,
    saga_id: str,
    bus_url: BusRef = None,
    **options: Unpack[ServiceOptions],
) -> dict[str, Any]:
    """Continue one choreographed saga until it ends; its view (at once when it had ended).

    SagaNotFoundError when the bus has no start event for it.
    """
    validate_saga_id(saga_id)
    with _opened(definition, bus_url, options) as (bus, choreography):
        view = choreography_view(saga_id, bus.read_log([saga_id]))
        if view["status"] not in UNFINISHED:
            return view
        if view["saga"] != choreography.saga:
            raise SagaNotFoundError(
                f"saga {saga_id!r} is a {view['saga']!r} saga, not {choreography.saga!r}"
            )
        (final,) = _finish(bus, choreography, [saga_id], options, compensate=False)
        return final


@contextmanager
def _opened(
    definition: SagaDefinition, bus_url: BusRef, options: ServiceOptions
) -> Iterator[tuple[EventBus, Choreography]]:
    """The bus (never created here) and the saga's choreography."""
    choreography = derive_choreography(definition, options.get("names"))
    with bus_for(bus_url, state_dir=options.get("state_dir"), create=False) as bus:
        yield bus, choreography


def _finish(
    bus: EventBus,
    choreography: Choreography,
    saga_ids: list[str],
    options: ServiceOptions,
    *,
    compensate: bool,
) -> list[dict[str, Any]]:
    bus.prepare(choreography)
    steps = place_services(bus, choreography, options.get("agents"))
    if compensate:
        _flush_outboxes(bus, choreography, saga_ids, steps)
        aborts = [_abort(bus, choreography, bus.read_log([saga_id])) for saga_id in saga_ids]
        bus.publish([m for m in aborts if m is not None])
    messages = serve_until_ended(
        bus,
        choreography,
        saga_ids,
        steps,
        options.get("timeout", DEFAULT_TIMEOUT),
        definition_for=options.get("definition_for"),
        hooks=options.get("hooks"),
    )
    by_saga: Mapping[str, list[SagaMessage]] = {
        s: [m for m in messages if m["saga_id"] == s] for s in saga_ids
    }
    return [choreography_view(s, by_saga[s]) for s in saga_ids]


def _flush_outboxes(
    bus: EventBus, choreography: Choreography, saga_ids: list[str], steps: list[str]
) -> None:
    """Publish what the step services run here recorded but may have died before publishing, so
    the log shows every commit before the step to roll back from is chosen."""
    for step in steps:
        with bus.ledger(f"{choreography.saga}.{step}") as ledger:
            bus.publish([m for saga_id in saga_ids for m in ledger.emitted_for(saga_id)])


def _abort(
    bus: EventBus, choreography: Choreography, history: list[SagaMessage]
) -> SagaMessage | None:
    """The compensation event of the step due next in a running saga (None: compensating)."""
    saga_id = history[0]["saga_id"]
    accepted, _ = fold_history(choreography, saga_id, history)
    if any(m["kind"] != "start" and m["kind"] != "done" for m in accepted.values()):
        return None  # already compensating: the cascade goes on by itself
    for role in choreography.roles:
        if role.success_event not in accepted:
            cause = accepted[role.forward_trigger]
            facts = facts_from_history(choreography, accepted)
            with StepLedger(":memory:", f"{choreography.saga}.{role.name}") as scratch:
                service = StepService(
                    choreography, role.name, scratch, authenticator=bus.authenticator
                )
                return service.abort(cause, facts, ABORT_REASON)
    return None
