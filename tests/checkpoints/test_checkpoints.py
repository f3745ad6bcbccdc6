"""Checkpointers from URLs, the sagas they hold, and what survives closing them."""

from __future__ import annotations

import inspect
import sqlite3
from pathlib import Path

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver

from sagagraph import (
    ConfigurationError,
    new_saga_id,
    open_checkpointer,
    resolve_saga,
    resume_saga,
    run_saga,
    saga_status,
    unfinished_sagas,
)
from sagagraph.checkpoints.saga_index import saga_ids
from sagagraph.checkpoints.savers import SagaSqliteSaver
from sagagraph.checkpoints.urls import redact_url
from tests.support.toy_saga import (
    Crash,
    Journal,
    Plan,
    SimulatedCrash,
    saga_app,
    stored_views,
    toy_saga,
)


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal.sqlite")


@pytest.mark.parametrize("url", ["memory://", "memory"])
def test_memory_urls_run_a_saga(journal: Journal, url: str) -> None:
    with saga_app(toy_saga(2, journal), url) as app:
        assert run_saga(app, {}, saga_id="m")["status"] == "completed"


def test_a_durable_checkpointer_keeps_sagas_after_it_is_closed(
    journal: Journal, durable_checkpointer_url: str
) -> None:
    saga_id = new_saga_id("kept")
    definition = toy_saga(3, journal)
    with saga_app(definition, durable_checkpointer_url) as app:
        first = run_saga(app, {"fail": "s3"}, saga_id=saga_id)
    with saga_app(definition, durable_checkpointer_url) as app:
        assert saga_status(app, saga_id) == first
    assert first["status"] == "rolled_back"


def test_sqlite_creates_its_file_and_tables(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    with open_checkpointer(f"sqlite:///{path}"):
        pass
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"checkpoints", "writes"} <= tables


def test_a_relative_sqlite_path_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with open_checkpointer("sqlite:///rel.sqlite"):
        pass
    assert (tmp_path / "rel.sqlite").is_file()


def test_the_default_is_a_sqlite_file_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SAGAGRAPH_DB", raising=False)
    with open_checkpointer() as checkpointer:
        assert isinstance(checkpointer, SagaSqliteSaver)
    assert (tmp_path / "sagagraph.sqlite").is_file()

    monkeypatch.setenv("SAGAGRAPH_DB", f"sqlite:///{tmp_path / 'from-env.sqlite'}")
    with open_checkpointer():
        pass
    assert (tmp_path / "from-env.sqlite").is_file()


def test_postgres_url_opens_a_postgres_saver(postgres_url: str) -> None:
    with open_checkpointer(postgres_url) as checkpointer:
        from sagagraph.checkpoints.postgres_savers import SagaPostgresSaver

        assert isinstance(checkpointer, SagaPostgresSaver)


@pytest.mark.parametrize(
    ("url", "shown", "cause"),
    [
        (
            "mysql://ada:s3cret@db.example/sagas",
            "mysql://ada:***@db.example/sagas",
            "expected sqlite:///PATH, sqlite+group:///PATH, memory://, postgresql://... or "
            "postgresql+group://...",
        ),
        ("sqlite://relative.db", "sqlite://relative.db", "expected sqlite:///PATH"),
        ("sqlite:///", "sqlite:///", "no file path after sqlite:///"),
        ("sqlite:///no/such/folder/x.sqlite", "sqlite:///no/such/folder/x.sqlite", "missing"),
        (
            "postgresql://ada:s3cret@127.0.0.1:1/sagas",
            "postgresql://ada:***@127.0.0.1:1/sagas",
            "cannot connect",
        ),
        (
            "postgresql://ada@127.0.0.1:1/sagas?password=s3cret",
            "postgresql://ada@127.0.0.1:1/sagas?password=***",
            "cannot connect",
        ),
        (
            "postgresql://ada:s3cret@127.0.0.1:5432/sagas?bogus=1",
            "postgresql://ada:***@127.0.0.1:5432/sagas?bogus=1",
            "cannot connect",
        ),
    ],
)
def test_bad_urls_fail_with_one_line_naming_the_url_without_its_password(
    url: str, shown: str, cause: str
) -> None:
    with pytest.raises(ConfigurationError) as caught, open_checkpointer(url):
        pass
    message = str(caught.value)
    assert "\n" not in message
    assert f"checkpointer url {shown!r}" in message
    assert cause in message
    assert "s3cret" not in message
    assert caught.value.exit_code == 2


def test_files_that_are_not_databases_are_refused(tmp_path: Path) -> None:
    not_db = tmp_path / "notes.txt"
    not_db.write_text("these are not the tables you are looking for\n" * 100)
    with (
        pytest.raises(ConfigurationError, match="not a usable SQLite database"),
        open_checkpointer(f"sqlite:///{not_db}"),
    ):
        pass
    with (
        pytest.raises(ConfigurationError, match="is a folder"),
        open_checkpointer(f"sqlite:///{tmp_path}"),
    ):
        pass


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        ("postgresql://u:pw@h:5432/db", "postgresql://u:***@h:5432/db"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("postgresql://:pw@h/db", "postgresql://:***@h/db"),
        ("postgresql://h/db?user=u&password=pw", "postgresql://h/db?user=u&password=***"),
        ("sqlite:///a.db", "sqlite:///a.db"),
    ],
)
def test_redact_url(url: str, redacted: str) -> None:
    assert redact_url(url) == redacted


def test_runs_default_to_sync_durability() -> None:
    for fn in (run_saga, resume_saga, resolve_saga):
        assert inspect.signature(fn).parameters["durability"].default == "sync"


def test_each_step_is_checkpointed_before_the_next_starts(
    journal: Journal, durable_checkpointer_url: str
) -> None:
    """With sync durability, a crash in s3 finds s1 and s2 on disk (read by another saver)."""
    saga_id = new_saga_id("sync")
    definition = toy_saga(4, journal, Plan(crash=Crash("s3", "execute", "before")))
    with saga_app(definition, durable_checkpointer_url) as app:
        with pytest.raises(SimulatedCrash):
            run_saga(app, {}, saga_id=saga_id)
        with saga_app(definition, durable_checkpointer_url) as reader:
            view = saga_status(reader, saga_id)
    assert view["completed"] == ["s1", "s2"]
    assert view["next"] == ["s3"]


def test_listing_finds_every_saga_and_what_is_unfinished(
    journal: Journal, checkpointer_url: str
) -> None:
    definition = toy_saga(3, journal, Plan(crash=Crash("s2", "execute", "before")))
    done, failed, crashed = (new_saga_id(p) for p in ("done", "failed", "crashed"))
    with saga_app(definition, checkpointer_url) as app:
        with pytest.raises(SimulatedCrash):
            run_saga(app, {}, saga_id=crashed)
        run_saga(app, {}, saga_id=done)
        run_saga(app, {"fail": "s1"}, saga_id=failed)
        assert isinstance(app.checkpointer, BaseCheckpointSaver)
        ids = set(saga_ids(app.checkpointer))
        statuses = {v["saga_id"]: v["status"] for v in stored_views(app)}
        rolled_back = [v["saga_id"] for v in stored_views(app, status="rolled_back")]
        unfinished = unfinished_sagas(app)

    assert {done, failed, crashed} <= ids  # postgres is shared by the session's tests
    assert statuses[done] == "completed"
    assert statuses[failed] == "rolled_back"
    assert statuses[crashed] == "running"
    assert failed in rolled_back and done not in rolled_back
    assert crashed in unfinished and done not in unfinished and failed not in unfinished
