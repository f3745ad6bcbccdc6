"""Saga definition -> LangGraph ``StateGraph``.

Deterministic mode runs the steps in order: on success a step goes to the next step, on
failure or an intended halt to ``compensate``. LLM-router mode puts a ``supervisor`` node
between steps (see :mod:`sagagraph.graph.llm_router`). The graph is returned uncompiled, so the
caller (or LangGraph Server) picks the checkpointer.

In a chain (the default: each step needs the one before it) each step node routes itself: it
returns ``Command(update=..., goto=...)`` to the next node or to ``compensate`` (LangGraph
re-runs a failed conditional edge's node on resume, so routing inside the node keeps a
decision and its writes in one checkpoint). Parallel definitions keep one routing edge after
each step, which can end a branch.

The same graph runs under ``invoke`` and ``ainvoke``: each step node has a sync body and an
async one (:class:`~sagagraph.graph.dual_node.DualNode`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, TypedDict, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from sagagraph.errors import ConfigurationError
from sagagraph.graph.compensation import add_compensation_nodes
from sagagraph.graph.context import context_for, saga_identity
from sagagraph.graph.dual_node import DualNode
from sagagraph.graph.input_check import remember_definition
from sagagraph.graph.nodes import COMPLETE, ROUTES_ITSELF, SUPERVISOR
from sagagraph.graph.state import SagaOutput, SagaState, committed
from sagagraph.graph.state import failed as failed_step
from sagagraph.saga.async_execution import aexecute_step
from sagagraph.saga.execution import StepAttempts, execute_step
from sagagraph.saga.guard import FINISH
from sagagraph.saga.names import COMPENSATE, refuse_reserved
from sagagraph.saga.protocol import SagaDefinition, Step, StepContext
from sagagraph.saga.records import halt_record, step_failed
from sagagraph.saga.routes import facts_from_records, next_by_rules, route_points
from sagagraph.saga.tracing import route_decided
from sagagraph.saga.view import FailureRecord, make_event

RouterKind = Literal["deterministic", "llm"]

AlertHook = Callable[[dict[str, Any]], None]


StepNode = DualNode[SagaState, dict[str, Any]]
"""A step node: sync body under ``invoke``, async body under ``ainvoke``."""


def make_step_node(
    definition: SagaDefinition, step: Step, *, is_last: bool, router: str
) -> StepNode:
    """A node that runs one step's execute (with its retries) and records what happened.

    The node has a sync body for ``invoke`` and an async one for ``ainvoke``; both record the
    same events and state. The async body awaits the participant's ``aexecute`` when it has
    one, else runs ``execute`` on the step pool (:mod:`sagagraph.saga.async_execution`).

    In a parallel definition (``Step.after``) a step reached after a sibling branch failed
    does nothing (the saga is compensating), and the saga completes only once every step
    committed: ``is_last`` then means "complete if that makes every step committed".
    """
    parallel = not definition.is_chain

    def start(state: SagaState, config: RunnableConfig) -> tuple[str, dict[str, Any], StepContext]:
        saga_id, update = saga_identity(definition, state, config, router)
        return saga_id, update, context_for(definition, state, step.name, saga_id)

    def record(
        state: SagaState, update: dict[str, Any], outcome: StepAttempts, saga_id: str
    ) -> dict[str, Any]:
        last = is_last
        if parallel:
            committed = set(state.get("results") or {}) | {step.name}
            last = is_last and committed >= set(definition.step_names)
        return _record_outcome(update, outcome, step, saga_id, is_last=last, router=router)

    def run_step(state: SagaState, config: RunnableConfig) -> dict[str, Any]:
        if parallel and needs_compensation(state):
            return {}
        saga_id, update, ctx = start(state, config)
        inject = state.get("fail_at") == step.name
        outcome = execute_step(step, ctx, inject_failure=inject)
        return record(state, update, outcome, saga_id)

    async def arun_step(state: SagaState, config: RunnableConfig) -> dict[str, Any]:
        if parallel and needs_compensation(state):
            return {}
        saga_id, update, ctx = start(state, config)
        inject = state.get("fail_at") == step.name
        outcome = await aexecute_step(step, ctx, inject_failure=inject)
        return record(state, update, outcome, saga_id)

    return StepNode(f"run_{step.name}", run_step, arun_step)


def _record_outcome(
    update: dict[str, Any],
    outcome: StepAttempts,
    step: Step,
    saga_id: str,
    *,
    is_last: bool,
    router: str,
) -> dict[str, Any]:
    """The state update of a step node, from what its execute did."""
    update["events"] = outcome.events
    result = outcome.result
    if result is not None and result.usage:
        update["usage"] = {step.name: result.usage}
    if result is None:
        assert outcome.error is not None
        failed = step_failed(
            saga_id, step.name, outcome.error, outcome.attempts, described=outcome.described
        )
        update |= failed.update() | failed_step(step.name)
    elif result.halt:
        update |= halt_record(step.name, result.reason, result.data).update()
    else:
        update |= committed(step.name, result.record())
        if is_last and router == "deterministic":
            update["status"] = "completed"
    return update


class RouteState(TypedDict, total=False):
    """What the edge after a step reads: LangGraph then copies two fields, not the state."""

    failure: FailureRecord | None
    halted: dict[str, Any] | None
    saga_id: str


def needs_compensation(state: SagaState | RouteState) -> bool:
    """True when the saga must stop going forward: a step failed or halted it."""
    return bool(state.get("failure") or state.get("halted"))


RoutedNode = DualNode[SagaState, Command[Any]]
"""A chain's step node that routes itself (module docstring)."""


