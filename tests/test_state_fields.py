"""Unset state fields read as ``None`` and are not stored (``graph.state.Field``): LangGraph's
own ``LastValue`` raises and catches an exception for each unset field at every read, which
was a measurable part of every superstep (issue 18, docs/performance.md)."""

from __future__ import annotations

from pathlib import Path

from langchain_core.runnables import RunnableConfig

from sagagraph import build_saga_graph, open_checkpointer, run_saga
from sagagraph.graph.state import Field, SagaState
from tests.toy_saga import Journal, toy_saga

UNSET_ON_SUCCESS = ("halted", "failure", "compensation_failure", "route", "reason")


def test_unset_fields_read_as_none_and_are_not_checkpointed(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    with open_checkpointer("memory://") as saver:
        app = build_saga_graph(toy_saga(2, journal)).compile(checkpointer=saver)
        view = run_saga(app, {"n": 1}, saga_id="s-fields")
        assert view["status"] == "completed"
        config: RunnableConfig = {"configurable": {"thread_id": "s-fields"}}
        values = app.get_state(config).values
        stored = saver.get_tuple(config)
        assert stored is not None
        channel_values = stored.checkpoint["channel_values"]
    for name in UNSET_ON_SUCCESS:
        assert values[name] is None, name
        assert name not in channel_values, name
    assert channel_values["status"] == "completed"


def test_a_written_none_is_stored_and_a_value_replaces_it() -> None:
    field: Field[str] = Field(str)
    assert field.get() is None and not field.is_available()
    assert field.update([None])  # type: ignore[list-item]
    assert field.is_available() and field.get() is None
    assert field.update(["x"]) and field.get() == "x"
    assert field.from_checkpoint(field.checkpoint()).get() == "x"


def test_every_last_value_field_of_the_state_reads_none_when_unset() -> None:
    from langgraph.graph import StateGraph

    channels = StateGraph(SagaState).channels
    last_value = [n for n, c in channels.items() if type(c).__name__ in ("LastValue", "Field")]
    assert last_value and all(isinstance(channels[n], Field) for n in last_value), last_value
