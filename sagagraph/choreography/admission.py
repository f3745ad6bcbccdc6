"""Which events an agent obeys: only those the saga's own history allows.

A bus is a dumb pipe: anyone who can publish can put any event on it. Before an agent acts on
an event it reads the saga's history (its events on the bus log) and applies the rule the LLM
router's guard applies to a proposed step (:func:`~sagagraph.saga.guard.allowed_now`): a
forward step runs only when it is the step due now, never after the saga started to
compensate or ended. A compensation is obeyed only when the step that emitted it was due, and
never after the saga ended. Everything else is refused with a reason, recorded by the agent,
and changes nothing: not the saga, not its files, and nobody is paged for it.

History is folded as the projection folds it: the first event of each type counts, so a copy
under another id (a replay, a forgery) is not the saga's event of that type.
"""

from __future__ import annotations

from collections.abc import Iterable

from sagagraph.choreography.messages import SagaMessage
from sagagraph.choreography.topology import AgentRole, Choreography
from sagagraph.errors import InputError
from sagagraph.saga.guard import allowed_now
from sagagraph.saga.ids import validate_saga_id


def refusal(
    choreography: Choreography,
    role: AgentRole,
    message: SagaMessage,
    history: Iterable[SagaMessage],
) -> str | None:
    """Why ``role``'s agent must not act on ``message`` (None: the history allows it)."""
    try:
        validate_saga_id(message["saga_id"])
    except InputError as error:
        return f"not a valid saga id: {error}"
    accepted, refused = fold_history(choreography, message["saga_id"], history)
    if message["id"] in refused:
        return refused[message["id"]]
    own = accepted.get(message["type"])
    if own is None:
        return f"{message['type']!r} is not on the saga's event log"
    if own["id"] != message["id"]:
        return f"the saga's {message['type']!r} event is {own['id']!r}, not this copy"
    ended = _ended(accepted)
    if ended is not None:
        return ended
    if message["type"] == role.forward_trigger:
        committed, compensating = _progress(choreography, accepted)
        if role.name not in allowed_now(choreography.step_names, committed, halted=compensating):
            return f"{role.name} is not due now ({_describe(committed, compensating)})"
        return None
    if message["type"] == role.compensation_trigger:
        return None  # accepted, so the next step was due: this step had committed
    return f"{role.name} does not react to {message['type']!r}"


def fold_history(
    choreography: Choreography, saga_id: str, history: Iterable[SagaMessage]
) -> tuple[dict[str, SagaMessage], dict[str, str]]:
    """The saga's own events by type, replayed in log order through the protocol's rules,
    and the reason each other event (by id) was not the saga's."""
    accepted: dict[str, SagaMessage] = {}
    refused: dict[str, str] = {}
    for event in history:
        if event["saga_id"] != saga_id or event["saga"] != choreography.saga:
            continue
        if event["type"] in accepted:
            if accepted[event["type"]]["id"] != event["id"]:
                refused[event["id"]] = f"a second {event['type']!r} event"
            continue
        reason = _inadmissible(choreography, event, accepted)
        if reason is None:
            accepted[event["type"]] = event
        else:
            refused.setdefault(event["id"], reason)
    return accepted, refused


def _inadmissible(
    choreography: Choreography, event: SagaMessage, accepted: dict[str, SagaMessage]
) -> str | None:
    """Why ``event`` cannot follow the ``accepted`` events (None: it can)."""
    if event["type"] == choreography.start_event:
        return None if event["kind"] == "start" else "a start event of the wrong kind"
    emitter = _emitter(choreography, event["type"])
    if emitter is None:
        return f"{event['type']!r} is not an event of saga {choreography.saga!r}"
    role, kind = emitter
    if event["kind"] != kind:
        return f"{event['type']!r} must be a {kind!r} event, not {event['kind']!r}"
    if choreography.start_event not in accepted:
        return f"the saga never started (no {choreography.start_event!r} event)"
    ended = _ended(accepted)
    if ended is not None:
        return ended
    if role.forward_trigger not in accepted:
        return f"{role.name} was never due ({role.forward_trigger!r} is missing)"
    if kind == "done":
        committed, compensating = _progress(choreography, accepted)
        if role.name not in allowed_now(choreography.step_names, committed, halted=compensating):
            return f"{role.name} could not commit now ({_describe(committed, compensating)})"
    return None


def _emitter(choreography: Choreography, event_type: str) -> tuple[AgentRole, str] | None:
    for role in choreography.roles:
        if event_type == role.success_event:
            return role, "done"
        if event_type == role.compensation_event:
            return role, "compensated"
        if event_type == role.compensation_failed_event:
            return role, "compensation_failed"
    return None


def _ended(accepted: dict[str, SagaMessage]) -> str | None:
    for event in accepted.values():
        if event["terminal"] is not None:
            return f"the saga already ended ({event['terminal']})"
    return None


def _progress(
    choreography: Choreography, accepted: dict[str, SagaMessage]
) -> tuple[list[str], bool]:
    """Steps committed now, and whether the saga started to compensate."""
    committed = [
        r.name
        for r in choreography.roles
        if r.success_event in accepted and r.compensation_event not in accepted
    ]
    compensating = any(
        e["kind"] in ("compensated", "compensation_failed") for e in accepted.values()
    )
    return committed, compensating


def _describe(committed: list[str], compensating: bool) -> str:
    if compensating:
        return "the saga is compensating"
    return f"committed: {', '.join(committed) or 'nothing'}"
