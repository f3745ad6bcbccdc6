"""A saga of another definition, whose steps are tool-calling agents (the travel swarm over the
real ChatOpenAI client and the scripted server): the console shows it, its tool calls and their
marks on the timeline, and offers no action (the sagagraph command cannot build its steps)."""

from __future__ import annotations

from pathlib import Path

from sagagraph import run_saga
from tests.console.conftest import console
from tests.support.console_sagas import Stores
from tests.support.openai_server import ScriptedOpenAIServer
from tests.support.swarm_support import SwarmResponder, chat_model, swarm_app


def test_a_tool_calling_saga_shows_its_calls_and_offers_no_action(tmp_path: Path) -> None:
    from examples.travel_swarm.partners import FLIGHT

    stores = Stores(
        db=f"sqlite:///{tmp_path / 's.sqlite'}",
        bus=f"sqlite:///{tmp_path / 'e.sqlite'}",
        outputs=tmp_path,
    )
    with (
        ScriptedOpenAIServer(SwarmResponder()) as server,
        swarm_app(tmp_path / "partners", stores.db, chat_model(server)) as (app, _),
    ):
        trip = {"traveller": "ada", "flight": FLIGHT, "nights": 3}
        view = run_saga(app, trip, saga_id="trip-1")
    assert view["status"] == "completed", view["reason"]
    page = console(stores).get("/sagas/trip-1").text
    assert '<table class="tools">' in page
    assert "<td>hotel</td><td>reserve_room</td><td><code>trip-1:hotel:call-1</code></td>" in page
    assert "<td>failed</td>" in page and "<td>forward</td>" in page
    assert page.count('data-action="tool_call"') == 4
    assert 'class="action"' not in page  # another definition's saga: its own app acts on it
