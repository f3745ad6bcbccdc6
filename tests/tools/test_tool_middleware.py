"""ToolCompensationMiddleware alone: one ``create_agent`` agent with a LangGraph checkpointer.

The agent is driven by the real ChatOpenAI client against the scripted server; its tools call
the travel swarm's SQLite partners.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from examples.travel_swarm.billing import PaymentRefused, billing_tools
from examples.travel_swarm.flight import flight_tools
from examples.travel_swarm.hotel import hotel_tools
from examples.travel_swarm.partners import FLIGHT, HOTELS, TravelStores, holdings, open_partners
from sagagraph import ConfigurationError, Retry, ToolUndoError, create_compensating_agent
from sagagraph.errors import AgentRunError
from tests.support.openai_server import Reply, ScriptedOpenAIServer
from tests.support.swarm_support import chat_model

BOOK = Reply(
    tool_calls=[
        {"name": "book_flight", "arguments": json.dumps({"flight": FLIGHT, "traveller": "bob"})}
    ]
)


def reserve(hotel: str) -> Reply:
    args = {"hotel_name": hotel, "guest": "bob", "nights": 3}
    return Reply(tool_calls=[{"name": "reserve_room", "arguments": json.dumps(args)}])


def charge(owner: str, cents: int) -> Reply:
    args = {"owner": owner, "amount_cents": cents}
    return Reply(tool_calls=[{"name": "charge_wallet", "arguments": json.dumps(args)}])


TRIP_COST = 42_000 + 3 * 9_500


class Script:
    """Replies in order, whatever the request."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []

    def __call__(self, request: dict[str, Any]) -> Reply:
        return self.replies.pop(0) if self.replies else Reply(content="done")


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def server(script: Script) -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(script) as running:
        yield running


@pytest.fixture
def stores(tmp_path: Path) -> TravelStores:
    return open_partners(tmp_path / "partners")


@pytest.fixture
def undos(stores: TravelStores) -> list[str]:
    """Every cancel or refund that gave something back, in order (key)."""
    journal: list[str] = []

    def recording(method: Callable[[str, str], bool]) -> Callable[[str, str], bool]:
        def call(key: str, saga_id: str) -> bool:
            returned = method(key, saga_id)
            if returned:
                journal.append(key)
            return returned

        return call

    stores.airline.cancel = recording(stores.airline.cancel)  # type: ignore[method-assign,assignment]
    stores.hotel.cancel = recording(stores.hotel.cancel)  # type: ignore[method-assign,assignment]
    stores.wallet.refund = recording(stores.wallet.refund)  # type: ignore[method-assign,assignment]
    return journal


def all_tools(stores: TravelStores) -> list[Any]:
    return [
        *flight_tools(stores.airline),
        *hotel_tools(stores.hotel),
        *billing_tools(stores.wallet),
    ]


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    with SqliteSaver.from_conn_string(str(tmp_path / "agent.sqlite")) as checkpointer:
        yield checkpointer


def agent_for(server: ScriptedOpenAIServer, tools: list[Any], saver: SqliteSaver, **kw: Any) -> Any:
    agent, middleware = create_compensating_agent(
        chat_model(server), tools, checkpointer=saver, undo_retry=Retry(max_attempts=2), **kw
    )
    return agent, middleware


def ask(agent: Any, thread: str) -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread}}
    result: dict[str, Any] = agent.invoke(
        {"messages": [{"role": "user", "content": "trip"}]}, config
    )
    return result


def statuses(agent: Any, thread: str) -> list[tuple[str, str]]:
    values = agent.get_state({"configurable": {"thread_id": thread}}).values
    return [(c["key"], c["status"]) for c in values.get("tool_calls") or []]


def test_a_run_that_succeeds_logs_each_call_and_undoes_nothing(
    server: ScriptedOpenAIServer,
    script: Script,
    stores: TravelStores,
    saver: SqliteSaver,
    undos: list[str],
) -> None:
    agent, _ = agent_for(server, all_tools(stores), saver)
    script.replies = [BOOK, reserve(HOTELS[1]), charge("ada", TRIP_COST)]

    ask(agent, "t-ok")

    assert statuses(agent, "t-ok") == [
        ("t-ok:agent:call-1", "forward"),
        ("t-ok:agent:call-2", "forward"),
        ("t-ok:agent:call-3", "forward"),
    ]
    assert undos == []
    assert holdings(stores, "ada")["live"] == {
        "airline": ["t-ok:agent:call-1"],
        "hotel": ["t-ok:agent:call-2"],
        "wallet": ["t-ok:agent:call-3"],
    }


def test_a_tool_error_the_model_recovers_from_is_not_a_failure_of_the_run(
    server: ScriptedOpenAIServer,
    script: Script,
    stores: TravelStores,
    saver: SqliteSaver,
    undos: list[str],
) -> None:
    agent, _ = agent_for(server, all_tools(stores), saver)
    script.replies = [reserve(HOTELS[0]), reserve(HOTELS[1])]  # FULL, then a free hotel

    ask(agent, "t-retry")

    assert statuses(agent, "t-retry") == [
        ("t-retry:agent:call-1", "failed"),
        ("t-retry:agent:call-2", "forward"),
    ]
    assert undos == []


