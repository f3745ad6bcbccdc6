"""Where a saga goes after each node: one way after a step, one way after a router's choice;
and the options of the LLM router, whose ``supervisor`` node makes that choice.

A step node routes itself, deciding in the node so that the decision and the step's writes
share one checkpoint (LangGraph runs a failed conditional edge's node again on resume,
langgraph issue 8834), with :func:`after_step`: to ``compensate`` when the step failed or
halted the saga; else to its router's node when the router needs one (the LLM router's
``supervisor``); else where the definition leads (the branches that follow a parallel step)
or where the declared rules choose (:data:`~sagagraph.saga.routes.RULES`). A router node (the
``supervisor``, the blackboard's ``controller``) turns its router's
:class:`~sagagraph.saga.routes.Choice` into a Command with :func:`chosen`. Either way the
decision is told to the hooks (:meth:`~sagagraph.saga.hooks.SagaHooks.on_route`).

:class:`RouterOptions` say how the LLM router (:mod:`sagagraph.graph.llm_router`) asks its chat
model and what it does after bad proposals. They live here, beside the routing every graph
loads, because a caller builds them before it knows whether a saga is routed by a model (the
command line builds them for every run); the router itself is loaded only by a graph that
uses it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from langgraph.graph import END
from langgraph.types import Command

from sagagraph.errors import ConfigurationError
from sagagraph.graph.nodes import SUPERVISOR
from sagagraph.saga.drivers import Flow, Tell
from sagagraph.saga.hooks import NO_HOOKS, RouteDecision, SagaHooks
from sagagraph.saga.names import COMPENSATE
from sagagraph.saga.protocol import SagaDefinition, StepRecord
from sagagraph.saga.records import router_aborted
from sagagraph.saga.routes import FINISH, RULES, Choice, RouteQuestion
from sagagraph.saga.view import Event, make_event

log = logging.getLogger("sagagraph")

RouterMethod = Literal["json_schema", "function_calling", "json_mode", "text"]
Fallback = Literal["deterministic", "abort"]


@dataclass(frozen=True)
class RouterOptions:
    """How the LLM router asks, and what it does when the model keeps proposing badly."""

    max_attempts: int = 2
    """Proposals asked for at each routing decision, including the first (>= 1)."""
    fallback: Fallback = "deterministic"
    """After ``max_attempts`` rejected proposals: ``deterministic`` takes the next step in
    definition order; ``abort`` compensates and ends the saga ``rolled_back``."""
    method: RouterMethod = "json_schema"
    """``json_schema``, ``function_calling`` or ``json_mode`` (``with_structured_output``), or
    ``text`` (plain chat, JSON parsed from the reply, for models without structured output)."""
    strict: bool = True
    """Ask the provider for strict schema adherence (structured methods only)."""

    def __post_init__(self) -> None:
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ConfigurationError(
                f"router max_attempts: must be an integer >= 1, got {self.max_attempts!r}"
            )
        if self.fallback not in ("deterministic", "abort"):
            raise ConfigurationError(
                f"router fallback: expected 'deterministic' or 'abort', got {self.fallback!r}"
            )
        if self.method not in get_args(RouterMethod):
            raise ConfigurationError(
                f"router method: expected one of {', '.join(get_args(RouterMethod))}, "
                f"got {self.method!r}"
            )

    @classmethod
    def from_env(cls, **overrides: Any) -> RouterOptions:
        """Options whose method comes from ``SAGAGRAPH_STRUCTURED_OUTPUT`` unless overridden.

        The variable is shared with the paper engine: one server, one supported form.
        """
        method = os.environ.get("SAGAGRAPH_STRUCTURED_OUTPUT", "").strip().lower()
        if method and "method" not in overrides:
            if method not in get_args(RouterMethod):
                raise ConfigurationError(
                    f"SAGAGRAPH_STRUCTURED_OUTPUT={method!r}: expected one of "
                    f"{', '.join(get_args(RouterMethod))}"
                )
            overrides["method"] = method
        return cls(**overrides)


def needs_compensation(state: Mapping[str, Any]) -> bool:
    """True when the saga must stop going forward: a step failed or halted it."""
    return bool(state.get("failure") or state.get("halted"))


def decision(
    router: str,
    decided_by: str,
    goto: str | Sequence[str],
    events: Sequence[Event] = (),
    started_ns: int | None = None,
) -> RouteDecision:
    """The hooks' record of a decision: ``goto`` named as a saga does (``finish`` for the end,
    branches joined by commas), its outcome from its last ``route`` event."""
    targets = [goto] if isinstance(goto, str) else list(goto)
    shown = ",".join(FINISH if t == END else t for t in targets) or FINISH
    routes = tuple(e for e in events if e["action"] == "route")
    outcome = str(routes[-1]["outcome"]) if routes else "ok"
    return RouteDecision(router, decided_by, shown, outcome, routes, started_ns)


def telling(hooks: SagaHooks, saga_id: str, decided: RouteDecision) -> Flow[None]:
    """Tell the hooks of a decision (their async form under ``ainvoke``)."""
    if hooks is not NO_HOOKS:
        yield Tell(hooks.on_route, hooks.aon_route, saga_id, decided)


def after_step(
    definition: SagaDefinition,
    name: str,
    state: Mapping[str, Any],
    update: dict[str, Any],
    hand_over: str | None,
) -> tuple[Command[Any], RouteDecision | None]:
    """The Command of step ``name``'s node once ``update`` records what it did, and the
    decision it makes (None when it hands the decision over to its router's node)."""
    if needs_compensation(update):
        return Command(update=update, goto=COMPENSATE), decision("deterministic", name, COMPENSATE)
    if hand_over is not None:
        return Command(update=update, goto=hand_over), None
    records: dict[str, StepRecord] = {**(state.get("results") or {}), **update["results"]}
    if not definition.is_chain:
        following = [d for d in definition.dependants(name) if len(definition.dependencies(d)) == 1]
        leaves = [n for n in definition.step_names if not definition.dependants(n)]
        if leaves == [name] and set(records) >= set(definition.step_names):
            update["status"] = "completed"
        goto: str | list[str] = following or END
        return Command(update=update, goto=goto), decision("deterministic", name, goto)
    committed = [*(state.get("completed") or []), name]
    choice = RULES.decide(RouteQuestion(definition, committed, records))
    if choice.events:
        update["events"] = [*update["events"], *choice.events]
    target = END if choice.step == FINISH else str(choice.step)
    if target == END:
        update["status"] = "completed"
    return Command(update=update, goto=target), decision(RULES.kind, name, target, choice.events)


def chosen(
    state: Mapping[str, Any], saga_id: str, update: dict[str, Any], choice: Choice, *, llm: bool
) -> Command[Any]:
    """A router node's Command for ``choice``: the step chosen, the end, or ``compensate``
    when nothing acceptable was found. An LLM router's choice also records its tokens under
    ``usage["supervisor"]`` and its counters (decisions, model calls, rejected proposals,
    failed calls, fallbacks) and last choice under ``route``. An abort's ``route`` event is
    added to ``choice.events``."""
    for event in choice.events:
        if event["outcome"] != "ok":
            log.info("saga %s: router: %s", saga_id, event["detail"])
    update["events"] = choice.events
    if llm:
        counters = {"decisions": 0, "calls": 0, "rejected": 0, "errors": 0, "fallbacks": 0}
        counters |= {k: v for k, v in (state.get("route") or {}).items() if k in counters}
        counters["decisions"] += 1
        counters["calls"] += choice.calls
        counters["rejected"] += choice.rejected
        counters["errors"] += choice.errors
        counters["fallbacks"] += int(choice.fallback)
        update["usage"] = {SUPERVISOR: choice.usage}
        update["route"] = counters | {"last": choice.step or COMPENSATE}
    if choice.step is None:
        aborted = router_aborted(SUPERVISOR, choice.calls, choice.last_problem)
        error = aborted.failure["error"]
        choice.events.append(make_event(SUPERVISOR, "route", "error", choice.calls, error))
        log.warning("saga %s: %s; compensating", saga_id, error)
        return Command(update=update | aborted.update(), goto=COMPENSATE)
    if choice.step == FINISH:
        update["status"] = "completed"
        return Command(update=update, goto=END)
    return Command(update=update, goto=choice.step)
