"""What an operator can do to one saga from the console: a table of actions.

Each :class:`Action` has a name (its URL: ``POST /sagas/{id}/actions/{name}``), a predicate
saying when the saga's view allows it, and a handler that drives the saga through the engine's
own API (``resolve_saga``, ``rollback_saga``) on the paper saga built from the saga's recorded
settings, as the CLI's ``resolve`` does. Every action asks who acts and why; the engine records
both in the saga's events (the operator's note of a resolve, the reason of a rollback), so the
audit trail says it. Adding an action is one :func:`register_action` call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sagagraph.console.source import SagaSource
from sagagraph.errors import InputError

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
    def note(self) -> str:
        """What the saga's events record: why, and who acted from where."""
        from sagagraph.console.security import is_loopback

        remote = self.client is not None and not is_loopback(self.client)
        where = f"console, from {self.client}" if remote else "console"
        return f"{self.why} (by {self.who}, {where})"


@dataclass(frozen=True)
class Action:
    """One row of the table: what the operator sees, when it applies, what it does."""

    name: str
    label: str
    """The button's text."""
    help: str
    """One line: what happens."""
    allowed: Callable[[Mapping[str, Any]], bool]
    """True when the saga's view allows the action now."""
    run: Callable[[ActionRequest], Mapping[str, Any]]
    """Does it; returns the saga's view afterwards. Raises SagaGraphError (one line) when
    the saga refuses."""


ACTIONS: dict[str, Action] = {}
"""Every action, by name, in the order the saga page shows them."""


def register_action(action: Action) -> Action:
    """Add ``action`` to the table (replacing one of the same name); return it."""
    ACTIONS[action.name] = action
    return action


def allowed_actions(view: Mapping[str, Any]) -> list[Action]:
    """The actions ``view``'s saga allows now."""
    return [a for a in ACTIONS.values() if a.allowed(view)]


def check_request(who: str, why: str) -> tuple[str, str]:
    """``who`` and ``why`` on one line each; InputError naming the field when one is empty."""
    cleaned = []
    for field, value in (("who", who), ("why", why)):
        text = " ".join(str(value).split())[:MAX_TEXT]
        if not text:
            raise InputError(f"{field}: required (who acts, and why, go into the saga's events)")
        cleaned.append(text)
    return cleaned[0], cleaned[1]


def orchestrated_here(view: Mapping[str, Any]) -> bool:
    """True when the console can drive ``view``'s saga: it is the paper saga (the one the
    sagagraph command builds), run by a graph, not by agents on a bus."""
    from sagagraph.cli.foreign import foreign_definition

    return view.get("mode") != "choreography" and foreign_definition(dict(view)) is None


@contextmanager
def paper_app_of(request: ActionRequest) -> Iterator[Any]:
    """The paper saga compiled as ``request``'s saga was started (router, mode, outputs), to
    run compensations only: no model key is needed."""
    from sagagraph.cli.apps import paper_app, recorded_settings

    settings, router = recorded_settings(dict(request.view), request.source.args("console"))
    with paper_app(settings, router, compensating=True) as app:
        yield app


def waiting_for_operator(view: Mapping[str, Any]) -> bool:
    return orchestrated_here(view) and bool(view.get("waiting_for_operator"))


def unfinished(view: Mapping[str, Any]) -> bool:
    """Running, compensating or queued (dead-lettered included), not waiting for an operator."""
    return (
        orchestrated_here(view)
        and not view.get("waiting_for_operator")
        and view.get("status") in ("running", "compensating", "queued")
    )


def resolve(how: str) -> Callable[[ActionRequest], Mapping[str, Any]]:
    def run(request: ActionRequest) -> Mapping[str, Any]:
        from sagagraph.graph.runner import resolve_saga

        with paper_app_of(request) as app:
            return resolve_saga(
                app, request.saga_id, "retry" if how == "retry" else "skip", note=request.note
            )

    return run


def rollback(request: ActionRequest) -> Mapping[str, Any]:
    from sagagraph.graph.recover import rollback_saga

    with paper_app_of(request) as app:
        return rollback_saga(app, request.saga_id, reason=f"rollback: {request.note}")


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
        "rollback",
        "Roll back this saga",
        "compensates this unfinished saga's committed steps, newest first",
        unfinished,
        rollback,
    )
)