def test_a_failed_run_undoes_its_calls_newest_first_then_reraises_and_never_undoes_twice(
    server: ScriptedOpenAIServer,
    script: Script,
    stores: TravelStores,
    saver: SqliteSaver,
    undos: list[str],
) -> None:
    agent, _ = agent_for(server, all_tools(stores), saver)
    before = holdings(stores, "bob")
    script.replies = [BOOK, reserve(HOTELS[1]), charge("bob", TRIP_COST)]

    with pytest.raises(PaymentRefused, match="INSUFFICIENT_FUNDS"):
        ask(agent, "t-bob")

    assert undos == ["t-bob:agent:call-2", "t-bob:agent:call-1"]
    assert statuses(agent, "t-bob") == [
        ("t-bob:agent:call-1", "undone"),
        ("t-bob:agent:call-2", "undone"),
        ("t-bob:agent:call-3", "failed"),
    ]
    assert holdings(stores, "bob") == before
    # Resuming the failed run raises again; the log says undone, so nothing is undone again.
    with pytest.raises(AgentRunError, match="INSUFFICIENT_FUNDS"):
        agent.invoke(None, {"configurable": {"thread_id": "t-bob"}})
    assert undos == ["t-bob:agent:call-2", "t-bob:agent:call-1"]


def test_a_failed_model_call_undoes_the_calls_made_before_it(
    server: ScriptedOpenAIServer,
    script: Script,
    stores: TravelStores,
    saver: SqliteSaver,
    undos: list[str],
) -> None:
    agent, _ = agent_for(server, all_tools(stores), saver)
    script.replies = [BOOK, Reply(status=500, content="model down")]

    with pytest.raises(openai.InternalServerError):
        ask(agent, "t-model")

    assert undos == ["t-model:agent:call-1"]
    assert statuses(agent, "t-model") == [("t-model:agent:call-1", "undone")]


def test_a_failed_undo_is_retried_then_reported_with_the_calls_left_in_effect(
    server: ScriptedOpenAIServer,
    script: Script,
    stores: TravelStores,
    saver: SqliteSaver,
    undos: list[str],
) -> None:
    real_cancel = stores.hotel.cancel
    attempts: list[str] = []

    def broken_cancel(key: str, saga_id: str) -> bool:
        attempts.append(key)
        raise ConnectionError("hotel partner unreachable")

    stores.hotel.cancel = broken_cancel  # type: ignore[method-assign]
    agent, middleware = agent_for(server, all_tools(stores), saver)
    script.replies = [BOOK, reserve(HOTELS[1]), charge("bob", TRIP_COST)]

    with pytest.raises(ToolUndoError, match="t-undo:agent:call-2") as raised:
        ask(agent, "t-undo")

    assert raised.value.not_undone == ["t-undo:agent:call-2"]
    assert isinstance(raised.value.__cause__, PaymentRefused)
    assert attempts == ["t-undo:agent:call-2"] * 2  # Retry(max_attempts=2)
    assert undos == ["t-undo:agent:call-1"]  # the flight was still undone
    assert ("t-undo:agent:call-2", "undo_failed") in statuses(agent, "t-undo")

    # Once the partner is back, rollback() undoes what is left, and only that.
    stores.hotel.cancel = real_cancel  # type: ignore[method-assign]
    report = middleware.rollback(agent, {"configurable": {"thread_id": "t-undo"}})
    assert [c["key"] for c in report.undone] == ["t-undo:agent:call-2"]
    assert ("t-undo:agent:call-2", "undone") in statuses(agent, "t-undo")
    assert holdings(stores, "bob")["live"] == {"airline": [], "hotel": [], "wallet": []}


def test_a_second_run_on_the_thread_undoes_only_its_own_calls(
    server: ScriptedOpenAIServer,
    script: Script,
    stores: TravelStores,
    saver: SqliteSaver,
    undos: list[str],
) -> None:
    agent, _ = agent_for(server, all_tools(stores), saver)
    script.replies = [BOOK, Reply(content="booked")]
    ask(agent, "t-two")
    script.replies = [reserve(HOTELS[1]), charge("bob", 10**9)]

    with pytest.raises(PaymentRefused):
        ask(agent, "t-two")

    assert undos == ["t-two:agent:call-2"]
    assert statuses(agent, "t-two")[0] == ("t-two:agent:call-1", "forward")


def test_an_undeclared_tool_is_refused_with_its_name(
    server: ScriptedOpenAIServer, saver: SqliteSaver
) -> None:
    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        return "sent"

    with pytest.raises(ConfigurationError, match="'send_email' is not declared"):
        agent_for(server, [send_email], saver)
