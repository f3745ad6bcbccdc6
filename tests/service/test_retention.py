"""Retention: finished sagas keep their last checkpoint (their view, events and summary), old
ones go, unfinished and busy ones are left alone; from the application API, the CLI and the
workers' beat schedule. A compaction killed half way is finished by the next prune."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from bench.fake_saga import PAPER_INPUT, fake_agents, fake_definition
from sagagraph import SagaService, build_saga_graph, open_checkpointer, run_saga
from sagagraph.checkpoints.compaction import checkpoint_count, keep_latest
from sagagraph.cli import main
from sagagraph.errors import ConfigurationError
from sagagraph.graph.leases import saga_lease
from sagagraph.graph.retention import prune_sagas, retention_period
from tests.support.child_processes import reaped
from tests.support.services import saga_database

ROOT = Path(__file__).resolve().parents[2]


def run_sagas(url: str, n: int = 5) -> list[str]:
    """``n`` three-step sagas; every fifth fails at its last step and rolls back."""
    ids = [f"s{i}" for i in range(n)]
    with open_checkpointer(url) as saver:
        app = build_saga_graph(fake_definition(fake_agents())).compile(checkpointer=saver)
        for i, saga_id in enumerate(ids):
            fail_at = "summarizer" if i % 5 == 4 else None
            run_saga(app, PAPER_INPUT, saga_id=saga_id, fail_at=fail_at)
    return ids


def counts(url: str, ids: list[str]) -> dict[str, int]:
    with open_checkpointer(url) as saver:
        return {s: checkpoint_count(saver, s)[0] for s in ids}


def snapshot(service: SagaService, ids: list[str]) -> tuple[Any, ...]:
    return (service.list(), [service.get(s) for s in ids], [service.events(s) for s in ids])


@pytest.fixture(params=["sqlite", "sqlite+group", "postgres+group"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A SQLite file kept by LangGraph's saver (compacted through delete and put), or a
    SQLite file or PostgreSQL database kept by a group-commit saver (its own ``prune``)."""
    with saga_database(request.param, tmp_path) as url:
        yield url


def test_finished_sagas_keep_their_last_checkpoint_and_read_the_same(
    db: str, tmp_path: Path
) -> None:
    ids = run_sagas(db)
    service = SagaService.from_urls(db, f"sqlite:///{tmp_path / 'bus.sqlite'}")
    before = snapshot(service, ids)
    assert all(n > 1 for n in counts(db, ids).values())

    dry = service.prune(dry_run=True)
    assert dry.dry_run and len(dry.compacted) == 5 and dry.checkpoints_removed > 0
    assert all(n > 1 for n in counts(db, ids).values())  # a dry run changes nothing

    done = service.prune()
    assert sorted(done.compacted) == ids and done.deleted == [] and done.busy == []
    assert done.checkpoints_removed == dry.checkpoints_removed
    assert counts(db, ids) == dict.fromkeys(ids, 1)
    assert snapshot(service, ids) == before  # list, status and events unchanged
    assert service.list(status="rolled_back")[0]["saga_id"] == "s4"
    assert service.unfinished() == ([], [])
    again = service.prune()
    assert again.compacted == [] and again.checkpoints_removed == 0


def test_sagas_finished_before_the_cutoff_are_deleted(db: str, tmp_path: Path) -> None:
    ids = run_sagas(db, 3)
    service = SagaService.from_urls(db, f"sqlite:///{tmp_path / 'bus.sqlite'}")
    assert service.prune(finished_before=datetime.now(UTC) - timedelta(days=1)).deleted == []
    done = service.prune(finished_before=datetime.now(UTC) + timedelta(seconds=1))
    assert sorted(done.deleted) == ids
    assert service.list() == [] and service.get("s0") is None


def test_a_saga_held_by_a_process_is_skipped(db: str) -> None:
    ids = run_sagas(db, 2)
    with open_checkpointer(db) as saver, saga_lease(saver, "s0"):
        done = prune_sagas(saver, finished_before=datetime.now(UTC) + timedelta(seconds=1))
        assert done.busy == ["s0"] and done.deleted == ["s1"]
    assert counts(db, ids[:1])["s0"] > 1


def test_unfinished_sagas_are_never_touched() -> None:
    saver = InMemorySaver()
    app = build_saga_graph(fake_definition(fake_agents())).compile(checkpointer=saver)
    run_saga(app, PAPER_INPUT, saga_id="done")
    config: Any = {"configurable": {"thread_id": "half"}}
    app.invoke(
        {"saga_id": "half", "input": dict(PAPER_INPUT)}, config, interrupt_after=["validator"]
    )
    before = checkpoint_count(saver, "half")
    done = prune_sagas(saver, finished_before=datetime.now(UTC) + timedelta(seconds=1))
    assert done.deleted == ["done"]
    assert checkpoint_count(saver, "half") == before


