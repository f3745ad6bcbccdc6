"""Reading a saga from its latest checkpoint alone, without its graph: every field the
graph's own reading shows, LangGraph's private channel names included (``__start__``,
``branch:to:NODE``): when LangGraph moves one, these fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.constants import START
from langgraph.types import Command

from sagagraph import SagaDefinition, build_saga_graph, run_saga, saga_status
from sagagraph.graph.runner import initial_state, saga_config
from sagagraph.graph.stored import read_view
from tests.support.toy_saga import Journal, saga_app, toy_saga


def comparable(view: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in view.items() if k not in ("input", "label")}


def test_a_finished_or_rolled_back_saga_reads_as_its_graph_reads_it(tmp_path: Path) -> None:
    definition = toy_saga(3, Journal(tmp_path / "j.sqlite"))
    with saga_app(definition) as app:
        run_saga(app, {"k": 1}, saga_id="done")
        run_saga(app, {"k": 2}, saga_id="back", fail_at="s3")
        for saga_id in ("done", "back"):
            stored = read_view(app.checkpointer, saga_id)
            assert stored is not None
            assert comparable(stored) == comparable(saga_status(app, saga_id))
        back = read_view(app.checkpointer, "back")
        assert back is not None and back["input"] == {"k": 2}
        assert read_view(app.checkpointer, "nobody") is None


def test_the_next_step_is_read_from_the_branch_channel(tmp_path: Path) -> None:
    definition = toy_saga(3, Journal(tmp_path / "j.sqlite"))
    with saga_app(definition) as app:
        stopped = build_stopped(definition, app)
        run_saga(stopped, {"k": 1}, saga_id="mid")
        stored = read_view(app.checkpointer, "mid")
        assert stored is not None
        assert stored["next"] == list(app.get_state(saga_config("mid")).next) == ["s2"]
        assert stored["status"] == "running" and stored["completed"] == ["s1"]


def build_stopped(definition: SagaDefinition, app: Any) -> Any:
    """The saga's graph on the same checkpointer, stopping after its first step."""
    return build_saga_graph(definition).compile(
        checkpointer=app.checkpointer, interrupt_after=["s1"]
    )


def test_a_saga_killed_before_its_first_step_shows_its_input_from_start(tmp_path: Path) -> None:
    definition = toy_saga(2, Journal(tmp_path / "j.sqlite"))
    with saga_app(definition) as app:
        values = initial_state("early", {"k": 7})
        app.update_state(saga_config("early"), values, as_node=START)
        stored = read_view(app.checkpointer, "early")
        assert stored is not None and stored["saga_id"] == "early"
        assert stored["status"] == "running"
        assert stored["next"], "something is due: the saga is not finished"


def test_an_operator_wait_is_read_from_the_pending_interrupt(tmp_path: Path) -> None:
    definition = toy_saga(3, Journal(tmp_path / "j.sqlite"))
    with saga_app(definition) as app:
        view = run_saga(app, {"broken_undo": ["s1"]}, saga_id="parked", fail_at="s2")
        assert view["waiting_for_operator"]
        stored = read_view(app.checkpointer, "parked")
        assert stored is not None and stored["waiting_for_operator"]
        assert stored["status"] == view["status"]
        app.invoke(Command(resume={"action": "skip", "note": "ok"}), saga_config("parked"))
        after = read_view(app.checkpointer, "parked")
        assert after is not None and not after["waiting_for_operator"]
