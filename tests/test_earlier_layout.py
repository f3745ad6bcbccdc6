"""Sagas stored by an earlier sagagraph (one channel a field) are listed, shown and resumed.

The earlier layout is written the way that version wrote it: the saga graph built on
``SagaState`` itself (one channel a field) with its nodes' updates passed as they are, through
the real SQLite and PostgreSQL savers. Then a graph of today, on the same database, takes over.
LangGraph drops the values of channels a graph lacks: without the savers' upgrade
(``checkpoints.earlier_layout``) the resumed saga would lose its results and audit trail.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph._internal._constants import NULL_TASK_ID

from sagagraph import (
    SagaState,
    aresume_saga,
    asaga_status,
    build_saga_graph,
    latest_checkpoints,
    list_sagas,
    open_async_checkpointer,
    resume_saga,
    run_saga,
    saga_config,
    saga_status,
)
from sagagraph.graph import builder, dual_node
from sagagraph.saga.view import DEAD_LETTER, WORKER_STEP, make_event
from sagagraph.state_layout import RECORD
from tests.toy_saga import Crash, Journal, Plan, SimulatedCrash, saga_app, toy_saga


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal.sqlite")


@contextmanager
def earlier_layout(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Saga graphs built and run inside store one channel a field, as before the record."""
    with monkeypatch.context() as patch:
        patch.setattr(builder, "SagaChannels", SagaState)
        patch.setattr(dual_node, "channel_update", lambda update: update)
        yield


def langgraph_saver(saver: Any) -> Any:
    """The LangGraph saver class sagagraph's saver extends (it reads as LangGraph stores)."""
    return next(c for c in type(saver).__mro__ if c.__module__.startswith(LANGGRAPH_SAVERS))


LANGGRAPH_SAVERS = ("langgraph.checkpoint.sqlite", "langgraph.checkpoint.postgres")


def stored_values(app: Any, saga_id: str) -> dict[str, Any]:
    """The latest checkpoint's channel values as stored, read by LangGraph's own saver."""
    saver = app.checkpointer
    saved = langgraph_saver(saver).get_tuple(saver, saga_config(saga_id))
    assert saved is not None
    return dict(saved.checkpoint["channel_values"])


