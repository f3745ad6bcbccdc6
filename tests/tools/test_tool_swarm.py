"""The travel swarm through the real ChatOpenAI client against the scripted server.

Every agent is a ``create_agent`` agent calling tools over a SQLite partner; the saga runs on
each checkpointer backend, with the deterministic supervisor and with the LLM router.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from examples.travel_swarm.flight import flight_tools
from examples.travel_swarm.partners import FLIGHT, HOTELS, holdings
from sagagraph import CompensatedKeyError, new_saga_id, run_saga
from sagagraph.tools.declare import calling_with_key
from tests.support.openai_server import ScriptedOpenAIServer
from tests.support.swarm_support import (
    SwarmResponder,
    chat_model,
    forward_keys,
    swarm_app,
    undo_keys,
)

ADA = {"traveller": "ada", "flight": FLIGHT, "nights": 3}
BOB = {"traveller": "bob", "flight": FLIGHT, "nights": 3}


@pytest.fixture
def responder() -> SwarmResponder:
    return SwarmResponder()


@pytest.fixture
def server(responder: SwarmResponder) -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(responder) as running:
        yield running


def run_trip(
    tmp_path: Path, url: str, server: ScriptedOpenAIServer, trip: dict[str, Any], router: str
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], Any]:
    with swarm_app(tmp_path / "partners", url, chat_model(server), router) as (app, stores):
        before = holdings(stores, trip["traveller"])
        view = run_saga(app, trip, saga_id=new_saga_id("trip"))
        return view, before, holdings(stores, trip["traveller"]), stores


@pytest.mark.parametrize("router", ["deterministic", "llm"])
def test_the_swarm_books_the_trip_and_keeps_one_booking_per_call(
    router: str, checkpointer_url: str, server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    view, before, after, _ = run_trip(tmp_path, checkpointer_url, server, ADA, router)

    assert view["status"] == "completed", view["reason"]
    assert view["completed"] == ["flight", "hotel", "billing"]
    sid = view["saga_id"]
    assert view["tools"] == {
        "flight": [{"tool": "book_flight", "key": f"{sid}:flight:call-1", "status": "forward"}],
        "hotel": [
            {"tool": "reserve_room", "key": f"{sid}:hotel:call-1", "status": "failed"},
            {"tool": "reserve_room", "key": f"{sid}:hotel:call-2", "status": "forward"},
        ],
        "billing": [{"tool": "charge_wallet", "key": f"{sid}:billing:call-1", "status": "forward"}],
    }
    assert undo_keys(view) == []
    assert after["seats_free"] == before["seats_free"] - 1
    assert after["rooms_free"] == {HOTELS[0]: 0, HOTELS[1]: before["rooms_free"][HOTELS[1]] - 1}
    assert after["balance_cents"] == before["balance_cents"] - (42_000 + 3 * 9_500)
    assert after["live"] == {
        "airline": [f"{sid}:flight:call-1"],
        "hotel": [f"{sid}:hotel:call-2"],
        "wallet": [f"{sid}:billing:call-1"],
    }
    if router == "llm":
        routes = [e for e in view["events"] if e["action"] == "route"]
        assert [e["outcome"] for e in routes] == ["ok"] * 4


def test_a_model_that_retries_a_failed_tool_call_triggers_no_undo(
    server: ScriptedOpenAIServer, responder: SwarmResponder, tmp_path: Path
) -> None:
    # The first hotel answers FULL (a tool error the model sees), the model asks the next one.
    view, *_ = run_trip(
        tmp_path, f"sqlite:///{tmp_path / 's.sqlite'}", server, ADA, "deterministic"
    )

    assert view["status"] == "completed"
    assert responder.agent_requests.count("hotel agent") == 3  # call, retry, answer
    hotel_calls = [e for e in view["events"] if e["step"] == "hotel" and e["action"] == "tool_call"]
    assert [e["outcome"] for e in hotel_calls] == ["error", "ok"]
    assert "FULL" in hotel_calls[0]["detail"]
    assert not [e for e in view["events"] if e["action"] in ("tool_undo", "compensate")]


@pytest.mark.parametrize("router", ["deterministic", "llm"])
def test_insufficient_funds_undoes_every_call_newest_first_across_agents(
    router: str, checkpointer_url: str, server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    view, before, after, _ = run_trip(tmp_path, checkpointer_url, server, BOB, router)

    assert view["status"] == "rolled_back"
    assert "INSUFFICIENT_FUNDS" in view["reason"]
    assert view["compensated"] == ["billing", "hotel", "flight"]
    sid = view["saga_id"]
    # The charge that failed is cleaned up by its key first, then the hotel's booking, then
    # the flight's: exact reverse chronological order of the calls that were made.
    made = [*forward_keys(view), f"{sid}:billing:call-1"]
    assert made == [f"{sid}:flight:call-1", f"{sid}:hotel:call-2", f"{sid}:billing:call-1"]
    assert undo_keys(view) == list(reversed(made))
    undo_times = [e["ts"] for e in view["events"] if e["action"] == "tool_undo"]
    assert undo_times == sorted(undo_times)
    # The failed hotel call (FULL) took no effect and is not undone.
    assert f"{sid}:hotel:call-1" not in undo_keys(view)
    assert after == before
    assert {c["status"] for calls in view["tools"].values() for c in calls} <= {"undone", "failed"}


def test_a_late_booking_that_lands_after_its_undo_is_refused(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    view, before, _, stores = run_trip(
        tmp_path, f"sqlite:///{tmp_path / 's.sqlite'}", server, BOB, "deterministic"
    )
    assert view["status"] == "rolled_back"
    key = view["tools"]["flight"][0]["key"]
    book_flight = next(t for t in flight_tools(stores.airline) if t.name == "book_flight")

    # A slow partner: the same call, under the same key, arrives after the rollback.
    with calling_with_key(key), pytest.raises(CompensatedKeyError, match="already cancelled"):
        book_flight.invoke({"flight": FLIGHT, "traveller": "bob"})
    assert holdings(stores, "bob") == before