def _routed(node: StepNode, next_node: str, step_name: str) -> RoutedNode:
    """``node`` returning ``Command(goto=...)``: ``compensate`` when the saga must stop going
    forward once its update is applied, else ``next_node``.

    The same decision as the conditional edge it replaces, which read ``failure`` and
    ``halted`` after the node's writes: a field the update writes wins over the state's.
    """

    def goto(state: SagaState, update: dict[str, Any]) -> Command[Any]:
        failure = update["failure"] if "failure" in update else state.get("failure")
        halted = update["halted"] if "halted" in update else state.get("halted")
        target = COMPENSATE if failure or halted else next_node
        if target != SUPERVISOR:  # handing over to the LLM router decides nothing yet
            saga_id = str(update.get("saga_id") or state.get("saga_id") or "")
            route_decided(saga_id, "deterministic", step_name, goto=target)
        return Command(update=update, goto=target)

    def run(state: SagaState, config: RunnableConfig) -> Command[Any]:
        return goto(state, node.func(state, config))

    async def arun(state: SagaState, config: RunnableConfig) -> Command[Any]:
        return goto(state, await node.afunc(state, config))

    return RoutedNode(str(node.name), run, arun)


def _routed_by_rules(node: StepNode, definition: SagaDefinition) -> RoutedNode:
    """A chain's step node when the definition has optional or alternative steps: the next
    node is what the declared rules choose (:func:`~sagagraph.saga.routes.next_by_rules`) from
    the results committed once its update is applied, decided in the node, so the choice and
    the step's writes land in one checkpoint. A rule's choice is recorded as a ``route`` event.
    """

    def goto(state: SagaState, update: dict[str, Any]) -> Command[Any]:
        failure = update["failure"] if "failure" in update else state.get("failure")
        halted = update["halted"] if "halted" in update else state.get("halted")
        saga_id = str(update.get("saga_id") or state.get("saga_id") or "")
        if failure or halted:
            route_decided(saga_id, "deterministic", str(node.name), goto=COMPENSATE)
            return Command(update=update, goto=COMPENSATE)
        records = dict(state.get("results") or {}) | dict(update.get("results") or {})
        done = [n for n in definition.step_names if n in records]
        choice = next_by_rules(definition, done, facts_from_records(definition, records))
        if choice.detail:
            event = make_event(choice.step, "route", "ok", 1, f"rules: {choice.detail}")
            update["events"] = [*update.get("events", []), event]
        goto = END if choice.step == FINISH else choice.step
        route_decided(saga_id, "deterministic", str(node.name), goto=goto)
        if choice.step == FINISH:
            update["status"] = "completed"
        return Command(update=update, goto=goto)

    def run(state: SagaState, config: RunnableConfig) -> Command[Any]:
        return goto(state, node.func(state, config))

    async def arun(state: SagaState, config: RunnableConfig) -> Command[Any]:
        return goto(state, await node.afunc(state, config))

    return RoutedNode(str(node.name), run, arun)


def successors(definition: SagaDefinition, name: str) -> tuple[str, ...]:
    """The nodes that may follow step ``name`` of a chain with optional or alternative steps:
    the steps of the next points up to the first required one, and ``END`` if none is."""
    points = route_points(definition)
    index = next(i for i, p in enumerate(points) if name in p.steps)
    following: list[str] = []
    for point in points[index + 1 :]:
        following += point.steps
        if not point.optional:
            return tuple(following)
    return (*following, END)


def _route_parallel(
    definition: SagaDefinition, step_name: str, following: list[str]
) -> Callable[[RouteState], Any]:
    """The edge after a step of a parallel definition.

    It sends the saga to ``compensate`` only for a failure or halt of this step (or of the saga
    itself, as a forced rollback records it); a step that did nothing because a sibling
    branch already failed ends its branch, so ``compensate`` is not started a second time.
    """
    steps = set(definition.step_names)

    def owns(record: Mapping[str, object] | None) -> bool:
        return record is not None and (
            record.get("step") == step_name or record.get("step") not in steps
        )

    def decide(state: RouteState) -> Any:
        if owns(state.get("failure")) or owns(state.get("halted")):
            return COMPENSATE
        if needs_compensation(state):
            return END
        return following or END

    def route(state: RouteState) -> Any:
        target = decide(state)
        goto = ",".join(target) if isinstance(target, list) else str(target)
        route_decided(str(state.get("saga_id") or ""), "deterministic", step_name, goto=goto)
        return target

    route.__name__ = f"after_{step_name}"
    return route


"""The node that joins a parallel definition's last branches and marks the saga completed."""


