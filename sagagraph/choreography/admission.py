"""Which events a step service obeys: only those the saga's own history allows.

A bus is a dumb pipe: anyone who can publish can put any event on it. Before a step service acts on
an event it reads the saga's history (its events on the bus log) and applies the rule the LLM
router's guard applies to a proposed step (:func:`~sagagraph.saga.routes.allowed_now`): a
forward step runs only when it is the step due now, never after the saga started to
compensate or ended. Each event must come from the step that owns its type (a ``reviewed``
from the reviewer). A compensation is obeyed only when the step that emitted it was due and
has a cause: the next step's compensation came first (the cascade), or the event records that
step's own failure or halt, or the step was rolled back without running (``recover
--compensate``); so a compensation of a step whose execute is still in flight and has not
failed is refused. Never after the saga ended. Everything else is refused with a reason,
recorded by the step service, and changes nothing: not the saga, not its files, and nobody is paged.

The history holds authenticated events only (the bus drops unsigned and badly signed ones
when it has a key: :mod:`.signing`). It is folded in log order: the first admissible event of
each type counts, so another publication of that type (a forgery, a stale copy) is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sagagraph.choreography.messages import SagaMessage
from sagagraph.choreography.topology import Choreography, StepRole
from sagagraph.errors import InputError
from sagagraph.saga.names import validate_saga_id
from sagagraph.saga.routes import allowed_now


def refusal(
    choreography: Choreography,
    role: StepRole,
    message: SagaMessage,
    history: Iterable[SagaMessage],
) -> str | None:
    """Why ``role``'s step service must not act on ``message`` (None: the history allows it)."""
    return judge(choreography, role, message, history)[0]


def judge(
    choreography: Choreography,
    role: StepRole,
    message: SagaMessage,
    history: Iterable[SagaMessage],
) -> tuple[str | None, dict[str, SagaMessage]]:
    """Why ``role``'s step service must not act on ``message`` (None: allowed), and the saga's
    admitted events by type, which the step service then works from."""
    try:
        validate_saga_id(message["saga_id"])
    except InputError as error:
        return f"not a valid saga id: {error}", {}
    accepted, refused = fold_history(choreography, message["saga_id"], history)
    return _refusal_in(choreography, role, message, accepted, refused), accepted


def _refusal_in(
    choreography: Choreography,
    role: StepRole,
    message: SagaMessage,
    accepted: dict[str, SagaMessage],
    refused: dict[str, str],
) -> str | None:
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
    if event["step"] != role.name:
        return f"{event['type']!r} is {role.name}'s event, not {event['step']!r}'s"
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
    if kind == "compensated" and not _has_cause(role, event, accepted):
        return (
            f"{role.name} compensated without a cause: it recorded no failure or halt of its "
            "own, and no later step compensated first"
        )
    return None


def _has_cause(role: StepRole, event: SagaMessage, accepted: dict[str, SagaMessage]) -> bool:
    """Whether ``role``'s compensation event follows from the saga: the cascade from the next
    step, its own failure or halt, or a roll-back that did not run it (``recover
    --compensate``: nothing ran, so nothing in flight is undone behind its back)."""
    if role.compensation_trigger is not None and role.compensation_trigger in accepted:
        return True
    failure, halted = event["failure"], event["halted"]
    if failure is not None and failure.get("step") == role.name:
        return True
    if halted is not None and halted.get("step") == role.name:
        return True
    return not event["ran_compensation"] and failure is None and halted is None


def _emitter(choreography: Choreography, event_type: str) -> tuple[StepRole, str] | None:
    for role in choreography.roles:
        if event_type == role.success_event:
            return role, "done"
        if event_type == role.compensation_event:
            return role, "compensated"
        if event_type == role.compensation_failed_event:
            return role, "compensation_failed"
    return None


def _ended(accepted: dict[str, SagaMessage]) -> str | None:
    ends = (e["terminal"] for e in accepted.values() if e["terminal"] is not None)
    return next((f"the saga already ended ({end})" for end in ends), None)


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


def with_refusals(
    choreography: Choreography | None,
    saga_id: str,
    logged: Iterable[SagaMessage],
    check: Callable[[SagaMessage], str | None],
) -> list[dict[str, Any]]:
    """The logged events of a saga, each refused one marked with ``refused``: why. A copy
    of an event logged earlier (the same event id) is marked ``duplicate`` and refused.

    ``check`` says why an event is not authentic (:mod:`.signing`); with ``choreography``,
    authentic events the saga's history does not admit are marked too.
    """
    events = list(logged)
    forged = {m["id"]: why for m in events if (why := check(m)) is not None}
    refused: dict[str, str] = {}
    if choreography is not None:
        authentic = [m for m in events if m["id"] not in forged]
        refused = fold_history(choreography, saga_id, authentic)[1]
    marked: list[dict[str, Any]] = []
    seen: set[str] = set()
    for message in events:
        entry: dict[str, Any] = {k: v for k, v in message.items() if k != "refused"}
        why = forged.get(message["id"]) or refused.get(message["id"])
        if message["id"] in seen:
            # A copy of an event already logged (under another row id): the step services
            # deduplicate it by its id, so it re-runs nothing, and it is no second witness.
            entry["duplicate"] = True
            why = f"duplicate of event {message['id']} logged earlier: nothing re-runs"
        seen.add(message["id"])
        if why is not None:
            entry["refused"] = why
        marked.append(entry)
    return marked
