"""Saga definition -> LangGraph ``StateGraph``.

Deterministic mode wires the steps in order with one pure routing function after each step:
on success it names the next step, on failure or an intended halt it names ``compensate``.
LLM-router mode puts a ``supervisor`` node between steps (see :mod:`sagagraph.graph.llm_router`).
The graph is returned uncompiled, so the caller (or LangGraph Server) picks the checkpointer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from sagagraph.agents.execution import execute_step
from sagagraph.agents.protocol import SagaDefinition, Step
from sagagraph.agents.view import FailureRecord, describe_error
from sagagraph.graph.compensation import add_compensation_nodes
from sagagraph.graph.context import context_for, saga_identity
from sagagraph.graph.state import SagaState

log = logging.getLogger("sagagraph")

RouterKind = Literal["deterministic", "llm"]
AlertHook = Callable[[dict[str, Any]], None]


def make_step_node(
    definition: SagaDefinition, step: Step, *, is_last: bool, router: str
) -> Callable[[SagaState, RunnableConfig], dict[str, Any]]:
    """A node that runs one step's execute (with its retries) and records what happened."""

    def run_step(state: SagaState, config: RunnableConfig) -> dict[str, Any]:
        saga_id, update = saga_identity(definition, state, config, router)
        ctx = context_for(definition, state, step.name, saga_id)
        outcome = execute_step(step, ctx, inject_failure=state.get("fail_at") == step.name)
        update["events"] = outcome.events
        result = outcome.result
        if result is not None and result.usage:
            update["usage"] = {step.name: result.usage}
        if result is None:
            error = outcome.error
            assert error is not None
            failure: FailureRecord = {
                "step": step.name,
                "phase": "execute",
                "error": describe_error(error),
                "attempts": outcome.attempts,
            }
            log.warning("saga %s: step %s failed: %s", saga_id, step.name, failure["error"])
            update |= {
                "status": "compensating",
                "failure": failure,
                "reason": f"step {step.name!r} failed after {outcome.attempts} "
                f"attempt(s): {failure['error']}",
            }
        elif result.halt:
            update |= {
                "halted": {"step": step.name, "reason": result.reason, "data": dict(result.data)},
                "reason": result.reason or f"step {step.name!r} halted the saga",
            }
        else:
            update["results"] = {step.name: result.record()}
            if is_last and router == "deterministic":
                update["status"] = "completed"
        return update

    run_step.__name__ = f"run_{step.name}"
    return run_step


def needs_compensation(state: SagaState) -> bool:
    """True when the saga must stop going forward: a step failed or halted it."""
    return bool(state.get("failure") or state.get("halted"))


def _route_after(step_name: str, next_node: str) -> Callable[[SagaState], str]:
    def route(state: SagaState) -> str:
        return "compensate" if needs_compensation(state) else next_node

    route.__name__ = f"after_{step_name}"
    return route


def build_saga_graph(
    definition: SagaDefinition,
    router: RouterKind = "deterministic",
    *,
    router_model: Any = None,
    router_options: Any = None,
    on_escalation: AlertHook | None = None,
) -> StateGraph[SagaState, None, SagaState, SagaState]:
    """Build the uncompiled saga graph; compile it with a checkpointer to run it.

    ``router="deterministic"`` (default) runs the steps in their defined order and makes no
    model call to route. ``router="llm"`` asks ``router_model`` (a LangChain chat model) for each
    next step, behind a guard that rejects undefined or out-of-order steps.
    ``on_escalation`` is called with the failure record when a compensation exhausts its retries.
    """
    graph: StateGraph[SagaState, None, SagaState, SagaState] = StateGraph(SagaState)
    names = definition.step_names
    for i, step in enumerate(definition.steps):
        node = make_step_node(definition, step, is_last=i == len(names) - 1, router=router)
        graph.add_node(step.name, cast(Any, node))  # see compensation.add_compensation_nodes
    add_compensation_nodes(graph, definition, on_escalation=on_escalation)

    if router == "deterministic":
        graph.add_edge(START, names[0])
        for i, name in enumerate(names):
            nxt = names[i + 1] if i + 1 < len(names) else END
            graph.add_conditional_edges(
                name, _route_after(name, nxt), {nxt: nxt, "compensate": "compensate"}
            )
    elif router == "llm":
        from sagagraph.graph.llm_router import RouterOptions, make_supervisor

        if router_model is None:
            from sagagraph.errors import ConfigurationError

            raise ConfigurationError("router='llm' needs router_model (a LangChain chat model)")
        options = router_options if router_options is not None else RouterOptions()
        graph.add_node(
            "supervisor",
            cast(Any, make_supervisor(definition, router_model, options)),
            destinations=(*names, "compensate", END),
        )
        graph.add_edge(START, "supervisor")
        for name in names:
            graph.add_conditional_edges(
                name,
                _route_after(name, "supervisor"),
                {"supervisor": "supervisor", "compensate": "compensate"},
            )
    else:
        from sagagraph.errors import ConfigurationError

        raise ConfigurationError(f"router: expected 'deterministic' or 'llm', got {router!r}")
    return graph
