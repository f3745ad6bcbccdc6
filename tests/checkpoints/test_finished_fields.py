"""The fields of a finished saga, kept in ``sagagraph_finished`` by the SQLite and PostgreSQL
savers, and the reader that trusts them only for the saga's latest checkpoint.

A record is kept only when JSON gives the very same values back; a deleted saga's record goes
with it; a record older than the saga's latest checkpoint is left to the full read.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from sagagraph import open_checkpointer, run_saga, saga_config
from sagagraph.checkpoints.finished import finished_record, read_finished
from sagagraph.graph.stored import read_view, view_of_finished, with_flags
from tests.support.toy_saga import Journal, saga_app, toy_saga

ROOT = {"configurable": {"thread_id": "s1", "checkpoint_ns": ""}}


def checkpoint(**values: Any) -> dict[str, Any]:
    return {"id": "c1", "channel_values": {"saga_id": "s1", "status": "completed", **values}}


def test_a_finished_checkpoint_of_plain_data_is_recorded() -> None:
    record = finished_record(ROOT, checkpoint(completed=["a"], usage={"a": {"calls": 1}}))
    assert record is not None and record[:2] == ("s1", "c1")


@pytest.mark.parametrize(
    "values",
    [
        {"status": "running"},
        {"completed": ("a", "b")},  # a tuple comes back from JSON as a list
        {"usage": {1: "one"}},  # a key that is not text
        {"reason": math.nan},
        {"results": {"a": {"at": object()}}},
        {"__start__": {"input": {}}},
    ],
    ids=["unfinished", "tuple", "int-key", "nan", "object", "input-pending"],
)
def test_anything_json_would_not_give_back_exactly_is_not_recorded(values: Any) -> None:
    assert finished_record(ROOT, checkpoint(**values)) is None


def test_langgraph_channels_are_not_saga_fields() -> None:
    """A parallel saga's barrier channel holds a set: left out, the saga is still recorded."""
    record = finished_record(
        ROOT, checkpoint(**{"join:a+b:c": set(), "branch:to:c": None, "__interrupt__": []})
    )
    assert record is not None
    assert json.loads(record[2]) == {"saga_id": "s1", "status": "completed"}


def test_a_subgraph_checkpoint_is_not_recorded() -> None:
    config = {"configurable": {"thread_id": "s1", "checkpoint_ns": "agent:1"}}
    assert finished_record(config, checkpoint()) is None


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_kept_view_is_the_full_read_until_the_saga_is_deleted(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = (
        f"sqlite:///{tmp_path / 'sagas.sqlite'}"
        if backend == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    saga_id = f"kept-{tmp_path.name[-12:]}".replace("_", "-")
    with saga_app(toy_saga(2, Journal(tmp_path / "journal.jsonl")), url) as app:
        assert run_saga(app, {}, saga_id=saga_id)["status"] == "completed"
    kept = read_finished(url, saga_id)
    assert kept is not None and kept.fields is not None
    with open_checkpointer(url) as saver:
        full = read_view(saver, saga_id)
        assert full is not None
        assert view_of_finished(kept.fields, saga_id, kept.locks) == with_flags(saver, full)
        saver.delete_thread(saga_id)
    gone = read_finished(url, saga_id)
    assert gone is not None and gone.fields is None
    assert gone == read_finished(url, "never-stored")


def test_a_record_older_than_the_latest_checkpoint_is_left_to_the_full_read(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    with saga_app(toy_saga(1, Journal(tmp_path / "journal.jsonl")), url) as app:
        run_saga(app, {}, saga_id="s1")
        # A later finished checkpoint (an edit of the state) is recorded in its turn...
        app.update_state(saga_config("s1"), {"reason": "edited"})
        kept = read_finished(url, "s1")
        assert kept is not None and kept.fields is not None
        assert kept.fields["reason"] == "edited"
        # ...one that is not finished outdates the record.
        app.update_state(saga_config("s1"), {"status": "running"})
    assert read_finished(url, "s1") is None
