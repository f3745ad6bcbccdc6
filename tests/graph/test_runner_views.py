"""The view a run returns is the view ``saga_status`` reads back, to the letter.

``run_saga``, ``resume_saga``, ``resolve_saga`` and their async twins build the view of a
saga that ended from the values the run streamed, without reading a snapshot; one that
paused (an escalation) or stopped unfinished is read back. These tests compare both ways for
every ending: success, failure with compensation, halt, escalation and its resolution, and
check that a run which ended read no snapshot at all.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from sagagraph import (
    InputError,
    SagaDefinition,
    build_saga_graph,
    resolve_saga,
    resume_saga,
    run_saga,
    saga_status,
)
from sagagraph.checkpoints.async_factory import open_async_checkpointer
from sagagraph.graph.async_runner import aresume_saga, arun_saga, asaga_status
from sagagraph.graph.runner import RunOutput
from tests.support.toy_saga import (
    FAST_RETRY,
    Crash,
    Journal,
    Plan,
    SimulatedCrash,
    saga_app,
    toy_saga,
)

ENDINGS = {
    "success": ({}, "completed"),
    "failure": ({"fail": "s3"}, "rolled_back"),
    "halt": ({}, "rolled_back"),
    "escalated": ({"fail": "s3", "broken_undo": ["s1"]}, "compensation_failed"),
}


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal.sqlite")


def definition(journal: Journal, ending: str) -> SagaDefinition:
    plan = Plan(halt_at="s2" if ending == "halt" else None)
    return toy_saga(3, journal, plan, compensation_retry=FAST_RETRY)


class CountingSnapshots:
    """Counts the snapshots read through an app (``get_state`` / ``aget_state``)."""

    def __init__(self, app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reads = 0
        for name in ("get_state", "aget_state"):
            original = getattr(app, name)
            monkeypatch.setattr(app, name, self._counting(original))

    def _counting(self, original: Any) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.reads += 1
            return original(*args, **kwargs)

        return counted


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_the_view_run_saga_returns_is_the_view_saga_status_reads(
    journal: Journal, tmp_path: Path, ending: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    saga_input, status = ENDINGS[ending]
    with saga_app(definition(journal, ending), f"sqlite:///{tmp_path / 'cp.sqlite'}") as app:
        snapshots = CountingSnapshots(app, monkeypatch)
        returned = run_saga(app, saga_input, saga_id=f"v-{ending}")
        reads = snapshots.reads
        assert returned == saga_status(app, f"v-{ending}")
    assert returned["status"] == status
    # An ended saga's view comes from the run itself; a paused one is read back once.
    assert reads == (1 if ending == "escalated" else 0)
    assert returned["waiting_for_operator"] is (ending == "escalated")


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_the_view_arun_saga_returns_is_the_view_asaga_status_reads(
    journal: Journal, tmp_path: Path, ending: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    saga_input, status = ENDINGS[ending]

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], int]:
        async with open_async_checkpointer(f"sqlite:///{tmp_path / 'cp.sqlite'}") as saver:
            graph = build_saga_graph(definition(journal, ending))
            app = graph.compile(checkpointer=saver)
            snapshots = CountingSnapshots(app, monkeypatch)
            returned = await arun_saga(app, saga_input, saga_id=f"a-{ending}")
            reads = snapshots.reads
            return returned, await asaga_status(app, f"a-{ending}"), reads

    returned, read_back, reads = asyncio.run(scenario())
    assert returned == read_back
    assert returned["status"] == status
    assert reads == (1 if ending == "escalated" else 0)


def test_resolving_and_resuming_return_the_view_saga_status_reads(
    journal: Journal, tmp_path: Path
) -> None:
    saga_input, _ = ENDINGS["escalated"]
    with saga_app(definition(journal, "escalated"), f"sqlite:///{tmp_path / 'cp.sqlite'}") as app:
        run_saga(app, saga_input, saga_id="r-1")
        resolved = resolve_saga(app, "r-1", "skip", note="ops: undone by hand")
        assert resolved["status"] == "resolved_by_operator"
        assert resolved == saga_status(app, "r-1")
        assert resume_saga(app, "r-1") == resolved  # nothing left: the view as it is


def test_a_resumed_saga_returns_the_view_saga_status_reads(
    journal: Journal, tmp_path: Path
) -> None:
    plan = Plan(crash=Crash("s2", "execute", "after"))
    definition = toy_saga(3, journal, plan)
    url = f"sqlite:///{tmp_path / 'cp.sqlite'}"
    with saga_app(definition, url) as app:
        with pytest.raises(SimulatedCrash):
            run_saga(app, {}, saga_id="c-1")
        resumed = resume_saga(app, "c-1")
        assert resumed["status"] == "completed"
        assert resumed == saga_status(app, "c-1")

    async def aresumed() -> tuple[dict[str, Any], dict[str, Any]]:
        plan.crash = Crash("s3", "execute", "before")
        async with open_async_checkpointer(url) as saver:
            app = build_saga_graph(definition).compile(checkpointer=saver)
            with pytest.raises(SimulatedCrash):
                await arun_saga(app, {}, saga_id="c-2")
            return await aresume_saga(app, "c-2"), await asaga_status(app, "c-2")

    view, read_back = asyncio.run(aresumed())
    assert view["status"] == "completed"
    assert view == read_back


def test_a_saga_killed_in_its_first_step_is_refused_as_existing(
    journal: Journal, tmp_path: Path
) -> None:
    """The existence check reads only the last checkpoint (no snapshot), and that is enough."""
    plan = Plan(crash=Crash("s1", "execute", "before"))
    with saga_app(toy_saga(2, journal, plan), f"sqlite:///{tmp_path / 'cp.sqlite'}") as app:
        with pytest.raises(SimulatedCrash):
            run_saga(app, {}, saga_id="x-1")
        with pytest.raises(InputError, match="already exists"):
            run_saga(app, {}, saga_id="x-1")
        assert journal.calls("x-1") == ["s1"]


def test_run_output_hands_events_on_and_keeps_only_a_finished_state() -> None:
    seen: list[Any] = []
    output = RunOutput()
    event = {"step": "s1", "action": "execute", "outcome": "ok"}
    earlier = {"step": "s0", "action": "execute", "outcome": "ok"}
    # The first state is what was recorded before the run: its events are not new.
    seen += output.take(("values", {"saga_id": "o-1", "status": "running", "events": [earlier]}))
    seen += output.take(("updates", {"s1": {"events": [event]}}))
    assert seen == []  # an update is not recorded yet
    state = {"saga_id": "o-1", "status": "running", "events": [earlier, event]}
    seen += output.take(("values", state))
    assert seen == [event]
    assert output.finished() is None  # still running: the caller reads a snapshot
    done = {"saga_id": "o-1", "status": "completed", "events": [earlier, event]}
    seen += output.take(("values", done))
    assert seen == [event]  # told once
    assert output.finished() == done
    output.take(("updates", {"__interrupt__": ()}))
    assert output.finished() is None  # paused: the snapshot says for what
