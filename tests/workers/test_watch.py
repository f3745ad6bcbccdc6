"""Recovery nobody has to call: a ``run`` killed mid-saga leaves it orphaned (``list`` says
so) until ``recover --watch`` takes it over; two watchers never run it at once."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sagagraph.cli.entry import main as sagagraph
from sagagraph.graph.runner import saga_status
from tests.support.queue_support import (
    DIE_EXIT_CODE,
    PAPER_FILES,
    WorkerProcess,
    files_of,
    wait_for,
    worker_env,
    write_papers,
)

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_an_orphaned_saga_is_taken_over_once_by_two_watchers(
    tmp_path: Path, postgres_url: str, readers: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    (paper,) = write_papers(tmp_path / "papers", 1)
    saga_id = f"orphan-{tmp_path.name[-8:]}"
    outputs = tmp_path / "outputs"
    flags = ["--db", postgres_url, "--outputs", str(outputs), "--llm", "offline"]
    env = worker_env()
    marker = tmp_path / "died"
    run = WorkerProcess(
        [str(paper), "--saga-id", saga_id, *flags],
        cwd=tmp_path,
        env=env,
        verb="run",
        die_once=f"{saga_id}:reviewer:write:{marker}",
    )
    assert run.reap(timeout=120) == DIE_EXIT_CODE, "\n".join(run.lines)
    capsys.readouterr()
    assert sagagraph(["list", "--db", postgres_url, "--json"]) == 0
    rows = {r["saga_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows[saga_id]["orphaned"] and rows[saga_id]["completed"] == ["validator"]

    watch = ["--watch", "--every", "0.5", "--db", postgres_url]
    watchers = [WorkerProcess(watch, cwd=tmp_path, env=env, verb="recover") for _ in range(2)]
    try:
        wait_for(
            lambda: saga_status(readers, saga_id)["status"] == "completed",
            timeout=120,
            what="the orphan taken over",
        )
    finally:
        codes = [w.terminate(started="recover: watching") for w in watchers]
    assert codes == [0, 0]
    assert any(w.count(f"recover: taking over saga {saga_id}") for w in watchers)
    view = saga_status(readers, saga_id)
    committed = Counter(
        e["step"] for e in view["events"] if (e["action"], e["outcome"]) == ("execute", "ok")
    )
    assert committed == dict.fromkeys(PAPER_FILES, 1)
    assert files_of(outputs, saga_id) == sorted(PAPER_FILES.values())
