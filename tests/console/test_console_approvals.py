"""Tool calls waiting for approval, answered from the console.

The saga is :mod:`tests.support.gated_saga` (its agent's model: the real ``ChatOpenAI`` client
against the scripted server); the console reaches its graph through ``$SAGAGRAPH_APP``, as
``sagagraph approve --app`` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sagagraph import build_saga_graph, new_saga_id, open_checkpointer, run_saga
from tests.console.conftest import console, post, view
from tests.support.console_sagas import Stores
from tests.support.gated_saga import Partner, definition, responder
from tests.support.openai_server import ScriptedOpenAIServer


@pytest.fixture
def gated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Stores, str]]:
    """A gated saga waiting for approval, and the console's stores over it."""
    with ScriptedOpenAIServer(responder) as server:
        monkeypatch.setenv("SAGAGRAPH_APP", "tests.support.gated_saga:graph")
        monkeypatch.setenv("GATE_DATA", str(tmp_path))
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        stores = Stores(
            f"sqlite:///{tmp_path / 'sagas.sqlite'}",
            f"sqlite:///{tmp_path / 'events.sqlite'}",
            tmp_path / "outputs",
        )
        saga_id = new_saga_id("pay")
        with open_checkpointer(stores.db) as saver:
            app = build_saga_graph(definition(tmp_path, server.base_url)).compile(
                checkpointer=saver
            )
            assert run_saga(app, {"traveller": "ada"}, saga_id=saga_id)["approvals"]
        yield stores, saga_id


def actions_of(page: str) -> list[str]:
    return [name for name in ("approve", "reject", "retry", "skip", "rollback") if
            f'id="action-{name}"' in page]  # fmt: skip


def test_the_page_offers_approve_and_reject_and_approve_carries_the_saga_on(
    gated: tuple[Stores, str], tmp_path: Path
) -> None:
    stores, saga_id = gated
    client = console(stores)
    page = client.get(f"/sagas/{saga_id}").text
    assert actions_of(page) == ["approve", "reject"]
    assert page.count("Waiting for approval:") == 2
    assert f"(call {saga_id}:pay:call-3)" in page
    reply = post(client, saga_id, "approve", who="ana", why="budget ok")
    assert reply.status_code == 303, reply.text
    after: dict[str, Any] = view(stores, saga_id)
    assert after["status"] == "completed"
    assert {e["state"] for e in Partner(tmp_path).effects().values()} == {"done"}


def test_reject_from_the_console_records_who_and_why_and_compensates(
    gated: tuple[Stores, str], tmp_path: Path
) -> None:
    stores, saga_id = gated
    reply = post(console(stores), saga_id, "reject", who="bo", why="over budget")
    assert reply.status_code == 303, reply.text
    after = view(stores, saga_id)
    assert after["status"] == "rolled_back"
    assert "over budget (by bo, console)" in after["failure"]["error"]
    assert {e["state"] for e in Partner(tmp_path).effects().values()} == {"undone"}