def test_a_saga_stopped_mid_way_resumes_with_its_results(
    journal: Journal, durable_checkpointer_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = durable_checkpointer_url
    with earlier_layout(monkeypatch):
        plan = Plan(crash=Crash("s2", "execute", "before"))
        with saga_app(toy_saga(3, journal, plan), url) as old:
            with pytest.raises(SimulatedCrash):
                run_saga(old, {}, saga_id="old-forward")
            stored = stored_values(old, "old-forward")
    assert RECORD not in stored and "events" in stored and "results" in stored

    with saga_app(toy_saga(3, journal), url) as app:
        before = saga_status(app, "old-forward")
        assert before["status"] == "running"
        assert before["completed"] == ["s1"]
        assert [e["step"] for e in before["events"]] == ["s1"]
        listed = {s["saga_id"]: s for s in list_sagas(app)}
        assert listed["old-forward"]["status"] == "running"
        history = list(app.get_state_history(saga_config("old-forward")))
        assert all(RECORD in snap.values for snap in history if snap.values.get("saga_id"))

        view = resume_saga(app, "old-forward")

    assert view["status"] == "completed"
    assert view["completed"] == ["s1", "s2", "s3"]
    assert view["results"]["s2"]["seen"] == ["s1"], "s2 saw s1's result from the old checkpoint"
    assert view["saga"] == "toy" and view["router"] == "deterministic"
    assert journal.calls("old-forward") == ["s1", "s2", "s2", "s3"]
    assert journal.effects("old-forward") == {f"s{i}": ("done", 1, 0) for i in (1, 2, 3)}
    assert [e["step"] for e in view["events"] if e["outcome"] == "ok"] == ["s1", "s2", "s3"]


def test_a_saga_stopped_mid_rollback_finishes_it(
    journal: Journal, durable_checkpointer_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = durable_checkpointer_url
    with earlier_layout(monkeypatch):
        plan = Plan(crash=Crash("s2", "compensate", "after"))
        with saga_app(toy_saga(3, journal, plan), url) as old:
            with pytest.raises(SimulatedCrash):
                run_saga(old, {"fail": "s3"}, saga_id="old-back")
            stored = stored_values(old, "old-back")
    assert stored["status"] == "compensating" and stored["failure"]["step"] == "s3"

    with saga_app(toy_saga(3, journal), url) as app:
        before = saga_status(app, "old-back")
        assert before["status"] == "compensating"
        assert before["failure"]["step"] == "s3"
        assert before["reason"] is not None and "s3" in before["reason"]
        view = resume_saga(app, "old-back")

    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["s3", "s2", "s1"]
    assert view["failure"]["step"] == "s3"
    assert journal.effects("old-back") == {
        "s1": ("undone", 1, 1),
        "s2": ("undone", 1, 1),
        "s3": ("undone", 0, 0),
    }


def test_a_finished_saga_and_a_pending_write_read_as_before(
    journal: Journal, durable_checkpointer_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finished saga's view and listing are unchanged; a dead letter recorded the earlier
    way (a null task write on ``events``) shows in the view of today."""
    url = durable_checkpointer_url
    with earlier_layout(monkeypatch):
        plan = Plan(crash=Crash("s1", "execute", "before"))
        with saga_app(toy_saga(2, journal, plan), url) as old:
            with pytest.raises(SimulatedCrash):
                run_saga(old, {}, saga_id="old-dead")
            done = run_saga(old, {}, saga_id="old-done")
            saver = old.checkpointer
            saved = langgraph_saver(saver).get_tuple(saver, saga_config("old-dead"))
            dead = make_event(WORKER_STEP, "escalate", DEAD_LETTER, detail="dead-lettered")
            saver.put_writes(saved.config, [("events", [dead])], NULL_TASK_ID)

    with saga_app(toy_saga(2, journal), url) as app:
        assert saga_status(app, "old-done") == done
        summaries = {s.saga_id: s for s in latest_checkpoints(app.checkpointer)}
        assert summaries["old-done"].summary["status"] == "completed"
        view = saga_status(app, "old-dead")
        assert view["dead_letter"] is not None
        assert view["dead_letter"]["detail"] == "dead-lettered"
        resumed = resume_saga(app, "old-dead")
    assert resumed["status"] == "completed"
    assert [e["outcome"] for e in resumed["events"]][:1] == [DEAD_LETTER]


def test_the_async_savers_read_the_earlier_layout_too(
    journal: Journal, durable_checkpointer_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The group-commit savers (SQLite, PostgreSQL) upgrade what they read, as the sync ones."""
    url = durable_checkpointer_url
    with earlier_layout(monkeypatch):
        plan = Plan(crash=Crash("s2", "execute", "before"))
        with saga_app(toy_saga(3, journal, plan), url) as old, pytest.raises(SimulatedCrash):
            run_saga(old, {}, saga_id="old-async")

    async def take_over() -> tuple[dict[str, Any], list[Any], dict[str, Any]]:
        async with open_async_checkpointer(url) as checkpointer:
            app = build_saga_graph(toy_saga(3, journal)).compile(checkpointer=checkpointer)
            before = await asaga_status(app, "old-async")
            history = [s async for s in app.aget_state_history(saga_config("old-async"))]
            return before, history, await aresume_saga(app, "old-async")

    before, history, view = asyncio.run(take_over())
    assert before["completed"] == ["s1"]
    assert all(RECORD in snap.values for snap in history if snap.values.get("saga_id"))
    assert view["status"] == "completed"
    assert view["results"]["s2"]["seen"] == ["s1"]
    assert journal.effects("old-async") == {f"s{i}": ("done", 1, 0) for i in (1, 2, 3)}
