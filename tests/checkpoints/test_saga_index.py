"""The saga index: each checkpoint's metadata summary, listed with one query per page.

``list`` and ``recover`` read finished sagas from it without deserializing any checkpoint
blob; unfinished sagas, and sagas stored before the summary existed, are read in full.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from sagagraph import (
    SagaDefinition,
    Step,
    StepContext,
    StepResult,
    build_saga_graph,
    open_checkpointer,
    run_saga,
    saga_status,
    unfinished_sagas,
)
from sagagraph.checkpoints import saga_index
from sagagraph.checkpoints.saga_index import latest_checkpoints
from sagagraph.graph.recover import open_sagas
from sagagraph.graph.runner import initial_state, saga_config
from sagagraph.graph.stored import orchestrated_rows, read_view, row_of_summary, row_of_view

STEPS = ("first", "second", "third")


class Agent:
    def __init__(self, name: str) -> None:
        self.name = name

    def execute(self, ctx: StepContext) -> StepResult:
        if ctx.input.get("halt") == self.name:
            return StepResult(halt=True, reason=f"{self.name} says no")
        return StepResult(data={"step": self.name})

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        pass


def compiled(checkpointer: Any) -> Any:
    definition = SagaDefinition("index_saga", tuple(Step(Agent(n)) for n in STEPS))
    return build_saga_graph(definition).compile(checkpointer=checkpointer)


def fill(app: Any, prefix: str) -> dict[str, str]:
    """One saga of each kind; saga id -> the status ``status`` gives it."""
    run_saga(app, {"paper": "a.pdf"}, saga_id=f"{prefix}-ok")
    run_saga(app, {"paper": "b.pdf"}, saga_id=f"{prefix}-failed", fail_at="third")
    run_saga(app, {"paper": "c.pdf", "halt": "second"}, saga_id=f"{prefix}-halted")
    # Stopped before its second step, as a killed process leaves it.
    stopped = f"{prefix}-stopped"
    config = saga_config(stopped)
    app.invoke(initial_state(stopped, {"paper": "d.pdf"}), config, interrupt_before=["second"])
    return {
        f"{prefix}-ok": "completed",
        f"{prefix}-failed": "rolled_back",
        f"{prefix}-halted": "rolled_back",
        stopped: "running",
    }


def ours(prefix: str, checkpointer: Any, **kw: Any) -> list[Any]:
    return [s for s in latest_checkpoints(checkpointer, **kw) if s.saga_id.startswith(prefix)]


@pytest.mark.parametrize("page_size", [1, 2, 1000])
def test_the_index_gives_each_saga_its_latest_status_on_every_backend(
    checkpointer_url: str, page_size: int
) -> None:
    prefix = f"ix{uuid.uuid4().hex[:8]}"
    with open_checkpointer(checkpointer_url) as checkpointer:
        app = compiled(checkpointer)
        expected = fill(app, prefix)
        summaries = ours(prefix, checkpointer, page_size=page_size)
        assert [s.saga_id for s in summaries] == sorted(expected)
        assert {s.saga_id: s.status for s in summaries} == expected
        for summary in summaries:
            assert summary.stamped and summary.ts
            latest = checkpointer.get_tuple(saga_config(summary.saga_id))
            assert latest is not None
            assert summary.checkpoint_id == latest.config["configurable"]["checkpoint_id"]
        assert [s for s in unfinished_sagas(app) if s.startswith(prefix)] == [f"{prefix}-stopped"]
        finished = {"completed", "rolled_back"}
        kept = ours(prefix, checkpointer, page_size=page_size, skip=finished)
        assert [(s.saga_id, s.status) for s in kept] == [(f"{prefix}-stopped", "running")]


def test_a_finished_sagas_row_from_its_summary_is_the_row_from_its_state(
    checkpointer_url: str,
) -> None:
    prefix = f"rw{uuid.uuid4().hex[:8]}"
    with open_checkpointer(checkpointer_url) as checkpointer:
        app = compiled(checkpointer)
        expected = fill(app, prefix)
        finished = [s for s in ours(prefix, checkpointer) if expected[s.saga_id] != "running"]
        assert len(finished) == 3
        for summary in finished:
            view = read_view(checkpointer, summary.saga_id)
            assert view is not None
            row = row_of_view(view)
            row["text"] = view["label"] or ""  # a summary keeps the label, not the input
            assert row_of_summary(summary) == row


class Counter:
    def __init__(self) -> None:
        self.loads = 0


@pytest.fixture
def blob_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter]:
    """Counts every checkpoint blob and write the savers deserialize."""
    counter = Counter()
    real = JsonPlusSerializer.loads_typed

    def counting(self: JsonPlusSerializer, data: tuple[str, bytes]) -> Any:
        counter.loads += 1
        return real(self, data)

    monkeypatch.setattr(JsonPlusSerializer, "loads_typed", counting)
    yield counter


def test_list_and_recover_over_finished_sagas_read_no_blob(
    tmp_path: Path, blob_reads: Counter, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'index.sqlite'}"
    with open_checkpointer(url) as checkpointer:
        app = compiled(checkpointer)
        for i in range(20):
            fail_at = "third" if i % 2 else None
            run_saga(app, {"paper": "p.pdf"}, saga_id=f"done-{i}", fail_at=fail_at)
        blob_reads.loads = 0
        assert unfinished_sagas(app) == []
        assert open_sagas(app) == []
        assert blob_reads.loads == 0
        rows = list(orchestrated_rows(checkpointer))
        assert len(rows) == 20 and blob_reads.loads == 0

        fill(app, "mixed")
        blob_reads.loads = 0
        assert unfinished_sagas(app) == ["mixed-stopped"]
        assert blob_reads.loads > 0, "the unfinished saga is read in full"


def test_sagas_stored_before_the_summary_are_still_found(tmp_path: Path) -> None:
    """Checkpoints a plain SqliteSaver wrote (no stamp): each such saga is read in full."""
    path = tmp_path / "legacy.sqlite"
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        app = compiled(SqliteSaver(conn))
        expected = fill(app, "old")
    with open_checkpointer(f"sqlite:///{path}") as checkpointer:
        app = compiled(checkpointer)
        summaries = list(latest_checkpoints(checkpointer))
        assert [s.saga_id for s in summaries] == sorted(expected)
        assert not any(s.stamped for s in summaries) and {s.status for s in summaries} == {None}
        assert unfinished_sagas(app) == ["old-stopped"]
        assert {v["saga_id"] for v in open_sagas(app)} == set(expected)


def test_the_async_saver_stamps_its_checkpoints(tmp_path: Path) -> None:
    import asyncio

    from sagagraph import arun_saga, open_async_checkpointer

    url = f"sqlite:///{tmp_path / 'async.sqlite'}"

    async def runs() -> None:
        async with open_async_checkpointer(url) as checkpointer:
            app = compiled(checkpointer)
            await arun_saga(app, {"paper": "a.pdf"}, saga_id="async-ok")
            await arun_saga(app, {"paper": "b.pdf"}, saga_id="async-failed", fail_at="third")

    asyncio.run(runs())
    with open_checkpointer(url) as checkpointer:
        summaries = {s.saga_id: s for s in latest_checkpoints(checkpointer)}
    assert {k: (s.stamped, s.status) for k, s in summaries.items()} == {
        "async-ok": (True, "completed"),
        "async-failed": (True, "rolled_back"),
    }
    assert summaries["async-failed"].summary[saga_index.COMPENSATED] == list(reversed(STEPS))


def test_another_graphs_threads_in_the_same_checkpointer_are_not_sagas(tmp_path: Path) -> None:
    """A checkpointer shared with another LangGraph graph: its threads are neither listed as
    unfinished sagas nor read as one (recovery and ``list`` went on to crash on them)."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    from sagagraph import SagaNotFoundError

    class Other(TypedDict, total=False):
        results: dict[str, int]
        status: str

    other = StateGraph(Other)
    other.add_node("count", lambda state: {"results": {"n": 1}, "status": "running"})
    other.add_edge(START, "count")
    other.add_edge("count", END)
    with open_checkpointer(f"sqlite:///{tmp_path / 'shared.sqlite'}") as checkpointer:
        foreign = other.compile(checkpointer=checkpointer, interrupt_after=["count"])
        foreign.invoke({"status": "running"}, saga_config("not-a-saga"))
        app = compiled(checkpointer)
        expected = fill(app, "ix")
        assert unfinished_sagas(app) == ["ix-stopped"]
        with pytest.raises(SagaNotFoundError, match="another graph's state"):
            saga_status(app, "not-a-saga")
        assert sorted(expected) == sorted(
            s.saga_id for s in latest_checkpoints(checkpointer) if s.saga_id != "not-a-saga"
        )


class Garbled:
    """A step whose error message holds a NUL and a lone surrogate (a server's bytes)."""

    name = "garbled"

    def execute(self, ctx: StepContext) -> StepResult:
        raise RuntimeError("upstream said \x00\ud800 nonsense, é 🙂")

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        pass


def test_a_reason_no_database_can_store_as_it_is_still_ends_the_saga(
    durable_checkpointer_url: str,
) -> None:
    saga_id = f"gb{uuid.uuid4().hex[:8]}"
    definition = SagaDefinition("garbled_saga", (Step(Agent("first")), Step(Garbled())))
    with open_checkpointer(durable_checkpointer_url) as checkpointer:
        app = build_saga_graph(definition).compile(checkpointer=checkpointer)
        view = run_saga(app, {}, saga_id=saga_id)
        assert view["status"] == "rolled_back"
        [summary] = [s for s in latest_checkpoints(checkpointer) if s.saga_id == saga_id]
        assert summary.status == "rolled_back" and "nonsense" in summary.summary["reason"]
        assert "\ufffd\ufffd nonsense, é 🙂" in summary.summary["reason"]