def test_the_memory_saver_is_compacted_in_place() -> None:
    saver = InMemorySaver()
    app = build_saga_graph(fake_definition(fake_agents())).compile(checkpointer=saver)
    view = run_saga(app, PAPER_INPUT, saga_id="m1", fail_at="summarizer")
    values = app.get_state({"configurable": {"thread_id": "m1"}}).values
    assert keep_latest(saver, "m1") > 0
    assert checkpoint_count(saver, "m1") == (1, 1)
    assert app.get_state({"configurable": {"thread_id": "m1"}}).values == values
    assert view["status"] == "rolled_back"


KILLED_COMPACTION = """
import os, sys
from langgraph.checkpoint.sqlite import SqliteSaver
from sagagraph import open_checkpointer
from sagagraph.checkpoints.compaction import keep_latest

real_put = SqliteSaver.put

def put(self, *args, **kwargs):
    os._exit(9)  # the thread is deleted, its kept checkpoint journaled, not put back yet

SqliteSaver.put = put
with open_checkpointer(sys.argv[1]) as saver:
    keep_latest(saver, "s0")
"""


def test_a_compaction_killed_after_the_delete_is_finished_by_the_next_prune(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    ids = run_sagas(db, 1)
    service = SagaService.from_urls(db, f"sqlite:///{tmp_path / 'bus.sqlite'}")
    before = service.get("s0")
    script = tmp_path / "kill.py"
    script.write_text(textwrap.dedent(KILLED_COMPACTION))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with reaped(subprocess.Popen([sys.executable, str(script), db], env=env)) as proc:
        assert proc.wait(timeout=120) == 9
    assert service.get("s0") is None  # deleted, not yet put back: only the journal has it
    done = service.prune()
    assert done.resumed == ["s0"]
    assert service.get("s0") == before
    assert counts(db, ids) == {"s0": 1}


def test_the_cli_prunes_and_says_what_it_did(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_sagas(db, 2)
    assert main(["prune", "--db", db, "--dry-run", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["dry_run"] is True and dry["compacted"] == 2 and dry["deleted"] == 0
    assert main(["prune", "--db", db]) == 0
    assert "cut 2 finished saga(s)" in capsys.readouterr().out
    assert main(["prune", "--db", db, "--finished-before", "soon", "--json"]) == 2
    assert "--finished-before" in capsys.readouterr().err
    assert main(["prune", "--db", db, "--finished-before", "2999-01-01", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["deleted"] == 2
    assert main(["list", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_retention_periods_and_the_beat_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    assert retention_period("30d") == timedelta(days=30)
    with pytest.raises(ConfigurationError, match="SAGAGRAPH_RETENTION '30 days'"):
        retention_period("30 days")
    pytest.importorskip("celery")
    from sagagraph.workers.celery_app import PRUNE, make_celery_app

    monkeypatch.delenv("SAGAGRAPH_RETENTION", raising=False)
    assert "sagagraph-prune" not in make_celery_app("amqp://127.0.0.1:5672//").conf.beat_schedule
    monkeypatch.setenv("SAGAGRAPH_RETENTION", "30d")
    app = make_celery_app("amqp://127.0.0.1:5672//")
    assert app.conf.beat_schedule["sagagraph-prune"]["task"] == PRUNE


def test_the_event_log_of_choreographed_sagas_finished_before_the_cutoff_goes(
    offline_cli: None, capsys: pytest.CaptureFixture[str]
) -> None:
    paper = str(ROOT / "examples" / "papers" / "complete_paper.md")
    assert main(["run", paper, "--mode", "choreography", "--saga-id", "chor-old"]) == 0
    cutoff = datetime.now(UTC)
    time.sleep(0.01)  # the kept saga's events are stamped after the cut-off
    assert main(["run", paper, "--mode", "choreography", "--saga-id", "chor-kept"]) == 0
    assert main(["run", paper, "--saga-id", "orch-kept"]) == 0
    capsys.readouterr()
    service = SagaService.from_urls()
    kept = ["chor-kept", "orch-kept"]
    before = (service.list(), [service.get(s) for s in kept], [service.events(s) for s in kept])

    dry = service.prune(finished_before=cutoff, dry_run=True)
    assert dry.log_deleted == ["chor-old"] and service.get("chor-old") is not None
    done = service.prune(finished_before=cutoff)
    assert done.log_deleted == ["chor-old"] and done.counts()["log_deleted"] == 1
    assert service.get("chor-old") is None  # no event of it is left in the log
    rows = [r for r in before[0] if r["saga_id"] != "chor-old"]
    after = (service.list(), [service.get(s) for s in kept], [service.events(s) for s in kept])
    assert after == (rows, before[1], before[2])  # list, status and events of the others

    assert main(["prune", "--finished-before", "2999-01-01", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["log_deleted"] == 1 and printed["deleted"] == 1
    assert main(["list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