def _complete(state: SagaState, config: RunnableConfig) -> dict[str, Any]:
    """Mark the saga completed once every branch committed (nothing, while compensating)."""
    if needs_compensation(state):
        return {}
    return {"status": "completed"}


async def _acomplete(state: SagaState, config: RunnableConfig) -> dict[str, Any]:
    return _complete(state, config)


def _wire_parallel(
    graph: StateGraph[SagaState, None, SagaState, SagaState], definition: SagaDefinition
) -> None:
    """Edges of a deterministic parallel definition: each step after the steps it needs.

    A step with one dependency follows it through that step's routing edge; a step with
    several waits for all of them (a LangGraph join, which fires however they ended: the step
    then does nothing when one of them failed). Steps nobody needs end the saga; when there
    are several, ``complete`` joins them so that only the last to finish can complete it.
    """
    names = definition.step_names
    graph.add_edge(START, names[0])
    leaves = [n for n in names if not definition.dependants(n)]
    for name in names:
        following = [d for d in definition.dependants(name) if len(definition.dependencies(d)) == 1]
        targets = {n: n for n in following} | {COMPENSATE: COMPENSATE, END: END}
        graph.add_conditional_edges(
            name, _route_parallel(definition, name, following), cast(Any, targets)
        )
    for name in names:
        needs = definition.dependencies(name)
        if len(needs) > 1:
            graph.add_edge(list(needs), name)
    if len(leaves) > 1:
        # A DualNode, like the steps: no executor thread hop under ``ainvoke``.
        graph.add_node(COMPLETE, cast(Any, StepNode(COMPLETE, _complete, _acomplete)))
        graph.add_edge(leaves, COMPLETE)
        graph.add_edge(COMPLETE, END)


def build_saga_graph(
    definition: SagaDefinition,
    router: RouterKind = "deterministic",
    *,
    router_model: Any = None,
    router_options: Any = None,
    on_escalation: AlertHook | None = None,
    output: Literal["state", "view"] = "state",
) -> StateGraph[SagaState, None, SagaState, Any]:
    """Build the uncompiled saga graph; compile it with a checkpointer to run it.

    ``router="deterministic"`` (default) runs the steps in their defined order and makes no
    model call to route. ``router="llm"`` asks ``router_model`` (a LangChain chat model) for each
    next step, behind a guard that rejects undefined or out-of-order steps.
    ``on_escalation`` is called with the failure record when a compensation exhausts its retries.
    ``output="view"`` makes the graph return the JSON view's fields (:class:`SagaOutput`)
    instead of the whole state, as LangGraph Server and Studio show a run's result.
    """
    if output not in ("state", "view"):
        raise ConfigurationError(f"output: expected 'state' or 'view', got {output!r}")
    graph: StateGraph[SagaState, None, SagaState, Any] = StateGraph(
        SagaState, output_schema=SagaOutput if output == "view" else SagaState
    )
    names = definition.step_names
    refuse_reserved(names)
    chain = definition.is_chain
    if router not in ("deterministic", "llm"):
        raise ConfigurationError(f"router: expected 'deterministic' or 'llm', got {router!r}")
    if router == "llm" and not chain:
        raise ConfigurationError(
            f"saga {definition.name!r}: parallel steps (Step.after) need router='deterministic'"
        )
    for i, step in enumerate(definition.steps):
        # With optional or alternative steps, the rules decide when the saga is completed.
        is_last = i == len(names) - 1 and not definition.has_choices
        if not chain:
            # A parallel definition's only last step may complete the saga; with several,
            # the ``complete`` join does.
            leaves = [n for n in names if not definition.dependants(n)]
            is_last = leaves == [step.name]
        node = make_step_node(definition, step, is_last=is_last, router=router)
        if not chain:
            graph.add_node(step.name, cast(Any, node))  # see compensation.add_compensation_nodes
            continue
        if router == "deterministic" and definition.has_choices:
            routed = _routed_by_rules(node, definition)
            destinations: tuple[str, ...] = (*successors(definition, step.name), COMPENSATE)
        else:
            last = i == len(names) - 1
            nxt = SUPERVISOR if router == "llm" else names[i + 1] if not last else END
            routed, destinations = _routed(node, nxt, step.name), (nxt, COMPENSATE)
        graph.add_node(
            step.name,
            cast(Any, routed),
            destinations=destinations,
            metadata={ROUTES_ITSELF: True},
        )
    add_compensation_nodes(graph, definition, on_escalation=on_escalation)

    if not chain:
        _wire_parallel(graph, definition)
    elif router == "deterministic":
        graph.add_edge(START, names[0])
    else:
        from sagagraph.graph.llm_router import make_supervisor
        from sagagraph.graph.router_options import RouterOptions

        if router_model is None:
            raise ConfigurationError("router='llm' needs router_model (a LangChain chat model)")
        options = router_options if router_options is not None else RouterOptions()
        graph.add_node(
            SUPERVISOR,
            cast(Any, make_supervisor(definition, router_model, options)),
            destinations=(*names, COMPENSATE, END),
        )
        graph.add_edge(START, SUPERVISOR)
    remember_definition(graph, definition)  # run_saga checks a new saga's input with it
    return graph
