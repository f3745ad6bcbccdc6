"""The saga's fields in LangGraph's channels: five channels, each field by its rule.

``sagagraph.state_layout`` gathers every field but the inputs and the status into one
``record`` channel (LangGraph's cost per superstep grows with the number of channels); the
nodes, the views and the checkpoint metadata read and write the same fields as before.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from sagagraph import (
    SagaChannels,
    SagaDefinition,
    Step,
    StepContext,
    StepResult,
    build_saga_graph,
    run_saga,
    saga_config,
    saga_fields,
    saga_view,
)
from sagagraph.graph.state import RecordChannel, merge_record
from sagagraph.state_layout import (
    RECORD,
    RECORD_FIELDS,
    channel_update,
    channel_writes,
    earlier_saga,
    needs_upgrade,
    upgraded_values,
    upgraded_writes,
)
from tests.toy_saga import Journal, toy_saga

# --- converting between the fields and the channels ---------------------------------------------


def test_fields_and_channels_convert_both_ways() -> None:
    update = {"status": "compensating", "failure": {"step": "s2"}, "reason": "r", "events": []}
    channels = channel_update(update)
    assert channels == {
        "status": "compensating",
        RECORD: {"failure": {"step": "s2"}, "reason": "r", "events": []},
    }
    fields = saga_fields(channels)
    assert {k: fields[k] for k in update} == update
    # What no update wrote yet reads empty, as a field of its own channel did.
    assert fields["results"] == {} and fields["compensated"] == [] and fields["usage"] == {}
    assert channel_writes({"events": [1]}) == [(RECORD, {"events": [1]})]


def test_an_update_without_record_fields_is_passed_as_it_is() -> None:
    update = {"status": "running", "saga_id": "x"}
    assert channel_update(update) is update
    assert channel_update({}) == {}


def test_flat_values_read_as_they_are() -> None:
    flat = {"saga_id": "x", "status": "completed", "events": [], "reason": None}
    assert saga_fields(flat) == flat
    assert saga_fields(flat) is not flat


def test_every_saga_field_but_the_inputs_and_the_status_is_in_the_record() -> None:
    channels = set(SagaChannels.__annotations__)
    assert channels == {"saga_id", "input", "fail_at", "status", RECORD}
    from sagagraph import SagaState

    assert set(SagaState.__annotations__) == (channels - {RECORD}) | RECORD_FIELDS


# --- the record channel's rules ------------------------------------------------------------------


def test_the_record_merges_each_field_by_its_rule() -> None:
    record: Any = {}
    record = merge_record(
        record,
        {
            "events": [{"n": 1}],
            "results": {"a": {"data": {}, "output": None}},
            "usage": {"a": {"input_tokens": 3, "output_tokens": 4}},
            "compensated": [],
            "reason": "first",
        },
    )
    record = merge_record(
        record,
        {
            "events": [{"n": 2}],
            "results": {"a": None, "b": {"data": {}, "output": "b.txt"}},
            "usage": {"a": {"input_tokens": 1, "output_tokens": 1}},
            "compensated": ["a"],
            "reason": "second",
            "failure": None,
        },
    )
    assert record["events"] == [{"n": 1}, {"n": 2}]
    assert record["results"] == {"b": {"data": {}, "output": "b.txt"}}
    assert record["usage"] == {"a": {"input_tokens": 4, "output_tokens": 5}}
    assert record["compensated"] == ["a"]
    assert record["reason"] == "second"
    assert record["failure"] is None


def test_sibling_writes_keep_the_first_failure_and_append_the_rest() -> None:
    channel = RecordChannel()
    channel.update([{"events": [{"n": 0}], "results": {"a": {"data": {}, "output": None}}}])
    changed = channel.update(
        [
            {"events": [{"n": 1}], "failure": {"step": "b"}, "reason": "b failed"},
            {"events": [{"n": 2}], "failure": {"step": "c"}, "reason": "c failed"},
            {"results": {"d": {"data": {}, "output": None}}, "halted": {"step": "d"}},
        ]
    )
    assert changed
    value = channel.get()
    assert [e["n"] for e in value["events"]] == [0, 1, 2]
    assert value["failure"] == {"step": "b"} and value["reason"] == "b failed"
    assert value["halted"] == {"step": "d"}
    assert set(value["results"]) == {"a", "d"}
    # A later superstep replaces as usual.
    channel.update([{"failure": {"step": "c"}, "reason": "c failed"}])
    assert channel.get()["failure"] == {"step": "c"}


def test_the_record_channel_survives_a_checkpoint() -> None:
    channel = RecordChannel()
    channel.update([{"events": [{"n": 1}]}])
    restored = RecordChannel().from_checkpoint(channel.checkpoint())
    restored.update([{"events": [{"n": 2}]}])
    assert restored.get()["events"] == [{"n": 1}, {"n": 2}]
    assert channel.get()["events"] == [{"n": 1}], "the copy is not shared"


# --- a graph stores five channels -----------------------------------------------------------------


def test_a_saga_graph_has_five_state_channels_and_its_nodes_see_fields() -> None:
    seen: list[dict[str, Any]] = []

    class Peek:
        name = "peek"

        def execute(self, ctx: StepContext) -> StepResult:
            seen.append(dict(ctx.results))
            return StepResult(data={"n": len(seen)}, output="out")

        def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
            pass

    class Second(Peek):
        name = "second"

    definition = SagaDefinition("peek", (Step(Peek()), Step(Second())))
    app = build_saga_graph(definition).compile(checkpointer=InMemorySaver())
    state_channels = {c for c in app.channels if not c.startswith(("__", "branch:"))}
    assert state_channels == {"saga_id", "input", "fail_at", "status", RECORD}

    view = run_saga(app, {"x": 1}, saga_id="five")
    assert view["completed"] == ["peek", "second"]
    assert list(seen[1]) == ["peek"], "the second step saw the first one's result"
    values = app.get_state(saga_config("five")).values
    # fail_at is written only when a failure is injected.
    assert set(values) == {"saga_id", "input", "status", RECORD}
    fields = saga_fields(values)
    assert fields["saga"] == "peek" and fields["router"] == "deterministic"
    assert [e["step"] for e in fields["events"]] == ["peek", "second"]
    assert saga_view(values) == saga_view(fields), "the view reads either"


def test_a_saga_graph_works_as_a_subgraph_node() -> None:
    """A parent graph that runs the saga graph as a node sees its channels by name."""
    journal_free = SagaDefinition(
        "one", (Step(_Noop("only")),)
    )  # no journal needed: nothing to count
    saga = build_saga_graph(journal_free).compile()
    parent: StateGraph[SagaChannels, None, SagaChannels, SagaChannels] = StateGraph(SagaChannels)
    parent.add_node("saga", saga)
    parent.add_edge(START, "saga")
    parent.add_edge("saga", END)
    out = parent.compile(checkpointer=InMemorySaver()).invoke(
        {"saga_id": "sub", "input": {}}, {"configurable": {"thread_id": "sub"}}
    )
    assert out["status"] == "completed"
    assert saga_fields(out)["results"]["only"]["output"] == "done"


class _Noop:
    def __init__(self, name: str) -> None:
        self.name = name

    def execute(self, ctx: StepContext) -> StepResult:
        return StepResult(data={}, output="done")

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        pass


# --- checkpoints stored one channel a field (before the record) ----------------------------------


def test_values_stored_one_channel_a_field_are_moved_into_the_record() -> None:
    values = {
        "saga_id": "x",
        "status": "running",
        "events": [{"n": 1}],
        "results": {"a": {}},
        "saga": "toy",
        "branch:to:s2": None,
    }
    versions = {"saga_id": 2, "status": 3, "events": 3, "results": 3, "saga": 2, "branch:to:s2": 3}
    assert earlier_saga(values) and needs_upgrade(values, [])
    new_values, new_versions = upgraded_values(values, versions)
    assert new_values == {
        "saga_id": "x",
        "status": "running",
        "branch:to:s2": None,
        RECORD: {"events": [{"n": 1}], "results": {"a": {}}, "saga": "toy"},
    }
    assert new_versions == {"saga_id": 2, "status": 3, "branch:to:s2": 3, RECORD: 3}
    assert not earlier_saga(new_values), "today's layout is left alone"


def test_a_saga_before_its_first_step_needs_an_upgrade_only_for_its_pending_writes() -> None:
    values = {"saga_id": "x", "input": {}, "fail_at": None}
    assert earlier_saga(values)
    assert not needs_upgrade(values, [("t", "branch:to:s1", None), ("t", RECORD, {})])
    assert needs_upgrade(values, [("00000000-0000-0000-0000-000000000000", "events", [])])


@pytest.mark.parametrize(
    "values",
    [
        {"messages": [], "events": [1], "results": {}},  # another graph's fields
        {"events": [], "results": {}, "status": "x"},  # no saga id
        {"saga_id": "x", "events": [], "results": {}, "messages": []},  # a field of no saga
        {"saga_id": "x", RECORD: {}, "events": []},  # today's layout
    ],
)
def test_another_graphs_checkpoint_is_never_taken_for_an_earlier_saga(
    values: dict[str, Any],
) -> None:
    assert not earlier_saga(values)


def test_pending_writes_stored_one_channel_a_field_become_record_writes() -> None:
    writes = [("t1", "events", [1]), ("t1", "status", "x"), ("t1", "branch:to:s2", None)]
    assert upgraded_writes(writes) == [
        ("t1", RECORD, {"events": [1]}),
        ("t1", "status", "x"),
        ("t1", "branch:to:s2", None),
    ]


@pytest.fixture
def journal(tmp_path: Any) -> Journal:
    return Journal(tmp_path / "journal.sqlite")


def test_the_toy_saga_rolls_back_on_five_channels(journal: Journal) -> None:
    app = build_saga_graph(toy_saga(3, journal)).compile(checkpointer=InMemorySaver())
    view = run_saga(app, {"fail": "s3"}, saga_id="back")
    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["s3", "s2", "s1"]
    record = app.get_state(saga_config("back")).values[RECORD]
    assert record["compensated"] == ["s3", "s2", "s1"]
    assert record["results"] == {}
    assert record["failure"]["step"] == "s3"
