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

Every proposal goes through :func:`sagagraph.saga.routes.guard`: only a defined step that is
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

The router is a :class:`~sagagraph.saga.routes.Router` (:class:`LLMRouter`): its decision is a
flow that yields each model call, so under ``ainvoke`` the supervisor asks with the model's
``ainvoke`` (same guard, events and fallback), and LLM-routed sagas wait for their router on
the event loop, not for a thread. The blackboard's controller uses the same router.

Routing tokens are recorded under ``usage["supervisor"]``; counters (decisions, model calls,
rejected proposals, failed calls, fallbacks) and the last choice under the state's ``route``
key.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.types import Command

from sagagraph.errors import ConfigurationError
from sagagraph.graph.context import saga_identity
from sagagraph.graph.dual_node import DualNode
from sagagraph.graph.node_hooks import graph_hooks, node_hooks
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
from sagagraph.graph.routing import chosen, decision, needs_compensation, telling
from sagagraph.graph.state import SagaState
from sagagraph.prompts import render_prompt
from sagagraph.redaction import redact
from sagagraph.saga.drivers import Flow
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.names import COMPENSATE
from sagagraph.saga.protocol import SagaDefinition, Usage
from sagagraph.saga.routes import (
    FINISH,
    Accepted,
    Choice,
    RouteQuestion,
    allowed_now,
    deciding,
    facts_from_records,
    guard,
    next_by_rules,
    routing_options,
)
from sagagraph.saga.view import make_event

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


@dataclass(frozen=True)
class _Ask:
    """One model call of a decision: ``invoke`` under the sync driver, ``ainvoke`` under the
    async one; every failure comes back as a reply (:mod:`sagagraph.graph.router_model`)."""

    runnable: Runnable[Any, Any]
    messages: list[BaseMessage]
    method: RouterMethod

    def run(self) -> ProposalReply:
        return ask_router(self.runnable, self.messages, self.method)

    async def arun(self) -> ProposalReply:
        return await aask_router(self.runnable, self.messages, self.method)


def _asking(
    runnable: Runnable[Any, Any], messages: list[BaseMessage], method: RouterMethod
) -> Flow[ProposalReply]:
    reply = yield _Ask(runnable, messages, method)
    assert isinstance(reply, ProposalReply)
    return reply


def proposing(
    runnable: Runnable[Any, Any],
    system: str,
    question: RouteQuestion,
    options: RouterOptions,
) -> Flow[Choice]:
    """Ask for proposals until the guard accepts one or the attempts run out, then fall back.

    With optional or alternative steps the guard judges by the definition's points, the model
    also sees the options open now and the declared route facts of the committed results,
    and the fallback is the declared rules' choice.
    """
    definition, committed = question.definition, question.committed
    steps = definition.step_names
    points = definition.points if definition.has_choices else None
    # Only the declared route facts reach the model: never a step's data, never the input.
    declared = definition.route_facts is not None and points is not None
    facts = facts_from_records(definition, question.records) if declared else {}
    choice = Choice()
    shown_to_model: list[dict[str, str]] = []
    for attempt in range(1, options.max_attempts + 1):
        view = compact_view(definition, committed, shown_to_model)
        if points is not None:
            view["options"] = routing_options(definition, committed)
            view["facts"] = facts
        reply = yield from _asking(runnable, router_messages(system, view), options.method)
        choice.calls += 1
        choice.usage = _add(choice.usage, reply.usage)
        if reply.error is not None:
            choice.errors += 1
            choice.last_problem = f"model call failed: {reply.error}"
            choice.events.append(
                make_event(SUPERVISOR, "route", "error", attempt, choice.last_problem)
            )
            continue
        verdict = reply.problem or guard(reply.next_step or "", steps, committed, points=points)
        shown = repr(_shown(reply.proposal))
        if isinstance(verdict, Accepted):
            detail = f"proposal {shown} accepted"
            if verdict.step != reply.proposal:
                detail += f" as {verdict.step!r} (normalised)"
            choice.events.append(make_event(verdict.step, "route", "ok", attempt, detail))
            choice.step = verdict.step
            return choice
        choice.rejected += 1
        choice.last_problem = redact(verdict.reason)
        detail = f"proposal {shown} rejected ({verdict.kind}): {verdict.reason}"
        choice.events.append(make_event(SUPERVISOR, "route", "rejected", attempt, detail))
        shown_to_model.append({"proposal": _shown(reply.proposal), "reason": verdict.reason})
    if options.fallback == "deterministic":
        rules = ""
        if points is None:
            choice.step = allowed_now(steps, committed)[0]
        else:
            rule_facts = facts_from_records(definition, question.records)
            by_rules = next_by_rules(definition, committed, rule_facts)
            choice.step, rules = by_rules.step, by_rules.detail
        choice.fallback = True
        detail = f"fallback: deterministic route after {options.max_attempts} unusable proposal(s)"
        if rules:
            detail += f" (rules: {rules})"
        choice.events.append(make_event(choice.step, "route", "ok", options.max_attempts, detail))
    return choice


class LLMRouter:
    """The LLM router (:mod:`module docstring <sagagraph.graph.llm_router>`), a
    :class:`~sagagraph.saga.routes.Router`.

    A router model that cannot be bound (a stand-in used only to draw the graph, a chat model
    without structured output) raises ConfigurationError when it is first asked.
    """

    kind = "llm"

    def __init__(self, model: BaseChatModel, options: RouterOptions, system: str) -> None:
        self.options = options
        self.system = system
        self._runnable: Runnable[Any, Any] | None = None
        self._unusable: ConfigurationError | None = None
        try:
            self._runnable = bind_router_model(model, options)
        except ConfigurationError as error:
            self._unusable = error

    def decide(self, question: RouteQuestion) -> Flow[Choice]:
        if self._runnable is None:
            assert self._unusable is not None
            raise self._unusable
        return proposing(self._runnable, self.system, question, self.options)


def make_supervisor(
    definition: SagaDefinition,
    router_model: BaseChatModel,
    options: RouterOptions,
    hooks: SagaHooks | None = None,
) -> DualNode[SagaState, Command[Any]]:
    """The ``supervisor`` node: asks the LLM router for the next step; returns a ``Command``."""
    router = LLMRouter(
        router_model, options, render_prompt(router_prompt(definition), finish=FINISH)
    )
    built = graph_hooks(hooks)

    def supervise(state: SagaState, config: RunnableConfig) -> Flow[Command[Any]]:
        saga_id, update = saga_identity(definition, state, config, "llm")
        told = node_hooks(config, built)
        if needs_compensation(state):
            # A failed or halted saga is routed to compensate before the supervisor; if a
            # resume ever lands here, nothing may run, whatever a model would say.
            yield from telling(told, saga_id, decision("deterministic", SUPERVISOR, COMPENSATE))
            return Command(update=update, goto=COMPENSATE)
        started = time.time_ns()
        records = state.get("results") or {}
        question = RouteQuestion(definition, list(state.get("completed") or []), records)
        choice = yield from deciding(router, question)
        command = chosen(state, saga_id, update, choice, llm=True)
        goto = str(command.goto)
        yield from telling(
            told, saga_id, decision(router.kind, SUPERVISOR, goto, choice.events, started)
        )
        return command

    return DualNode(SUPERVISOR, supervise)


def router_prompt(definition: SagaDefinition) -> str:
    """The router's prompt: ``router``, or ``router_choices`` for a saga with options."""
    return "router_choices" if definition.has_choices else "router"
