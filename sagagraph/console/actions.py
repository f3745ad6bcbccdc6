"""What an operator can do to one saga from the console: a table of actions.

Each :class:`Action` has a name (its URL: ``POST /sagas/{id}/actions/{name}``), a predicate
saying when the saga's view allows it, and a handler that calls one operation of the
application core (:class:`~sagagraph.service.SagaService`: resolve, rollback, approve, reject,
cancel, requeue), as the CLI's verbs do. Every action asks who
acts and why; the engine records both in the saga's events (the operator's note of a resolve,
the reason of a rollback or of a rejection), so the audit trail says it. Adding an action is
one :func:`register_action` call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sagagraph.console.source import SagaSource
from sagagraph.errors import InputError
from sagagraph.graph.definitions import WORKER_KEY

MAX_TEXT = 500
"""Longest ``who`` or ``why`` kept (characters)."""


@dataclass(frozen=True)
class ActionRequest:
    """One operator's request to act on one saga."""

    source: SagaSource
    view: Mapping[str, Any]
    """The saga's view as the console read it (with its ``input``)."""
    who: str
    why: str
    client: str | None = None
    """The address the request came from, recorded when it is not this machine (``who`` is
    what the operator typed; the address is what the network says)."""

    @property
    def saga_id(self) -> str:
        return str(self.view["saga_id"])

    @property
    def where(self) -> str:
        """``console``, or ``console, from ADDRESS`` when the request came from elsewhere."""
        from sagagraph.console.security import is_loopback

        remote = self.client is not None and not is_loopback(self.client)
        return f"console, from {self.client}" if remote else "console"

    @property
    def note(self) -> str:
        """What the saga's events record: why, and who acted from where."""
        return f"{self.why} (by {self.who}, {self.where})"


@dataclass(frozen=True)
class Action:
    """One row of the table: what the operator sees, when it applies, what it does."""

    name: str
    label: str
    """The button's text."""
    help: str
    """One line: what happens."""
    allowed: Callable[[Mapping[str, Any], SagaSource], bool]
    """True when the saga's view allows the action now, on this console's source."""
    run: Callable[[ActionRequest], Mapping[str, Any]]
    """Does it; returns the saga's view afterwards. Raises SagaGraphError (one line) when
    the saga refuses."""


ACTIONS: dict[str, Action] = {}
"""Every action, by name, in the order the saga page shows them."""


def register_action(action: Action) -> Action:
    """Add ``action`` to the table (replacing one of the same name); return it."""
    ACTIONS[action.name] = action
    return action


def allowed_actions(view: Mapping[str, Any], source: SagaSource | None = None) -> list[Action]:
    """The actions ``view``'s saga allows now."""
    known = source if source is not None else SagaSource.from_urls()
    return [a for a in ACTIONS.values() if a.allowed(view, known)]


def check_request(who: str, why: str) -> tuple[str, str]:
    """``who`` and ``why`` on one line each; InputError naming the field when one is empty."""
    cleaned = []
    for field, value in (("who", who), ("why", why)):
        text = " ".join(str(value).split())[:MAX_TEXT]
        if not text:
            raise InputError(f"{field}: required (who acts, and why, go into the saga's events)")
        cleaned.append(text)
    return cleaned[0], cleaned[1]


def orchestrated_here(view: Mapping[str, Any], source: SagaSource) -> bool:
    """True when the console can drive ``view``'s saga: a graph runs it (not agents on a
    bus), and the console knows its definition (the paper's, or ``$SAGAGRAPH_APP``'s)."""
    if view.get("mode") == "choreography":
        return False
    return source.service.definitions.cannot_act(view, "console") is None


def waiting_for_operator(view: Mapping[str, Any], source: SagaSource) -> bool:
    """A compensation gave up (tool calls waiting for approval are answered otherwise; a
    step past the pivot that keeps failing by :func:`failing_past_the_pivot`)."""
    return (
        bool(view.get("waiting_for_operator"))
        and not view.get("approvals")
        and not view.get("forward_failure")
        and orchestrated_here(view, source)
    )


def failing_past_the_pivot(view: Mapping[str, Any], source: SagaSource) -> bool:
    """A retriable step past the pivot failed after its retries: the saga cannot roll back,
    so the operator retries the step or takes its work as done by hand."""
    return (
        bool(view.get("waiting_for_operator"))
        and bool(view.get("forward_failure"))
        and not view.get("approvals")
        and orchestrated_here(view, source)
    )


def approvals_waiting(view: Mapping[str, Any], source: SagaSource) -> bool:
    """Tool calls wait for approval, and the console can build the saga's graph."""
    return bool(view.get("approvals")) and orchestrated_here(view, source)


