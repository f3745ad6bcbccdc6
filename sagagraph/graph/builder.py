"""Saga definition -> LangGraph ``StateGraph``.

One node per step; after a step the node itself decides where the saga goes
(:func:`~sagagraph.graph.routing.after_step`): to ``compensate`` on a failure or an intended
halt; else to the next step the declared rules choose (a chain), to the steps that follow it
(parallel steps, ``Step.after``, joined by LangGraph where a step needs several), or to the
``supervisor`` node that asks the LLM router (:mod:`sagagraph.graph.llm_router`, imported only
when a graph is built with it). Deciding in
the node keeps a decision and its writes in one checkpoint (LangGraph re-runs a failed
conditional edge's node on resume). The graph is returned uncompiled, so the caller (or
LangGraph Server) picks the checkpointer.

Each node is written once, as a flow (:class:`~sagagraph.graph.nodes.DualNode`), and runs
under ``invoke`` and ``ainvoke`` alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from sagagraph.errors import ConfigurationError
from sagagraph.graph.compensation import add_compensation_nodes
from sagagraph.graph.hooks import graph_hooks, node_hooks, remember_graph
from sagagraph.graph.locking import locking, release_locks
from sagagraph.graph.nodes import (
    COMPLETE,
    ROUTES_ITSELF,
    SUPERVISOR,
    DualNode,
    context_for,
    saga_identity,
)
from sagagraph.graph.pivot import RETRY_GATE, ended, make_retry_gate, pivot_event
from sagagraph.graph.routing import RouterOptions, after_step, needs_compensation, telling
from sagagraph.graph.state import SagaOutput, SagaState, committed, failed
from sagagraph.saga.drivers import Flow
from sagagraph.saga.execution import StepAttempts, execute_attempts
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.names import COMPENSATE, refuse_reserved
from sagagraph.saga.protocol import PIVOT, RETRIABLE, SagaDefinition, Step
from sagagraph.saga.records import halt_record, step_failed

RouterKind = Literal["deterministic", "llm"]


def step_flow(
    definition: SagaDefinition,
    step: Step,
    state: Mapping[str, Any],
    config: RunnableConfig,
    *,
    router: str,
    hooks: SagaHooks,
) -> Flow[tuple[str, dict[str, Any]]]:
    """Run ``step``'s execute (with its retries): the saga id and the state update recording
    what happened (its result, or a failure, or a halt)."""
    saga_id, update = saga_identity(definition, state, config, router)
    ctx = context_for(definition, state, step.name, saga_id)
    inject = state.get("fail_at") == step.name
    outcome = yield from execute_attempts(locking(step), ctx, inject_failure=inject, hooks=hooks)
    return saga_id, recorded(update, outcome, step, saga_id)


def recorded(
    update: dict[str, Any], outcome: StepAttempts, step: Step, saga_id: str
) -> dict[str, Any]:
    """The state update of a step node, from what its execute did."""
    update["events"] = outcome.events
    result = outcome.result
    if result is not None and result.usage:
        update["usage"] = {step.name: result.usage}
    if result is None:
        assert outcome.error is not None
        failure = step_failed(
            saga_id, step.name, outcome.error, outcome.attempts, described=outcome.described
        )
        if step.kind == RETRIABLE:
            # Past the pivot nothing is undone: an operator decides (graph.pivot).
            update["forward_failure"] = failure.failure
        else:
            update |= failure.update() | failed(step.name)
    elif result.halt:
        update |= halt_record(step.name, result.reason, result.data).update()
    else:
        update |= committed(step.name, result.record())
        if step.kind == PIVOT:
            update["events"] = [*update["events"], pivot_event(step.name)]
    return update


StepNode = DualNode[SagaState, Command[Any]]
"""A step node: runs its step, then routes itself (module docstring)."""


def make_step_node(
    definition: SagaDefinition, step: Step, *, router: str, hooks: SagaHooks
) -> StepNode:
    """The node of ``step``: under ``invoke`` the participant's ``execute``, under ``ainvoke``
    its ``aexecute`` when it has one (else ``execute`` on the step pool), then
    :func:`~sagagraph.graph.routing.after_step`. A parallel step reached after a sibling
    branch failed does nothing and ends its branch (the saga is compensating)."""
    hand_over = SUPERVISOR if router == "llm" else None

    def run(state: SagaState, config: RunnableConfig) -> Flow[Command[Any]]:
        if needs_compensation(state):
            return Command()
        told = node_hooks(config, hooks)
        saga_id, update = yield from step_flow(
            definition, step, state, config, router=router, hooks=told
        )
        if update.get("forward_failure"):
            return Command(update=update, goto=RETRY_GATE)
        if step.kind == RETRIABLE and state.get("forward_failure"):
            update["forward_failure"] = None
        command, decided = after_step(definition, step.name, state, update, hand_over)
        if ended(command):
            release_locks(saga_id)  # the saga ends with this superstep (graph.locking)
        if decided is not None:
            yield from telling(told, saga_id, decided)
        return command

    return StepNode(step.name, run)


def successors(definition: SagaDefinition, name: str) -> tuple[str, ...]:
    """The nodes that may follow step ``name`` under the deterministic router: the steps that
    follow it (parallel steps), or those of the next points up to the first required one
    (a chain), and ``END`` when the saga may end there."""
    if not definition.is_chain:
        return (
            *(d for d in definition.dependants(name) if len(definition.dependencies(d)) == 1),
            END,
        )
    points = definition.points
    index = next(i for i, p in enumerate(points) if name in p.steps)
    following: list[str] = []
    for point in points[index + 1 :]:
        following += point.steps
        if not point.optional:
            return tuple(following)
    return (*following, END)


def _complete(state: SagaState, config: RunnableConfig) -> Flow[dict[str, Any]]:
    """Mark the saga completed once every branch committed (nothing, while compensating)."""
    yield from ()  # a flow that needs nothing done
    if needs_compensation(state):
        return {}
    release_locks(state["saga_id"])
    return {"status": "completed"}


def build_saga_graph(
    definition: SagaDefinition,
    router: RouterKind = "deterministic",
    *,
    router_model: Any = None,
    router_options: RouterOptions | None = None,
    hooks: SagaHooks | None = None,
    output: Literal["state", "view"] = "state",
    input_schema: Any = None,
) -> StateGraph[SagaState, None, SagaState, Any]:
    """Build the uncompiled saga graph; compile it with a checkpointer to run it.

    ``router="deterministic"`` (default) runs the steps in their defined order and makes no
    model call to route. ``router="llm"`` asks ``router_model`` (a LangChain chat model) for each
    next step, behind a guard that rejects undefined or out-of-order steps. ``hooks`` observe
    every run of the graph (:class:`~sagagraph.saga.hooks.SagaHooks`: an alert on escalation,
    say), beside the hooks a runner is given for one run. ``output="view"`` makes the graph
    return the JSON view's fields (:class:`SagaOutput`) instead of the whole state, as
    LangGraph Server and Studio show a run's result. ``input_schema`` is what a run's input
    writes (default: the state's fields); LangGraph Server's graph takes it whole into one
    channel that its admit node checks (:mod:`sagagraph.server`).
    """
    if output not in ("state", "view"):
        raise ConfigurationError(f"output: expected 'state' or 'view', got {output!r}")
    definition.check(router=router)
    names = definition.step_names
    refuse_reserved(names)
    if router == "llm" and router_model is None:
        raise ConfigurationError("router='llm' needs router_model (a LangChain chat model)")
    graph: StateGraph[SagaState, None, SagaState, Any] = StateGraph(
        SagaState,
        input_schema=input_schema,
        output_schema=SagaOutput if output == "view" else SagaState,
    )
    built = graph_hooks(hooks)
    for step in definition.steps:
        destinations: tuple[str, ...] = (
            (SUPERVISOR, COMPENSATE)
            if router == "llm"
            else (*successors(definition, step.name), COMPENSATE)
        )
        if step.kind == RETRIABLE:  # past the pivot: forward, or wait for an operator
            destinations = (*successors(definition, step.name), RETRY_GATE)
        node = make_step_node(definition, step, router=router, hooks=built)
        # cast: LangGraph's node protocols do not match a total=False TypedDict state.
        graph.add_node(
            step.name, cast(Any, node), destinations=destinations, metadata={ROUTES_ITSELF: True}
        )
    add_compensation_nodes(graph, definition, hooks=hooks)
    retriable = [s.name for s in definition.steps if s.kind == RETRIABLE]
    if retriable:
        gate = make_retry_gate(definition, hooks)
        after = {t for name in retriable for t in successors(definition, name)}
        graph.add_node(
            RETRY_GATE, cast(Any, gate), destinations=(RETRY_GATE, *retriable, *sorted(after))
        )
    if router == "llm":
        # Only an LLM-routed graph loads the LLM router (its model calls and prompts).
        from sagagraph.graph.llm_router import make_supervisor

        options = router_options if router_options is not None else RouterOptions()
        supervisor = make_supervisor(definition, router_model, options, hooks)
        graph.add_node(SUPERVISOR, cast(Any, supervisor), destinations=(*names, COMPENSATE, END))
        graph.add_edge(START, SUPERVISOR)
    else:
        graph.add_edge(START, names[0])
    if not definition.is_chain:
        _join(graph, definition)
    remember_graph(graph, definition, hooks)  # the runners find its input check and hooks
    return graph


def _join(graph: StateGraph[SagaState, None, SagaState, Any], definition: SagaDefinition) -> None:
    """Joins of a parallel definition: a step that needs several steps waits for all of them
    (a LangGraph join, which fires however they ended: the step then does nothing when one of
    them failed); when several steps end the saga, ``complete`` joins them so that only the
    last to finish can complete it."""
    for name in definition.step_names:
        needs = definition.dependencies(name)
        if len(needs) > 1:
            graph.add_edge(list(needs), name)
    leaves = [n for n in definition.step_names if not definition.dependants(n)]
    if len(leaves) > 1:
        graph.add_node(COMPLETE, cast(Any, DualNode(COMPLETE, _complete)))
        graph.add_edge(leaves, COMPLETE)
        graph.add_edge(COMPLETE, END)
