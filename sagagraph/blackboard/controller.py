"""The controller: reads the board and picks the next knowledge source.

Deterministic rules by default, in this order:

1. a contribution failed (after the kernel's retries) or a source halted the saga: the problem
   cannot be solved without that entry, so the run is abandoned and goes to ``compensate``,
   which retracts every contribution still on the board, newest first;
2. a knowledge source whose prerequisites are on the board and whose own topic is not: it runs
   (in definition order when several could). When the definition has optional or alternative
   sources, the source whose trigger (``Step.when``) matches the board's content runs: an
   optional source only when its trigger matches (a low-confidence review triggers a critic),
   of alternatives the first whose trigger matches, else the default;
3. a refinement whose topics are on the board and that has not been tried: it runs (a failed
   refinement is retracted by its own node and is not tried again: the board it refined still
   solves the problem);
4. otherwise the problem is solved: the saga completes.

With ``router="llm"`` rules 2-4 are asked of a chat model through the LLM router's machinery
(:func:`sagagraph.graph.llm_router.router_node`) behind the same guard; rule 1 is never asked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.graph import END
from langgraph.types import Command

from sagagraph.blackboard.board import CONTROLLER, MODE, BoardState, is_live
from sagagraph.blackboard.refinement import Refinement
from sagagraph.errors import ConfigurationError
from sagagraph.graph.context import saga_identity
from sagagraph.graph.dual_node import DualNode
from sagagraph.graph.llm_router import (
    Asking,
    deciding,
    router_node,
    router_prompt,
)
from sagagraph.graph.router_model import bind_router_model
from sagagraph.graph.router_options import RouterOptions
from sagagraph.prompts import render_prompt
from sagagraph.saga.guard import FINISH
from sagagraph.saga.names import COMPENSATE
from sagagraph.saga.protocol import SagaDefinition
from sagagraph.saga.routes import facts_from_records, next_by_rules
from sagagraph.saga.view import committed_order, make_event

_FINAL = ("ok", "error", "timeout", "halted")


@dataclass(frozen=True)
class Choice:
    """Where the controller sends the saga, and the rule that decided it."""

    goto: str
    """A knowledge source, a refinement, ``compensate`` or ``finish``."""
    rule: str


def tried(events: Sequence[Mapping[str, Any]], name: str) -> str | None:
    """The final outcome of ``name``'s execute (``ok``, ``error``...), None when never finished."""
    outcome = None
    for event in events:
        if event["step"] == name and event["action"] == "execute" and event["outcome"] in _FINAL:
            outcome = str(event["outcome"])
    return outcome


def abandoned(state: BoardState) -> Choice | None:
    """Rule 1: the run cannot go on (a failed contribution, or a halt)."""
    failure = state.get("failure")
    if failure:
        return Choice(
            COMPENSATE,
            f"abandon: {failure['step']} failed, so its entry cannot be on the board; "
            "retract every contribution",
        )
    halted = state.get("halted")
    if halted:
        return Choice(COMPENSATE, f"abandon: {halted['step']} halted: {halted.get('reason')}")
    return None


def choose(
    definition: SagaDefinition, refinements: Sequence[Refinement], state: BoardState
) -> Choice:
    """The deterministic controller's decision (rules 1-4)."""
    stop = abandoned(state)
    if stop is not None:
        return stop
    board = state.get("board") or []
    if definition.has_choices:
        trigger = triggered(definition, state)
        if trigger is not None:
            return trigger
    for step in definition.steps if not definition.has_choices else ():
        needs = definition.dependencies(step.name)
        if not is_live(board, step.name) and all(is_live(board, n) for n in needs):
            have = ", ".join(needs) or "nothing"
            return Choice(step.name, f"rule: board has {have}; no {step.name} entry yet")
    events = state.get("events") or []
    for refinement in refinements:
        ready = all(is_live(board, t) for t in (refinement.topic, *refinement.after))
        if ready and tried(events, refinement.name) is None:
            after = ", ".join(refinement.after)
            return Choice(
                refinement.name, f"rule: {after} now on the board; {refinement.topic} revisits"
            )
    return Choice(FINISH, "rule: every topic is on the board; the problem is solved")


def board_facts(definition: SagaDefinition, state: BoardState) -> tuple[list[str], dict[str, Any]]:
    """The topics live on the board (definition order) and the route facts they make."""
    board = state.get("board") or []
    live = [n for n in definition.step_names if is_live(board, n)]
    records = state.get("results") or {}
    return live, facts_from_records(definition, {n: records[n] for n in live if n in records})


def triggered(definition: SagaDefinition, state: BoardState) -> Choice | None:
    """Rule 2 for a definition with optional or alternative knowledge sources: the source
    whose trigger (``Step.when``) matches what is on the board; None when every point is
    passed (refinements, then finishing, come next)."""
    live, facts = board_facts(definition, state)
    choice = next_by_rules(definition, live, facts)
    if choice.step == FINISH:
        return None
    have = ", ".join(live) or "nothing"
    why = f"; {choice.detail}" if choice.detail else ""
    return Choice(choice.step, f"rule: board has {have}; no {choice.step} entry yet{why}")


def router_view(
    definition: SagaDefinition, refinements: Sequence[Refinement], state: BoardState
) -> tuple[SagaDefinition, list[str]]:
    """The steps the LLM router may name now, and those already done (for the guard).

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
    done = committed_order(events, state.get("results") or {})
    done += [r.name for r in usable if tried(events, r.name) == "ok"]
    return routed, done


ControllerNode = DualNode[BoardState, Command[Any]]


def make_controller(
    definition: SagaDefinition,
    refinements: Sequence[Refinement],
    router: str = "deterministic",
    router_model: Any = None,
    router_options: RouterOptions | None = None,
) -> ControllerNode:
    """The ``controller`` node; with ``router="llm"`` it asks ``router_model`` behind the guard."""
    options = router_options if router_options is not None else RouterOptions()
    runnable: Runnable[Any, Any] | None = None
    unusable: ConfigurationError | None = None
    if router == "llm":
        # A stand-in (a graph built only to read or to roll back a saga) fails when asked.
        try:
            runnable = bind_router_model(router_model, options)
        except ConfigurationError as error:
            unusable = error
    system = render_prompt(router_prompt(definition), finish=FINISH)

    def by_rule(state: BoardState, update: dict[str, Any]) -> Command[Any]:
        choice = choose(definition, refinements, state)
        update["events"] = [make_event(choice.goto, "route", "ok", 1, choice.rule)]
        if choice.goto == FINISH:
            update["status"] = "completed"
            return Command(update=update, goto=END)
        return Command(update=update, goto=choice.goto)

    def start(state: BoardState, config: RunnableConfig) -> Command[Any] | Asking:
        """The decision the model is to make, or the Command when the rules decide."""
        saga_id, update = saga_identity(definition, state, config, router)
        if update:
            update |= {"mode": MODE, "board": []}
        if runnable is None or abandoned(state) is not None:
            if unusable is not None and abandoned(state) is None:
                raise unusable
            return by_rule(state, update)
        routed, done = router_view(definition, refinements, state)
        records = state.get("results") or {}
        return runnable, saga_id, update, deciding(system, routed, done, options, records)

    return router_node(CONTROLLER, start, options)
