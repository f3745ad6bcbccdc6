"""The three-step paper saga with fake agents, as sagagraph runs it and as a plain LangGraph graph.

Both sides call the same :class:`FakeAgent` objects, so they do the same agent work: nothing
(``latency=0``) for the engine-overhead benchmark, or a simulated model call that sleeps
``latency`` seconds. The plain graph is what one writes with LangGraph alone: three nodes,
one compensation node that undoes the committed steps in reverse, a conditional edge after
each step, and the same checkpointer and durability.
"""

from __future__ import annotations

import asyncio
import operator
import time
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from sagagraph import SagaDefinition, Step, StepContext, StepResult

STEPS = ("validator", "reviewer", "summarizer")
PAPER_INPUT = {"paper": "papers/attention.pdf"}
"""The saga input: a path, as the real paper saga has."""


class FakeAgent:
    """An agent whose model call takes ``latency`` seconds and whose result is small."""

    def __init__(self, name: str, latency: float = 0.0) -> None:
        self.name = name
        self.latency = latency

    def execute(self, ctx: StepContext) -> StepResult:
        if self.latency:
            time.sleep(self.latency)
        return StepResult(data={"step": self.name, "verdict": "ok"})

    async def aexecute(self, ctx: StepContext) -> StepResult:
        if self.latency:
            await asyncio.sleep(self.latency)
        return StepResult(data={"step": self.name, "verdict": "ok"})

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        pass

    async def acompensate(self, ctx: StepContext, result: StepResult | None) -> None:
        pass


def fake_agents(latency: float = 0.0) -> list[FakeAgent]:
    return [FakeAgent(name, latency) for name in STEPS]


def fake_definition(agents: list[FakeAgent]) -> SagaDefinition:
    """The sagagraph side: the paper saga's three steps, default policies."""
    return SagaDefinition("paper_review", tuple(Step(a) for a in agents))


class PlainState(TypedDict, total=False):
    input: dict[str, Any]
    fail_at: str | None
    results: Annotated[dict[str, Any], operator.or_]
    failed: str | None
    compensated: Annotated[list[str], operator.add]


def _context(state: PlainState, config: RunnableConfig, step: str) -> StepContext:
    thread = str((config.get("configurable") or {}).get("thread_id"))
    return StepContext(thread, step, state.get("input") or {}, {})


def plain_graph(
    agents: list[FakeAgent], *, asynchronous: bool = False
) -> StateGraph[PlainState, None, PlainState, PlainState]:
    """The plain LangGraph graph; ``asynchronous`` makes every node and edge a coroutine."""
    graph: StateGraph[PlainState, None, PlainState, PlainState] = StateGraph(PlainState)
    by_name = {a.name: a for a in agents}

    def sync_node(agent: FakeAgent) -> Any:
        def node(state: PlainState, config: RunnableConfig) -> dict[str, Any]:
            if state.get("fail_at") == agent.name:
                return {"failed": agent.name}
            try:
                result = agent.execute(_context(state, config, agent.name))
            except Exception:
                return {"failed": agent.name}
            return {"results": {agent.name: dict(result.data)}}

        return node

    def async_node(agent: FakeAgent) -> Any:
        async def node(state: PlainState, config: RunnableConfig) -> dict[str, Any]:
            if state.get("fail_at") == agent.name:
                return {"failed": agent.name}
            try:
                result = await agent.aexecute(_context(state, config, agent.name))
            except Exception:
                return {"failed": agent.name}
            return {"results": {agent.name: dict(result.data)}}

        return node

    def to_undo(state: PlainState) -> list[str]:
        done = [s for s in STEPS if s in (state.get("results") or {})]
        failed = state.get("failed")
        return ([failed] if failed else []) + list(reversed(done))

    def compensate(state: PlainState, config: RunnableConfig) -> dict[str, Any]:
        undone = to_undo(state)
        for name in undone:
            by_name[name].compensate(_context(state, config, name), None)
        return {"compensated": undone}

    async def acompensate(state: PlainState, config: RunnableConfig) -> dict[str, Any]:
        undone = to_undo(state)
        for name in undone:
            await by_name[name].acompensate(_context(state, config, name), None)
        return {"compensated": undone}

    for agent in agents:
        graph.add_node(agent.name, async_node(agent) if asynchronous else sync_node(agent))
    graph.add_node("compensate", acompensate if asynchronous else compensate)
    graph.add_edge(START, STEPS[0])
    for i, name in enumerate(STEPS):
        nxt = STEPS[i + 1] if i + 1 < len(STEPS) else END
        graph.add_conditional_edges(name, _router(nxt, asynchronous), [nxt, "compensate"])
    graph.add_edge("compensate", END)
    return graph


def _router(nxt: str, asynchronous: bool) -> Any:
    def route(state: PlainState) -> str:
        return "compensate" if state.get("failed") else nxt

    async def aroute(state: PlainState) -> str:
        return "compensate" if state.get("failed") else nxt

    return aroute if asynchronous else route


def plain_input(fail_at: str | None = None) -> PlainState:
    return {"input": dict(PAPER_INPUT), "fail_at": fail_at}


def thread(thread_id: str) -> RunnableConfig:
    """The LangGraph config of one plain-graph run."""
    return {"configurable": {"thread_id": thread_id}}
