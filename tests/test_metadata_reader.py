"""The metadata reader: finished sagas read with the database driver alone, as LangGraph reads them.

A saga's terminal checkpoint carries its final state values in its metadata; the reader gives
them back, and the view built from them is the view ``saga_status`` builds from a snapshot,
on SQLite and PostgreSQL, for every way a saga ends. A saga that has not ended, one whose
values JSON would change, or one with writes after its last checkpoint is not read there.
"""

from __future__ import annotations

import json
import math
import uuid
from pathlib import Path
from typing import Any

import pytest

from sagagraph import Retry, open_checkpointer, resolve_saga, run_saga, saga_config, saga_status
from sagagraph.checkpoints import saga_metadata
from sagagraph.checkpoints.metadata_reader import Unreadable, open_metadata_reader
from sagagraph.checkpoints.saga_index import latest_checkpoints
from sagagraph.errors import ConfigurationError
from sagagraph.graph.state_view import finished_view
from sagagraph.saga.names import TERMINAL_STATUSES
from tests.toy_saga import Journal, Plan, saga_app, toy_saga

TWO_ATTEMPTS = Retry(max_attempts=2)


def test_the_stamp_mirrors_the_kernels_terminal_statuses() -> None:
    assert saga_metadata.TERMINAL_STATUSES == TERMINAL_STATUSES


def test_a_finished_sagas_view_from_its_metadata_is_the_view_from_its_snapshot(
    durable_checkpointer_url: str, tmp_path: Path
) -> None:
    prefix = f"mr{uuid.uuid4().hex[:8]}"
    plan = Plan()
    journal = Journal(tmp_path / "journal.sqlite")
    definition = toy_saga(3, journal, plan, compensation_retry=TWO_ATTEMPTS, outputs=tmp_path)
    ended = {
        f"{prefix}-ok": "completed",
        f"{prefix}-undone": "rolled_back",
        f"{prefix}-skipped": "resolved_by_operator",
    }
    with saga_app(definition, durable_checkpointer_url) as app:
        run_saga(app, {}, saga_id=f"{prefix}-ok")
        run_saga(app, {"fail": "s2"}, saga_id=f"{prefix}-undone")
        plan.broken_compensations.add("s1")  # s1's undo gives up: an operator decides
        run_saga(app, {"fail": "s3"}, saga_id=f"{prefix}-skipped")
        run_saga(app, {"fail": "s3"}, saga_id=f"{prefix}-waiting")
        resolve_saga(app, f"{prefix}-skipped", "skip", note="ops: s1 kept")
        with open_metadata_reader(durable_checkpointer_url) as reader:
            assert reader is not None
            for saga_id, status in ended.items():
                values = reader.final_values(saga_id)
                assert values is not None, saga_id
                view = finished_view(values, saga_id)
                assert view["status"] == status
                assert view == saga_status(app, saga_id)
            # Waiting for an operator: not ended, so read through the graph.
            assert saga_status(app, f"{prefix}-waiting")["waiting_for_operator"] is True
            assert reader.final_values(f"{prefix}-waiting") is None
            assert reader.final_values(f"{prefix}-never-stored") is None


def test_the_readers_summaries_are_the_savers(
    durable_checkpointer_url: str, tmp_path: Path
) -> None:
    prefix = f"ms{uuid.uuid4().hex[:8]}"
    definition = toy_saga(2, Journal(tmp_path / "journal.sqlite"), Plan(), outputs=tmp_path)
    with saga_app(definition, durable_checkpointer_url) as app:
        for n in range(3):
            run_saga(app, {"fail": "s2"} if n == 1 else {}, saga_id=f"{prefix}-{n}")

        def ours(summaries: Any) -> list[Any]:
            return [s for s in summaries if s.saga_id.startswith(prefix)]

        with open_metadata_reader(durable_checkpointer_url) as reader:
            assert reader is not None
            for page_size in (1, 2, 1000):
                got = ours(reader.latest(page_size=page_size))
                saver: Any = app.checkpointer
                assert got == ours(latest_checkpoints(saver, page_size=page_size))
                assert [s.status for s in got] == ["completed", "rolled_back", "completed"]
            assert ours(reader.latest(skip={"completed"})) == [got[1]]