def approve(request: ActionRequest) -> Mapping[str, Any]:
    return request.source.service.approve(request.saga_id)


def reject(request: ActionRequest) -> Mapping[str, Any]:
    return request.source.service.reject(request.saga_id, request.note)


def unfinished(view: Mapping[str, Any], source: SagaSource) -> bool:
    """Running, compensating or queued (dead-lettered included), not waiting for an operator,
    and not past its pivot (a saga past it only goes forward: rollback refuses it)."""
    return (
        not view.get("waiting_for_operator")
        and not view.get("past_pivot")
        and view.get("status") in ("running", "compensating", "queued")
        and orchestrated_here(view, source)
    )


def on_the_work_queue(view: Mapping[str, Any]) -> bool:
    """True when ``view``'s saga was submitted to the work queue (its input records where)."""
    saga_input = view.get("input")
    return isinstance(saga_input, Mapping) and isinstance(saga_input.get(WORKER_KEY), Mapping)


def dead_lettered(view: Mapping[str, Any]) -> bool:
    return bool(view.get("dead_letter") or view.get("dead_lettered"))


def cancellable(view: Mapping[str, Any], source: SagaSource | None = None) -> bool:
    """Queued or running on the work queue, not finished, not waiting for an operator."""
    return (
        on_the_work_queue(view)
        and not view.get("waiting_for_operator")
        and view.get("status") in ("queued", "running")
    )


def requeueable(view: Mapping[str, Any], source: SagaSource | None = None) -> bool:
    """Dead-lettered by the work queue."""
    return on_the_work_queue(view) and dead_lettered(view)


def queue_of(request: ActionRequest) -> str | None:
    """The console's queue URL, naming the queue the saga was submitted to: a requeued saga
    goes back where the workers that run its kind read (the broker is the console's)."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    from sagagraph.workers.address import queue_address

    name = request.view["input"][WORKER_KEY].get("queue")
    address = queue_address(request.source.store.queue)
    if not name or name == address.name:
        return request.source.store.queue
    parts = urlsplit(address.url)
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "queue"]
    return urlunsplit(parts._replace(query=urlencode([*kept, ("queue", str(name))])))


def cancel(request: ActionRequest) -> Mapping[str, Any]:
    return request.source.service.cancel(
        request.saga_id,
        by=request.who,
        why=f"{request.why} ({request.where})",
        queue=queue_of(request),
    )


def requeue(request: ActionRequest) -> Mapping[str, Any]:
    return request.source.service.requeue(
        request.saga_id, queue=queue_of(request), note=request.note
    )


def resolve(how: str) -> Callable[[ActionRequest], Mapping[str, Any]]:
    def run(request: ActionRequest) -> Mapping[str, Any]:
        action = "retry" if how == "retry" else "skip"
        return request.source.service.resolve(request.saga_id, action, note=request.note)

    return run


def rollback(request: ActionRequest) -> Mapping[str, Any]:
    return request.source.service.rollback(request.saga_id, reason=f"rollback: {request.note}")


register_action(
    Action(
        "retry",
        "Retry the compensation",
        "runs the compensation that gave up again; the rollback then carries on",
        waiting_for_operator,
        resolve("retry"),
    )
)
register_action(
    Action(
        "skip",
        "Skip it, taking responsibility",
        "records what could not be undone and carries on; the saga ends resolved_by_operator",
        waiting_for_operator,
        resolve("skip"),
    )
)
register_action(
    Action(
        "retry_step",
        "Retry the step",
        "runs the step past the pivot that failed again; the saga carries forward",
        failing_past_the_pivot,
        resolve("retry"),
    )
)
register_action(
    Action(
        "done_by_hand",
        "Take the step as done by hand",
        "records, with your note, that the step's work was done by hand; the saga carries forward",
        failing_past_the_pivot,
        resolve("skip"),
    )
)
register_action(
    Action(
        "approve",
        "Approve the waiting tool calls",
        "lets every tool call waiting for approval run; the saga carries on",
        approvals_waiting,
        approve,
    )
)
register_action(
    Action(
        "reject",
        "Reject the waiting tool calls",
        "refuses them: the agent's step fails and the saga compensates, newest first",
        approvals_waiting,
        reject,
    )
)
register_action(
    Action(
        "rollback",
        "Roll back this saga",
        "compensates this unfinished saga's committed steps, newest first",
        unfinished,
        rollback,
    )
)
register_action(
    Action(
        "cancel",
        "Cancel this saga",
        "stops it on the work queue: compensated now if queued, by its worker at its next step "
        "if running",
        cancellable,
        cancel,
    )
)
register_action(
    Action(
        "requeue",
        "Requeue it",
        "puts this dead-lettered saga back on the work queue with a fresh delivery count",
        requeueable,
        requeue,
    )
)
