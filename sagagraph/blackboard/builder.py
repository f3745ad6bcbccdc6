"""Saga definition -> the blackboard's LangGraph ``StateGraph``.

``START -> controller``; the controller sends the saga to one knowledge source (a step of the
definition), to a refinement, to ``compensate`` or to the end; every knowledge source goes
back to the controller. Contributions, refinements and retractions all run through the
kernel's step execution (:mod:`sagagraph.saga.execution`, under ``invoke`` and ``ainvoke``
alike), so retries, timeouts, events, hooks and records are the kernel's; each one also posts
its version to the board in the same superstep, so a checkpoint never holds one without the
other.

The graph is returned uncompiled, like :func:`sagagraph.graph.builder.build_saga_graph`, and
the kernel's runner (``run_saga``, ``resume_saga``, ``recover_sagas``...) drives it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from sagagraph.blackboard.board import (
    CONTROLLER,
    POSTED,
    REFINED,
    BoardState,
    describe_data,
    entry,
    withdrawals,
)
from sagagraph.blackboard.controller import make_controller
from sagagraph.blackboard.refinement import Refinement
from sagagraph.errors import ConfigurationError
from sagagraph.graph.builder import RouterKind, step_flow
from sagagraph.graph.compensation import add_compensation_nodes, compensation_flow
from sagagraph.graph.hooks import graph_hooks, node_hooks, remember_graph
from sagagraph.graph.nodes import DualNode, context_for
from sagagraph.graph.routing import RouterOptions
from sagagraph.saga.drivers import Flow
from sagagraph.saga.execution import StepAttempts, compensate_attempts, execute_attempts
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.names import BLACKBOARD, COMPENSATE, refuse_reserved
from sagagraph.saga.protocol import SagaDefinition
from sagagraph.saga.records import Failed, compensation_failed

BoardGraph = StateGraph[BoardState, None, BoardState, BoardState]
Node = DualNode[BoardState, dict[str, Any]]


def contribution_node(definition: SagaDefinition, name: str, router: str, hooks: SagaHooks) -> Node:
    """The kernel's step for source ``name``, posting version 1 of its topic when it commits."""
    step = definition.step(name)

    def contribute(state: BoardState, config: RunnableConfig) -> Flow[dict[str, Any]]:
        told = node_hooks(config, hooks)
        _, update = yield from step_flow(definition, step, state, config, router=router, hooks=told)
        record = (update.get("results") or {}).get(step.name)
        if record is not None:
            board = state.get("board") or []
            note = describe_data(record["data"])
            posted = entry(board, step.name, step.name, POSTED, note=note, output=record["output"])
            update["board"] = [posted]
        return update

    return Node(step.name, contribute)


def refinement_node(definition: SagaDefinition, refinement: Refinement, hooks: SagaHooks) -> Node:
    """Run a refinement; on success post the next version of its topic, else retract it.

    A failed refinement is compensated at once, here (its own cleanup, which restores the
    entry it was refining), and the controller goes on without it. Only when that cleanup
    fails too is the board untrustworthy: the failure is recorded and the run abandoned.
    """
    step = refinement.step

    def record(
        state: BoardState, outcome: StepAttempts, undo: StepAttempts | None
    ) -> dict[str, Any]:
        update: dict[str, Any] = {"events": list(outcome.events)}
        result = outcome.result
        if result is not None:
            if result.usage:
                update["usage"] = {step.name: result.usage}
            marks = [str(m) for m in result.data.get("contradicted") or []]
            note = f"{step.name}: {len(marks)} claim(s) marked as contradicted"
            board = state.get("board") or []
            refined = entry(
                board,
                refinement.topic,
                refinement.topic,
                REFINED,
                note=note,
                output=result.output,
                marks=marks,
            )
            update["board"] = [refined]
            return update
        assert undo is not None
        update["events"] += undo.events
        if not undo.ok:
            assert undo.error is not None
            failure = compensation_failed(step.name, undo.error, undo.attempts)
            why = f"refinement {step.name!r} could not be retracted: {failure['error']}"
            update |= Failed(failure, why).update()
        return update

    def refine(state: BoardState, config: RunnableConfig) -> Flow[dict[str, Any]]:
        told = node_hooks(config, hooks)
        ctx = context_for(definition, state, step.name, state["saga_id"])
        inject = state.get("fail_at") == step.name
        outcome = yield from execute_attempts(step, ctx, inject_failure=inject, hooks=told)
        undo = None
        if not outcome.ok:
            undo = yield from compensate_attempts(step, ctx, None, hooks=told)
        return record(state, outcome, undo)

    return Node(step.name, refine)


def retraction_node(
    definition: SagaDefinition, hooks: SagaHooks
) -> DualNode[BoardState, Command[Any]]:
    """The kernel's ``compensate`` node, withdrawing the board entries of what it undid."""

    def retract(state: BoardState, config: RunnableConfig) -> Flow[Command[Any]]:
        command = yield from compensation_flow(definition, state, node_hooks(config, hooks))
        update = dict(cast(dict[str, Any], command.update or {}))
        undone = [str(s) for s in update.get("compensated") or []]
        if undone:
            why = f"retracted: {state.get('reason') or 'the run was abandoned'}"
            update["board"] = withdrawals(state.get("board") or [], undone, why)
        return Command(update=update, goto=command.goto)

    return DualNode(COMPENSATE, retract)


def build_blackboard_graph(
    definition: SagaDefinition,
    router: RouterKind = "deterministic",
    *,
    refinements: Sequence[Refinement] = (),
    router_model: Any = None,
    router_options: RouterOptions | None = None,
    hooks: SagaHooks | None = None,
) -> BoardGraph:
    """Build the uncompiled blackboard graph; compile it with a checkpointer to run it.

    ``refinements`` are the knowledge sources' revisits (the paper app's are in
    :mod:`sagagraph.agents.paper_blackboard`). ``router="llm"`` lets ``router_model`` pick
    each next knowledge source behind the guard; ``hooks`` are as in
    :func:`~sagagraph.graph.builder.build_saga_graph`.
    """
    definition.check(router=router, mode=BLACKBOARD)
    if router == "llm" and router_model is None:
        raise ConfigurationError("router='llm' needs router_model (a LangChain chat model)")
    refuse_reserved(definition.step_names)
    names = set(definition.step_names)
    for refinement in refinements:
        if refinement.name in names or refinement.topic not in names:
            raise ConfigurationError(
                f"refinement {refinement.name!r}: its name must not be a step's, and its "
                f"topic {refinement.topic!r} must be one"
            )
    graph: BoardGraph = StateGraph(BoardState)
    built = graph_hooks(hooks)
    # Knowledge sources first: a forced rollback writes "as" the first node (see
    # graph.recover.force_compensation), and every source's edge leads to the controller.
    for step in definition.steps:
        graph.add_node(
            step.name, cast(Any, contribution_node(definition, step.name, router, built))
        )
        graph.add_edge(step.name, CONTROLLER)
    for refinement in refinements:
        graph.add_node(refinement.name, cast(Any, refinement_node(definition, refinement, built)))
        graph.add_edge(refinement.name, CONTROLLER)
    controller = make_controller(
        definition, refinements, router, router_model, router_options, hooks
    )
    sources = (*definition.step_names, *(r.name for r in refinements))
    graph.add_node(CONTROLLER, cast(Any, controller), destinations=(*sources, COMPENSATE, END))
    graph.add_edge(START, CONTROLLER)
    retract = retraction_node(definition, built)
    add_compensation_nodes(graph, definition, hooks=hooks, compensate=retract)
    remember_graph(graph, definition, hooks)  # the runners find its input check and hooks
    return graph
