"""The controller: reads the board and picks the next knowledge source.

Deterministic rules by default, in this order (docs/blackboard.md):

1. a contribution failed (after the kernel's retries) or a source halted the saga: the run is
   abandoned and goes to ``compensate``, which retracts every contribution, newest first;
2. a knowledge source whose prerequisites are on the board and whose own topic is not: it runs
   (in definition order; of optional or alternative sources, those whose ``Step.when`` matches);
3. a refinement whose topics are on the board and that has not been tried: it runs (a failed
   one is retracted by its own node and not tried again);
4. otherwise the problem is solved: the saga completes.

Rules 2-4 are a :class:`~sagagraph.saga.routes.Router` (:class:`BoardRules`); with
``router="llm"`` they are asked of a chat model instead, through the LLM router
(:class:`sagagraph.graph.llm_router.LLMRouter`) behind the same guard; rule 1 is never asked.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from sagagraph.blackboard.board import CONTROLLER, MODE, BoardState
from sagagraph.blackboard.refinement import Refinement
from sagagraph.graph.hooks import graph_hooks, node_hooks
from sagagraph.graph.llm_router import LLMRouter, router_prompt
from sagagraph.graph.nodes import DualNode, saga_identity
from sagagraph.graph.routing import RouterOptions, chosen, decision, telling
from sagagraph.saga.drivers import Flow
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.names import COMPENSATE
from sagagraph.saga.protocol import SagaDefinition
from sagagraph.saga.routes import (
    FINISH,
    Choice,
    RouteQuestion,
    Router,
    deciding,
    facts_from_records,
    next_by_rules,
)
from sagagraph.saga.templates import render_template
from sagagraph.saga.view import make_event

_FINAL = ("ok", "error", "timeout", "halted")


def tried(events: Sequence[Mapping[str, Any]], name: str) -> str | None:
    """The final outcome of ``name``'s execute (``ok``, ``error``...), None when never finished."""
    outcome = None
    for event in events:
        if event["step"] == name and event["action"] == "execute" and event["outcome"] in _FINAL:
            outcome = str(event["outcome"])
    return outcome


def abandoned(state: BoardState) -> str | None:
    """Rule 1: why the run cannot go on (a failed contribution, or a halt); None when it can."""
    failure = state.get("failure")
    if failure:
        return (
            f"abandon: {failure['step']} failed, so its entry cannot be on the board; "
            "retract every contribution"
        )
    halted = state.get("halted")
    if halted:
        return f"abandon: {halted['step']} halted: {halted.get('reason')}"
    return None


class BoardRules:
    """The deterministic controller (rules 2-4), over the topics live on the board: a source's
    topic is live exactly while its step is committed, so they are the question's committed
    steps; the refinements it may still run are the steps :func:`router_view` adds."""

    kind = "blackboard"

    def __init__(self, definition: SagaDefinition, refinements: Sequence[Refinement]) -> None:
        self.definition = definition
        self.refinements = refinements

    def decide(self, question: RouteQuestion) -> Choice:
        definition, done = self.definition, set(question.committed)
        if definition.has_choices:
            live = [n for n in definition.step_names if n in done]
            records = {n: question.records[n] for n in live if n in question.records}
            rule = next_by_rules(definition, live, facts_from_records(definition, records))
            if rule.step != FINISH:
                why = f"; {rule.detail}" if rule.detail else ""
                have = ", ".join(live) or "nothing"
                return _ruled(rule.step, f"rule: board has {have}; no {rule.step} entry yet{why}")
        for step in definition.steps if not definition.has_choices else ():
            needs = definition.dependencies(step.name)
            if step.name not in done and all(n in done for n in needs):
                have = ", ".join(needs) or "nothing"
                return _ruled(step.name, f"rule: board has {have}; no {step.name} entry yet")
        open_now = set(question.definition.step_names) - set(definition.step_names) - done
        for refinement in self.refinements:
            if refinement.name in open_now and done >= {refinement.topic, *refinement.after}:
                after = ", ".join(refinement.after)
                why = f"rule: {after} now on the board; {refinement.topic} revisits"
                return _ruled(refinement.name, why)
        return _ruled(FINISH, "rule: every topic is on the board; the problem is solved")


def _ruled(step: str, rule: str) -> Choice:
    return Choice(step, [make_event(step, "route", "ok", 1, rule)])


def router_view(
    definition: SagaDefinition, refinements: Sequence[Refinement], state: BoardState
) -> tuple[SagaDefinition, list[str]]:
    """The steps a router may name now, and those already done (for the guard).

    A refinement that was tried and failed is left out: it is not tried again. When the
    definition has optional or alternative sources, refinements are optional options too (the
    topic one refines may never be posted: its alternative ran instead).
    """
    events = state.get("events") or []
    usable = [r for r in refinements if tried(events, r.name) in (None, "ok")]
    extra = [replace(r.step, optional=True) if definition.has_choices else r.step for r in usable]
    steps = (*definition.steps, *extra)
    routed = SagaDefinition(
        definition.name, steps, definition.deps, route_facts=definition.route_facts
    )
    done = list(state.get("completed") or [])
    done += [r.name for r in usable if tried(events, r.name) == "ok"]
    return routed, done


ControllerNode = DualNode[BoardState, Command[Any]]


def make_controller(
    definition: SagaDefinition,
    refinements: Sequence[Refinement],
    router: str = "deterministic",
    router_model: Any = None,
    router_options: RouterOptions | None = None,
    hooks: SagaHooks | None = None,
) -> ControllerNode:
    """The ``controller`` node; with ``router="llm"`` it asks ``router_model`` behind the guard
    (a stand-in model, in a graph built only to read or to roll back a saga, fails when asked)."""
    chooser: Router = BoardRules(definition, refinements)
    if router == "llm":
        options = router_options if router_options is not None else RouterOptions()
        system = render_template("sagagraph.graph", router_prompt(definition), finish=FINISH)
        chooser = LLMRouter(router_model, options, system)
    built = graph_hooks(hooks)

    def control(state: BoardState, config: RunnableConfig) -> Flow[Command[Any]]:
        saga_id, update = saga_identity(definition, state, config, router)
        if update:
            update |= {"mode": MODE, "board": []}
        told = node_hooks(config, built)
        stop = abandoned(state)
        if stop is not None:
            update["events"] = [make_event(COMPENSATE, "route", "ok", 1, stop)]
            abandon = decision("blackboard", CONTROLLER, COMPENSATE, update["events"])
            yield from telling(told, saga_id, abandon)
            return Command(update=update, goto=COMPENSATE)
        started = time.time_ns()
        routed, done = router_view(definition, refinements, state)
        question = RouteQuestion(routed, done, state.get("results") or {})
        choice = yield from deciding(chooser, question)
        command = chosen(state, saga_id, update, choice, llm=chooser.kind == "llm")
        goto = str(command.goto)
        yield from telling(
            told, saga_id, decision(chooser.kind, CONTROLLER, goto, choice.events, started)
        )
        return command

    return ControllerNode(CONTROLLER, control)