def test_writes_after_the_last_checkpoint_send_the_saga_to_a_full_read(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    definition = toy_saga(1, Journal(tmp_path / "journal.sqlite"), Plan(), outputs=tmp_path)
    with saga_app(definition, url) as app:
        run_saga(app, {}, saga_id="w1")
        with open_metadata_reader(url) as reader:
            assert reader is not None and reader.final_values("w1") is not None
            saver: Any = app.checkpointer
            latest = saver.get_tuple(saga_config("w1"))
            saver.put_writes(latest.config, [("status", "running")], "a-task")
            assert reader.final_values("w1") is None


def test_a_saga_stamped_without_its_final_values_is_read_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a saga stored by an earlier sagagraph: its summary, but no final values."""
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    monkeypatch.setattr(saga_metadata, "final_state", lambda values, checked=True: None)
    definition = toy_saga(1, Journal(tmp_path / "journal.sqlite"), Plan(), outputs=tmp_path)
    with saga_app(definition, url) as app:
        run_saga(app, {}, saga_id="old")
    with open_metadata_reader(url) as reader:
        assert reader is not None
        assert reader.final_values("old") is None
        [summary] = reader.latest()
        assert (summary.stamped, summary.status) == (True, "completed")


def test_a_database_without_tables_or_not_a_database_is_unreadable(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not sqlite at all " * 100)
    for path in (empty, junk):
        with open_metadata_reader(f"sqlite:///{path}") as reader:
            assert reader is not None
            with pytest.raises(Unreadable):
                reader.latest()
            with pytest.raises(Unreadable):
                reader.final_values("x")
    with open_metadata_reader("memory://") as reader:
        assert reader is None


def test_final_state_keeps_json_values_only() -> None:
    plain: dict[str, Any] = {"status": "completed", "events": [{"ts": "t", "n": 1.5}], "x": None}
    final = saga_metadata.final_state({**plain, "__start__": {"a": 1}, "branch:to:s1": None})
    assert final == plain
    # Not JSON, or not storable as metadata by every saver (PostgreSQL refuses a NUL, and a
    # lone surrogate is not UTF-8): the saga is then read in full.
    for odd in ({1, 2}, math.nan, b"bytes", object(), "nul \x00", "\\u0000", "lone \ud800"):
        assert saga_metadata.final_state({**plain, "x": odd}) is None, odd
    # Other text outside ASCII (an emoji escapes as a surrogate pair) is kept.
    assert saga_metadata.final_state({"x": "é 🙂"}) == {"x": "é 🙂"}


def test_final_state_redacts_the_reason_as_the_summary_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-abcdefghijklmnop1234")
    values = {"status": "rolled_back", "reason": "failed with key sk-test-abcdefghijklmnop1234"}
    final = saga_metadata.final_state(values)
    assert final is not None and "sk-test-abcdefghijklmnop1234" not in json.dumps(final)
    assert (
        saga_metadata.summarize({"channel_values": values})[saga_metadata.REASON] == final["reason"]
    )


def test_only_a_terminal_checkpoint_carries_the_whole_summary() -> None:
    """An unfinished saga is read in full by every reader: its checkpoints say only that."""
    running = {"channel_values": {"status": "running", "saga": "toy"}, "ts": "t"}
    done = {"channel_values": {"status": "completed", "saga": "toy"}, "ts": "t"}
    metadata = {"source": "loop", "step": 3}
    stamped = saga_metadata.stamp(running, metadata)  # type: ignore[arg-type]
    assert stamped == {**metadata, "sagagraph": {"v": 2, "status": "running", "ts": "t"}}
    summary = saga_metadata.stamp(done, metadata)["sagagraph"]  # type: ignore[arg-type,typeddict-item]
    assert summary["name"] == "toy" and summary["final"] == done["channel_values"]
    assert set(summary) == {*saga_metadata.SUMMARY_KEYS, saga_metadata.FINAL}
    assert metadata == {"source": "loop", "step": 3}, "LangGraph's own dict is left as is"


def test_a_summarys_text_is_cleaned_of_what_no_saver_can_store() -> None:
    values = {"status": "rolled_back", "reason": "bad \x00 byte \ud800 here", "x": {1}}
    summary = saga_metadata.stamp({"channel_values": values, "ts": "t"}, {})["sagagraph"]  # type: ignore[typeddict-item]
    assert summary["reason"] == "bad  byte \ufffd here" and saga_metadata.FINAL not in summary
    json.dumps(summary, ensure_ascii=False).encode("utf-8")


def test_a_postgres_server_that_cannot_be_reached_is_one_line_with_no_password() -> None:
    url = "postgresql://me:hunter2-secret@127.0.0.1:1/nowhere?connect_timeout=2"
    with pytest.raises(ConfigurationError) as caught, open_metadata_reader(url):
        pass  # pragma: no cover - never reached
    message = str(caught.value)
    assert "cannot connect" in message and "hunter2-secret" not in message
    assert "\n" not in message


def test_the_reader_opens_no_checkpointer(tmp_path: Path) -> None:
    """Reading creates nothing: open_checkpointer would create the tables."""
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    with open_checkpointer(url):
        pass
    before = (tmp_path / "sagas.sqlite").stat().st_size
    with open_metadata_reader(url) as reader:
        assert reader is not None and reader.latest() == []
    assert (tmp_path / "sagas.sqlite").stat().st_size == before


def test_the_sqlite_savers_one_encoding_stores_what_the_stamp_says() -> None:
    """``stamped_text`` checks the final values by the encoding that stores them: the same
    metadata as the stamp, and without the final values where the stamp leaves them out."""
    done: dict[str, Any] = {"status": "completed", "events": [{"ts": "t"}], "x": "é 🙂"}
    metadata = {"source": "loop", "step": 3}
    for values in (done, *({**done, "x": odd} for odd in (math.nan, {1}, "\x00", "\ud800"))):
        checkpoint = {"channel_values": values, "ts": "t"}
        text = saga_metadata.stamped_text(checkpoint, metadata)  # type: ignore[arg-type]
        text.encode("utf-8")
        expected = saga_metadata.stamp(checkpoint, metadata)  # type: ignore[arg-type]
        assert json.loads(text) == expected, values["x"]
    whole: Any = {"channel_values": done, "ts": "t"}
    assert saga_metadata.FINAL in json.loads(saga_metadata.stamped_text(whole, {}))["sagagraph"]


def test_on_postgresql_the_final_values_are_text_so_their_keys_keep_their_order() -> None:
    values: dict[str, Any] = {
        "status": "completed",
        "results": {"zeta": 1, "alpha": {"b": 1, "a": 2}},
    }
    checkpoint = {"channel_values": values, "ts": "t"}
    text = saga_metadata.stamped_text(checkpoint, {}, final_as_text=True)  # type: ignore[arg-type]
    final = json.loads(text)["sagagraph"][saga_metadata.FINAL]
    assert isinstance(final, str) and list(json.loads(final)["results"]) == ["zeta", "alpha"]
    odd: Any = {"channel_values": {**values, "x": math.nan}, "ts": "t"}
    nan = saga_metadata.stamped_text(odd, {}, final_as_text=True)
    assert saga_metadata.FINAL not in json.loads(nan)["sagagraph"]
