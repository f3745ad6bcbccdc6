"""The LLM router under ``ainvoke``: the model is asked with ``ainvoke``, and the saga ends as
it does under ``invoke`` (same guard, events, counters, tokens and fallback).

The real ``ChatOpenAI`` client talks to the scripted local server (tests/support/openai_server.py).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI

from sagagraph import build_saga_graph, open_checkpointer, run_saga
from sagagraph.checkpoints.async_factory import open_async_checkpointer
from sagagraph.graph.async_runner import arun_saga
from sagagraph.graph.routing import RouterOptions
from tests.support.openai_server import Reply, ScriptedOpenAIServer, structured
from tests.support.toy_saga import Journal, comparable, toy_saga

CALLS: list[tuple[str, str]] = []
"""``(sync|async, thread name)`` of every call a :class:`RecordingChat` made."""


class RecordingChat(ChatOpenAI):
    """``ChatOpenAI`` that records whether each call was sync or async, and on which thread."""

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        CALLS.append(("sync", threading.current_thread().name))
        return super()._generate(*args, **kwargs)

    async def _agenerate(self, *args: Any, **kwargs: Any) -> Any:
        CALLS.append(("async", threading.current_thread().name))
        return await super()._agenerate(*args, **kwargs)


class Script:
    """Scripted proposals first (a step name, ``raw:<text>`` or a Reply), then s1, s2, s3,
    finish in order."""

    def __init__(self, entries: list[str | Reply]) -> None:
        self.entries = list(entries)
        self.order = ["s1", "s2", "s3", "finish"]

    def __call__(self, request: dict[str, Any]) -> Reply:
        if self.entries:
            entry = self.entries.pop(0)
            if isinstance(entry, Reply):
                return entry
            if entry.startswith("raw:"):
                return structured(request, entry[4:])
            return structured(request, {"next_step": entry, "reason": "scripted"})
        view = json.loads(request["messages"][-1]["content"])
        pending = [s for s in self.order if s not in view["committed"]]
        return structured(request, {"next_step": pending[0], "reason": "next in order"})


@pytest.fixture(autouse=True)
def fresh_calls() -> Iterator[None]:
    CALLS.clear()
    yield
    CALLS.clear()


def chat(server: ScriptedOpenAIServer) -> RecordingChat:
    return RecordingChat(
        model="gpt-test", base_url=server.base_url, api_key="sk-test", max_retries=0
    )


def run_both(
    tmp_path: Path, script: list[str | Reply], options: RouterOptions, fail_at: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The same scripted saga under ``invoke`` (first) and ``ainvoke``; both views."""
    with ScriptedOpenAIServer(Script(script)) as server:
        definition = toy_saga(3, Journal(tmp_path / "sync.sqlite"))
        graph = build_saga_graph(
            definition, "llm", router_model=chat(server), router_options=options
        )
        with open_checkpointer("memory://") as checkpointer:
            sync_view = run_saga(
                graph.compile(checkpointer=checkpointer), {}, saga_id="r", fail_at=fail_at
            )

    async def arun() -> dict[str, Any]:
        with ScriptedOpenAIServer(Script(script)) as server:
            definition = toy_saga(3, Journal(tmp_path / "async.sqlite"))
            graph = build_saga_graph(
                definition, "llm", router_model=chat(server), router_options=options
            )
            async with open_async_checkpointer("memory://") as checkpointer:
                app = graph.compile(checkpointer=checkpointer)
                return await arun_saga(app, {}, saga_id="r", fail_at=fail_at)

    return sync_view, asyncio.run(arun())


def test_the_router_model_is_awaited_under_ainvoke(tmp_path: Path) -> None:
    sync_view, async_view = run_both(tmp_path, [], RouterOptions())

    assert sync_view["status"] == async_view["status"] == "completed"
    sync_calls, async_calls = CALLS[:4], CALLS[4:]
    assert [kind for kind, _ in sync_calls] == ["sync"] * 4
    # Awaited on the event loop's thread: no thread of asyncio's default executor held.
    assert async_calls == [("async", threading.main_thread().name)] * 4


DOWN = Reply(status=500, content="down")

CASES: dict[str, tuple[list[str | Reply], RouterOptions, str | None, str, list[str]]] = {
    # script, options, fail_at, final status, outcomes of the route events
    "well-behaved": ([], RouterOptions(), None, "completed", ["ok"] * 4),
    "rejected-then-fallback": (
        ["publish", "raw:not json"],
        RouterOptions(max_attempts=2),
        None,
        "completed",
        ["rejected", "rejected"] + ["ok"] * 4,
    ),
    "out-of-order-then-accepted": (
        ["s3", "s1"],
        RouterOptions(max_attempts=2),
        None,
        "completed",
        ["rejected"] + ["ok"] * 4,
    ),
    "abort-after-failed-calls": (
        ["s1", "s2", DOWN, DOWN],
        RouterOptions(max_attempts=2, fallback="abort"),
        None,
        "rolled_back",
        ["ok", "ok", "error", "error", "error"],
    ),
    "step-failure": ([], RouterOptions(), "s2", "rolled_back", ["ok", "ok"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_llm_routed_sagas_end_alike_under_invoke_and_ainvoke(tmp_path: Path, case: str) -> None:
    script, options, fail_at, status, routes = CASES[case]

    sync_view, async_view = run_both(tmp_path, script, options, fail_at)

    assert comparable(async_view) == comparable(sync_view)
    assert async_view["status"] == status
    assert async_view["router"] == "llm"
    assert [e["outcome"] for e in async_view["events"] if e["action"] == "route"] == routes
