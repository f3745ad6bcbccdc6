"""Actions from the console: each drives the engine and is recorded with who and why."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from sagagraph.console.actions import (
    ACTIONS,
    Action,
    ActionRequest,
    allowed_actions,
    register_action,
)
from sagagraph.console.source import SagaSource
from tests.console.conftest import console, post, view
from tests.support.console_sagas import Stores, make_orphan, make_sagas
from tests.support.services import saga_database


def test_retry_finishes_the_rollback_and_records_who_and_why(acted_on: Stores) -> None:
    client = console(acted_on)
    reply = post(client, "stuck", "retry", who="ana", why="store is back, ticket 7")
    assert reply.status_code == 303, reply.text
    assert reply.headers["location"] == "/sagas/stuck?done=retry"
    after = view(acted_on, "stuck")
    assert after["status"] == "rolled_back"
    assert after["compensated"] == ["summarizer", "reviewer", "validator"]
    resolves = [e for e in after["events"] if e["action"] == "resolve"]
    assert [e["detail"] for e in resolves] == [
        "operator: retry: store is back, ticket 7 (by ana, console)"
    ]
    page = client.get("/sagas/stuck?done=retry").text
    assert "Retry the compensation: done" in page and 'id="saga-status">rolled_back<' in page
    assert not (acted_on.outputs / "stuck").exists() or not any(
        (acted_on.outputs / "stuck").iterdir()
    )


def test_skip_ends_resolved_by_operator_with_the_note(acted_on: Stores) -> None:
    reply = post(console(acted_on), "stuck2", "skip", who="bo", why="review kept for audit")
    assert reply.status_code == 303, reply.text
    after = view(acted_on, "stuck2")
    assert after["status"] == "resolved_by_operator"
    assert [s["note"] for s in after["skipped"]] == ["review kept for audit (by bo, console)"]


def test_rollback_of_an_orphan_compensates_it_and_records_the_reason(acted_on: Stores) -> None:
    reply = post(console(acted_on), "orphan", "rollback", who="cy", why="paper withdrawn")
    assert reply.status_code == 303, reply.text
    after = view(acted_on, "orphan")
    assert after["status"] == "rolled_back"
    assert after["compensated"][-1] == "validator"
    details = [e["detail"] for e in after["events"]]
    assert "rollback: paper withdrawn (by cy, console)" in details
    assert after["reason"] == "rollback: paper withdrawn (by cy, console)"


def test_an_action_needs_who_and_why_and_leaves_the_saga_alone_without(acted_on: Stores) -> None:
    reply = post(console(acted_on), "stuck", "retry", who="ana", why="  ")
    assert reply.status_code == 409
    assert "why: required" in reply.text
    assert view(acted_on, "stuck")["status"] == "compensation_failed"


def test_an_action_the_saga_does_not_allow_is_refused(acted_on: Stores) -> None:
    client = console(acted_on)
    for saga_id, action in (("done", "retry"), ("stuck", "rollback"), ("stuck", "nope")):
        reply = post(client, saga_id, action, who="ana", why="try")
        assert reply.status_code == 409, (saga_id, action)
        assert "not allowed for this saga now" in reply.text
    assert view(acted_on, "done")["status"] == "completed"
    assert view(acted_on, "stuck")["status"] == "compensation_failed"


def test_the_table_takes_a_new_action_in_one_call() -> None:
    def nothing(request: ActionRequest) -> Mapping[str, Any]:
        return request.view

    extra = Action(
        "note-only",
        "Note",
        "does nothing",
        lambda view, _: view.get("status") == "completed",
        nothing,
    )
    try:
        register_action(extra)
        assert extra in allowed_actions({"status": "completed"})
        assert extra not in allowed_actions({"status": "running"})
    finally:
        ACTIONS.pop("note-only")


@pytest.mark.postgres
def test_the_console_lists_and_resolves_sagas_on_postgresql(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGAGRAPH_LLM", "offline")
    with saga_database("postgres", tmp_path) as url:
        stores = make_sagas(tmp_path, db=url)
        make_orphan(stores)
        client = console(stores)
        assert re.findall(r'<tr data-saga="([^"]+)">', client.get("/queue").text) == [
            "orphan",
            "stuck",
        ]
        assert post(client, "stuck", "retry", who="ana", why="pg is fine").status_code == 303
        assert post(client, "orphan", "rollback", who="ana", why="stop it").status_code == 303
        assert (view(stores, "stuck")["status"], view(stores, "orphan")["status"]) == (
            "rolled_back",
            "rolled_back",
        )
        assert "<tbody" in client.get("/queue").text
        assert re.findall(r'<tr data-saga="([^"]+)">', client.get("/queue").text) == []


def test_the_note_names_the_client_address_when_it_is_not_this_machine() -> None:
    source = SagaSource.from_urls("memory://")
    view = {"saga_id": "s"}
    assert ActionRequest(source, view, "ana", "why", "127.0.0.1").note == "why (by ana, console)"
    assert ActionRequest(source, view, "ana", "why", None).note == "why (by ana, console)"
    assert (
        ActionRequest(source, view, "ana", "why", "10.1.2.3").note
        == "why (by ana, console, from 10.1.2.3)"
    )
