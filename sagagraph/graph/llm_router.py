"""LLM-router mode: a ``supervisor`` node asks a chat model for the next step, behind a guard.

Before each step, and after the last, the supervisor sends the model a compact view of the
saga as JSON: the saga's name, its steps in order, the steps committed so far and the last one
that committed (``{"saga", "steps", "committed", "last"}``, plus ``"rejected"`` when asking
again). Only step *names* reach the model: never the saga input, never a step's result data,
never a paper's text, so instructions hidden in a paper cannot reach the router. A saga with
optional or alternative steps adds the options open now (``"options"``: name, kind, choice,
description) and the facts its definition declares for routing (``"facts"``,
``SagaDefinition.route_facts``; nothing when it declares none), and is asked with the prompt
``router_choices``.

The model answers ``{"next_step": "...", "reason": "..."}``. ``next_step`` is a free string on
purpose: a hallucinated step is visible and counted, not hidden by a schema. The request is
made with ``with_structured_output(..., method="json_schema")`` (default),
``"function_calling"`` or ``"json_mode"``, or as plain text JSON (``method="text"``, for chat
models without structured output). Either way the reply is parsed from the raw message
(:mod:`sagagraph.graph.router_model`): malformed JSON, an empty reply or a failed model call is
a rejected proposal, never a crash. The options are :mod:`sagagraph.graph.router_options`.

Every proposal goes through :func:`sagagraph.saga.guard.guard`: only a defined step that is
due now, or ``"finish"`` (any ASCII case, surrounding whitespace ignored: ``"Reviewer "`` is
``reviewer``) once every step has committed, is followed. LangGraph silently ignores
``Command(goto=<unknown node>)``, so the guard is the only defence; an undefined step never
runs. Each decision is an event ``action="route"``: ``outcome="ok"`` under the chosen step (or
``finish``), ``"rejected"`` (bad proposal) or ``"error"`` (model call failed) under
``supervisor``, with the raw proposal and the reason in ``detail``.

After a rejection the model is asked again, told why, up to ``RouterOptions.max_attempts``
proposals per decision. Then the fallback decides: ``"deterministic"`` (default) takes the
next step in definition order; ``"abort"`` records a failure against ``supervisor`` and routes
to ``compensate``, so the committed steps are undone and the saga ends ``rolled_back``.

Under ``ainvoke`` the supervisor asks with the model's ``ainvoke`` (same guard, events and
fallback), so LLM-routed sagas wait for their router on the event loop, not for a thread.

Routing tokens are recorded under ``usage["supervisor"]``; counters (decisions, model calls,
rejected proposals, failed calls, fallbacks) and the last choice under the state's ``route``
key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.graph import END
from langgraph.types import Command

from sagagraph.errors import ConfigurationError
from sagagraph.graph.context import saga_identity
from sagagraph.graph.dual_node import DualNode
from sagagraph.graph.nodes import SUPERVISOR
from sagagraph.graph.router_model import (
    ProposalReply,
    aask_router,
    ask_router,
    bind_router_model,
    compact_view,
    router_messages,
)
from sagagraph.graph.router_options import RouterMethod, RouterOptions
from sagagraph.graph.state import SagaState
from sagagraph.prompts import render_prompt
from sagagraph.redaction import redact
from sagagraph.saga.drivers import Returned, advance
from sagagraph.saga.guard import FINISH, Accepted, allowed_now, guard
from sagagraph.saga.names import COMPENSATE
from sagagraph.saga.protocol import SagaDefinition, Usage
from sagagraph.saga.records import router_aborted
from sagagraph.saga.routes import (
    facts_from_records,
    next_by_rules,
    route_points,
    routing_options,
)
from sagagraph.saga.tracing import route_decided, route_outcome, route_span
from sagagraph.saga.view import Event, make_event

log = logging.getLogger("sagagraph")

_PROPOSAL_SHOWN = 120
"""Characters of a raw proposal kept in an event (a babbling model must not flood the trail)."""


def _shown(text: str) -> str:
    return text if len(text) <= _PROPOSAL_SHOWN else text[: _PROPOSAL_SHOWN - 3] + "..."


def _add(total: Usage, usage: Usage | None) -> Usage:
    if usage is None:
        return total
    return {
        "input_tokens": total["input_tokens"] + usage["input_tokens"],
        "output_tokens": total["output_tokens"] + usage["output_tokens"],
    }


@dataclass
class Decision:
    """The outcome of one routing decision: the step chosen (None: abort) and its trail."""

    step: str | None = None
    """A step name, ``finish``, or None when the fallback is ``abort``."""
    events: list[Event] = field(default_factory=list)
    usage: Usage = field(default_factory=lambda: Usage(input_tokens=0, output_tokens=0))
    calls: int = 0
    rejected: int = 0
    errors: int = 0
    fallback: bool = False
    last_problem: str = "no proposal"


Deciding = Generator[list[BaseMessage], ProposalReply, Decision]
"""A routing decision in progress: yields each request, is sent each reply, returns the
:class:`Decision`. Model calls happen outside it, so the sync and async supervisors share it."""


def deciding(
    system: str,
    definition: SagaDefinition,
    committed: Sequence[str],
    options: RouterOptions,
    records: Mapping[str, Mapping[str, Any]] | None = None,
) -> Deciding:
    """Ask for proposals until the guard accepts one or the attempts run out, then fall back.

    With optional or alternative steps the guard judges by the definition's points, the model
    also sees the options open now and the declared route facts of the committed results
    (``records``), and the fallback is the declared rules' choice.
    """
    steps = definition.step_names
    points = route_points(definition) if definition.has_choices else None
    facts = router_facts(definition, records or {})
    decision = Decision()
    shown_to_model: list[dict[str, str]] = []
    for attempt in range(1, options.max_attempts + 1):
        view = compact_view(definition, committed, shown_to_model)
        if points is not None:
            view["options"] = routing_options(definition, committed)
            view["facts"] = facts
        reply = yield router_messages(system, view)
        decision.calls += 1
        decision.usage = _add(decision.usage, reply.usage)
        if reply.error is not None:
            decision.errors += 1
            decision.last_problem = f"model call failed: {reply.error}"
            decision.events.append(
                make_event(SUPERVISOR, "route", "error", attempt, decision.last_problem)
            )
            continue
        verdict = reply.problem or guard(reply.next_step or "", steps, committed, points=points)
        shown = repr(_shown(reply.proposal))
        if isinstance(verdict, Accepted):
            detail = f"proposal {shown} accepted"
            if verdict.step != reply.proposal:
                detail += f" as {verdict.step!r} (normalised)"
            decision.events.append(make_event(verdict.step, "route", "ok", attempt, detail))
            decision.step = verdict.step
            return decision
        decision.rejected += 1
        decision.last_problem = redact(verdict.reason)
        detail = f"proposal {shown} rejected ({verdict.kind}): {verdict.reason}"
        decision.events.append(make_event(SUPERVISOR, "route", "rejected", attempt, detail))
        shown_to_model.append({"proposal": _shown(reply.proposal), "reason": verdict.reason})
    if options.fallback == "deterministic":
        rules = ""
        if points is None:
            decision.step = allowed_now(steps, committed)[0]
        else:
            rule_facts = facts_from_records(definition, records or {})
            by_rules = next_by_rules(definition, committed, rule_facts)
            decision.step, rules = by_rules.step, by_rules.detail
        decision.fallback = True
        detail = f"fallback: deterministic route after {options.max_attempts} unusable proposal(s)"
        if rules:
            detail += f" (rules: {rules})"
        decision.events.append(
            make_event(decision.step, "route", "ok", options.max_attempts, detail)
        )
    return decision


def decide_next(runnable: Runnable[Any, Any], steps: Deciding, method: RouterMethod) -> Decision:
    """Drive a routing decision (:func:`deciding`), asking the model with ``invoke``."""
    request = advance(steps)
    while not isinstance(request, Returned):
        request = advance(steps, ask_router(runnable, request, method))
    return request.value


async def adecide_next(
    runnable: Runnable[Any, Any], steps: Deciding, method: RouterMethod
) -> Decision:
    """Drive a routing decision (:func:`deciding`), asking the model with ``ainvoke``."""
    request = advance(steps)
    while not isinstance(request, Returned):
        request = advance(steps, await aask_router(runnable, request, method))
    return request.value


SupervisorNode = DualNode[SagaState, Command[Any]]
"""The ``supervisor`` node: ``invoke`` asks the model with ``invoke``, ``ainvoke`` with
``ainvoke`` (no thread of asyncio's small default executor held while the model thinks)."""


def make_supervisor(
    definition: SagaDefinition, router_model: BaseChatModel, options: RouterOptions
) -> SupervisorNode:
    """The ``supervisor`` node: ask, guard, ask again, fall back; return a ``Command``.

    A router model that cannot be bound (a stand-in used only to draw the graph, a chat model
    without structured output) raises ConfigurationError when the supervisor first runs.
    """
    runnable: Runnable[Any, Any] | None = None
    unusable: ConfigurationError | None = None
    try:
        runnable = bind_router_model(router_model, options)
    except ConfigurationError as error:
        unusable = error
    system = render_prompt(router_prompt(definition), finish=FINISH)

    def start(state: SagaState, config: RunnableConfig) -> Asking | Command[Any]:
        """What the model is asked about, or the Command when it must not be asked."""
        if runnable is None:
            assert unusable is not None
            raise unusable
        saga_id, update = saga_identity(definition, state, config, "llm")
        if state.get("failure") or state.get("halted"):
            # The builder routes a failed or halted saga to compensate before asking; if a
            # resume ever lands here, nothing may run, whatever a model would say.
            return Command(update=update, goto=COMPENSATE)
        records = state.get("results") or {}
        committed = list(state.get("completed") or [])
        return runnable, saga_id, update, deciding(system, definition, committed, options, records)

    return router_node(SUPERVISOR, start, options)


def router_prompt(definition: SagaDefinition) -> str:
    """The router's prompt: ``router``, or ``router_choices`` for a saga with options."""
    return "router_choices" if definition.has_choices else "router"


def router_facts(
    definition: SagaDefinition, records: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """What the LLM router sees of earlier results: the definition's declared route facts
    only (never a step's whole data, never the saga input); nothing when none are declared."""
    if definition.route_facts is None or not definition.has_choices:
        return {}
    return facts_from_records(definition, records)


StateT = TypeVar("StateT", bound=SagaState)

Asking = tuple[Runnable[Any, Any], str, dict[str, Any], Deciding]
"""What a router node asks: the bound model, the saga id, the state update so far, and the
decision to drive (:func:`deciding`)."""


def router_node(
    name: str,
    start: Callable[[StateT, RunnableConfig], Asking | Command[Any]],
    options: RouterOptions,
) -> DualNode[StateT, Command[Any]]:
    """A node that routes with a chat model (the ``supervisor``, the blackboard's
    ``controller``): ``start`` says what to ask, or returns the node's Command itself; the
    decision is then driven with ``invoke`` or ``ainvoke`` and turned into a Command."""

    def node(state: StateT, config: RunnableConfig) -> Command[Any]:
        started = start(state, config)
        if isinstance(started, Command):
            return traced_without_asking(name, state, config, started)
        model, saga_id, update, steps = started
        with route_span(saga_id, "llm", name) as span:
            decision = decide_next(model, steps, options.method)
            command = route_command(state, saga_id, update, decision, options)
            route_outcome(span, decision.events, goto=_target(command))
        return command

    async def anode(state: StateT, config: RunnableConfig) -> Command[Any]:
        started = start(state, config)
        if isinstance(started, Command):
            return traced_without_asking(name, state, config, started)
        model, saga_id, update, steps = started
        with route_span(saga_id, "llm", name) as span:
            decision = await adecide_next(model, steps, options.method)
            command = route_command(state, saga_id, update, decision, options)
            route_outcome(span, decision.events, goto=_target(command))
        return command

    return DualNode(name, node, anode)


def _target(command: Command[Any]) -> str:
    """Where a router's Command sends the saga, for its span (``finish`` for the end)."""
    goto = command.goto
    if isinstance(goto, str):
        return FINISH if goto == END else goto
    return ",".join(str(g) for g in goto) if isinstance(goto, (list, tuple)) else str(goto)


def traced_without_asking(
    name: str, state: SagaState, config: RunnableConfig, command: Command[Any]
) -> Command[Any]:
    """``command``, decided without a model (a failed saga goes to ``compensate``; the
    blackboard controller's rules), recorded as one route decision span."""
    update = command.update if isinstance(command.update, dict) else {}
    saga_id = update.get("saga_id") or state.get("saga_id")
    saga_id = saga_id or (config.get("configurable") or {}).get("thread_id") or ""
    router = "blackboard" if name != SUPERVISOR else "deterministic"
    route_decided(str(saga_id), router, name, update.get("events") or (), goto=_target(command))
    return command


def route_command(
    state: SagaState,
    saga_id: str,
    update: dict[str, Any],
    decision: Decision,
    options: RouterOptions,
) -> Command[Any]:
    """The router node's Command for a decision: the step chosen, ``END``, or ``compensate``.

    Shared by the ``supervisor`` and the blackboard's ``controller`` (its LLM mode)."""
    for event in decision.events:
        if event["outcome"] != "ok":
            log.info("saga %s: router: %s", saga_id, event["detail"])
    counters = {"decisions": 0, "calls": 0, "rejected": 0, "errors": 0, "fallbacks": 0}
    counters |= {k: v for k, v in (state.get("route") or {}).items() if k in counters}
    counters["decisions"] += 1
    counters["calls"] += decision.calls
    counters["rejected"] += decision.rejected
    counters["errors"] += decision.errors
    counters["fallbacks"] += int(decision.fallback)
    update |= {
        "usage": {SUPERVISOR: decision.usage},
        "route": counters | {"last": decision.step or "compensate"},
        "events": decision.events,
    }
    if decision.step is None:
        aborted = router_aborted(SUPERVISOR, options.max_attempts, decision.last_problem)
        error = aborted.failure["error"]
        update["events"] = [
            *decision.events,
            make_event(SUPERVISOR, "route", "error", options.max_attempts, error),
        ]
        log.warning("saga %s: %s; compensating", saga_id, error)
        update |= aborted.update()
        return Command(update=update, goto=COMPENSATE)
    if decision.step == FINISH:
        update["status"] = "completed"
        return Command(update=update, goto=END)
    return Command(update=update, goto=decision.step)
