"""Agent steps keep LangChain's middleware: call limits, summarization, and async runs.

The model is the real ``ChatOpenAI`` client against the scripted server; it asks for one
``hold_room`` call a turn, three turns, then answers. ``SummarizationMiddleware`` replaces
the older messages (and the calls they hold) with a summary: the call log still gives each
call its own key, so the partner and the rollback see three holds, not two.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents.middleware import SummarizationMiddleware, ToolCallLimitMiddleware
from langchain_core.tools import tool

from sagagraph import (
    SagaDefinition,
    agent_step,
    arun_saga,
    build_saga_graph,
    compensable,
    new_saga_id,
    open_async_checkpointer,
    open_checkpointer,
    run_saga,
)
from tests.support.gated_saga import Notify, Partner, chat_model
from tests.support.openai_server import Reply, ScriptedOpenAIServer, request_text

HOTELS = ["old-town", "harbour", "station"]


def three_holds() -> Callable[[dict[str, Any]], Reply]:
    """One ``hold_room`` call a turn for three turns, then an answer; a summary request
    (the summarization middleware's own) is answered with a summary."""
    turns = itertools.count()
    lock = threading.Lock()

    def respond(request: dict[str, Any]) -> Reply:
        if "Context Extraction Assistant" in request_text(request):
            return Reply(content="The traveller's rooms are being held.")
        with lock:
            turn = next(turns)
        if turn < len(HOTELS):
            args = json.dumps({"hotel": HOTELS[turn]})
            return Reply(tool_calls=[{"name": "hold_room", "arguments": args}])
        return Reply(content="held")

    return respond


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(three_holds()) as started:
        yield started


def holds_saga(folder: Path, base_url: str, middleware: list[Any]) -> SagaDefinition:
    partner = Partner(folder)

    @tool
    def hold_room(hotel: str) -> str:
        """Hold a room at ``hotel``."""
        return partner.do("hold_room", {"hotel": hotel})

    step = agent_step(
        "hold",
        chat_model(base_url),
        [compensable(hold_room, undo=partner.undo)],
        prompt=lambda ctx: "Hold three rooms, one at a time.",
        middleware=middleware,
    )
    return SagaDefinition.of("holds", [step, Notify()])


def summarizing(base_url: str) -> SummarizationMiddleware:
    return SummarizationMiddleware(
        chat_model(base_url), trigger=("messages", 4), keep=("messages", 2)
    )


@pytest.mark.parametrize("fail_at", [None, "notify"])
def test_summarized_calls_keep_their_own_keys_and_are_all_undone(
    fail_at: str | None, tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    saga = holds_saga(tmp_path, server.base_url, [summarizing(server.base_url)])
    with open_checkpointer(f"sqlite:///{tmp_path / 'sagas.sqlite'}") as checkpointer:
        app = build_saga_graph(saga).compile(checkpointer=checkpointer)
        view = run_saga(app, {"traveller": "ada"}, saga_id=new_saga_id("hold"), fail_at=fail_at)
    # The summarizer ran: some request carried the summary instead of the first turns.
    assert any("rooms are being held" in request_text(r) for r in server.requests)
    saga_id = view["saga_id"]
    keys = [f"{saga_id}:hold:call-{n}" for n in (1, 2, 3)]
    rows = Partner(tmp_path).rows()
    assert [(r["key"], r["args"]["hotel"]) for r in rows] == list(zip(keys, HOTELS, strict=True))
    if fail_at is None:
        assert view["status"] == "completed"
        calls = view["results"]["hold"]["tool_calls"]
        assert [(c["key"], c["args"]["hotel"]) for c in calls] == list(
            zip(keys, HOTELS, strict=True)
        )
    else:
        assert view["status"] == "rolled_back"
        assert [r["state"] for r in rows] == ["undone"] * 3
        undos = [e["key"] for e in view["events"] if e["action"] == "tool_undo"]
        assert undos == keys[::-1]  # newest first


def test_a_call_limit_fails_the_step_and_the_saga_undoes_what_ran(
    tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    limit = ToolCallLimitMiddleware(tool_name="hold_room", run_limit=2, exit_behavior="error")
    saga = holds_saga(tmp_path, server.base_url, [limit])
    with open_checkpointer(f"sqlite:///{tmp_path / 'sagas.sqlite'}") as checkpointer:
        app = build_saga_graph(saga).compile(checkpointer=checkpointer)
        view = run_saga(app, {"traveller": "ada"}, saga_id=new_saga_id("hold"))
    assert view["status"] == "rolled_back"
    assert "ToolCallLimitExceededError" in view["failure"]["error"]
    rows = Partner(tmp_path).rows()
    assert [(r["args"]["hotel"], r["state"]) for r in rows] == [
        ("old-town", "undone"),
        ("harbour", "undone"),
    ]


def test_an_async_saga_runs_the_agent_step_with_ainvoke_and_its_middleware(
    tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    import asyncio

    saga = holds_saga(tmp_path, server.base_url, [summarizing(server.base_url)])

    async def main() -> dict[str, Any]:
        async with open_async_checkpointer(f"sqlite:///{tmp_path / 'a.sqlite'}") as saver:
            app = build_saga_graph(saga).compile(checkpointer=saver)
            return await arun_saga(
                app, {"traveller": "ada"}, saga_id=new_saga_id("hold"), fail_at="notify"
            )

    view = asyncio.run(main())
    assert view["status"] == "rolled_back"
    rows = Partner(tmp_path).rows()
    assert [r["state"] for r in rows] == ["undone"] * 3
    assert len({r["key"] for r in rows}) == 3


def test_an_async_saga_waits_for_approval_and_resumes_with_command(
    tmp_path: Path,
) -> None:
    import asyncio

    from langgraph.types import Command

    from sagagraph import asaga_status, saga_config
    from tests.support.gated_saga import definition, responder

    async def main(base_url: str) -> tuple[dict[str, Any], dict[str, Any]]:
        saga = definition(tmp_path, base_url)
        async with open_async_checkpointer(f"sqlite:///{tmp_path / 'a.sqlite'}") as saver:
            app = build_saga_graph(saga).compile(checkpointer=saver)
            saga_id = new_saga_id("pay")
            paused = await arun_saga(app, {"traveller": "ada"}, saga_id=saga_id)
            answers = {a["id"]: {"type": "approve"} for a in paused["approvals"]}
            await app.ainvoke(Command(resume=answers), saga_config(saga_id), durability="sync")
            return paused, await asaga_status(app, saga_id)

    with ScriptedOpenAIServer(responder) as gated:
        paused, done = asyncio.run(main(gated.base_url))
    assert paused["status"] == "waiting_for_operator"
    assert len(paused["approvals"]) == 2
    assert done["status"] == "completed"
    assert {e["state"] for e in Partner(tmp_path).effects().values()} == {"done"}
