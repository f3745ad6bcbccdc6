"""A saga dead-lettered after its worker was SIGKILLed mid-saga comes back (issue 38, item 1).

The queue's delivery limit is 1: a worker is SIGKILLed once the validator committed, the next
worker dead-letters the saga. The saga keeps its next step: ``requeue`` completes it with all
its outputs; ``cancel`` and ``rollback`` roll it back and leave none; ``recover`` never exits
0 while it is not final. Real RabbitMQ and PostgreSQL, real processes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sagagraph.cli.entry import main as sagagraph
from sagagraph.graph.runner import saga_status
from tests.support.queue_support import (
    PAPER_FILES,
    WorkerProcess,
    commit_times,
    counting_server,
    delete_queue,
    files_of,
    unique_queue,
    wait_for,
    worker_env,
    write_papers,
)

pytestmark = [pytest.mark.postgres, pytest.mark.rabbitmq, pytest.mark.slow]


@pytest.fixture
def queue(amqp_url: str) -> Iterator[str]:
    url = unique_queue(amqp_url, max_deliveries=1)
    yield url
    delete_queue(url)


def cli(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> Any:
    capsys.readouterr()
    got = sagagraph(list(args))
    captured = capsys.readouterr()
    assert got == code, captured.err + captured.out
    return json.loads(captured.out) if "--json" in args else captured.out


@pytest.fixture
def dead_lettered(
    tmp_path: Path, env: dict[str, Any], readers: Any, capsys: pytest.CaptureFixture[str]
) -> Iterator[str]:
    """A saga whose worker was SIGKILLed after the validator committed, then dead-lettered
    by the next worker (delivery 2 of 1)."""
    (paper,) = write_papers(tmp_path / "papers", 1)
    with counting_server(1, delay=2.0) as (server, _):
        flags = ["--db", env["db"], "--queue", env["queue"]]
        process_env = worker_env(server.base_url)
        out = cli(capsys, "submit", str(paper), *env["flags"][:6], "--llm", "openai", "--json")
        saga_id = out[0]["saga_id"]
        first = WorkerProcess(flags, cwd=tmp_path, env=process_env)
        try:
            wait_for(
                lambda: "validator" in commit_times(readers, saga_id),
                timeout=120,
                what="the validator committed",
            )
        finally:
            first.kill()  # SIGKILL: the task goes back to the queue unacknowledged
        second = WorkerProcess(flags, cwd=tmp_path, env=process_env)
        try:
            wait_for(
                lambda: saga_status(readers, saga_id)["dead_letter"] is not None,
                timeout=120,
                what="the saga dead-lettered",
            )
        finally:
            assert second.terminate() == 0, "\n".join(second.lines)
        yield saga_id


def test_a_requeued_dead_lettered_saga_completes_with_all_its_outputs(
    tmp_path: Path,
    env: dict[str, Any],
    readers: Any,
    dead_lettered: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    saga_id = dead_lettered
    view = saga_status(readers, saga_id)
    assert view["completed"] == ["validator"] and view["next"], view
    # recover leaves it to the operator (it took its workers down) and says so: exit 4.
    cli(capsys, "recover", "--db", env["db"], "--outputs", str(env["outputs"]), code=4)
    assert saga_status(readers, saga_id)["completed"] == ["validator"]
    with counting_server(1) as (server, _):
        requeued = cli(capsys, "requeue", saga_id, *env["flags"][:4], "--json")
        assert requeued["dead_letter"] is None and requeued["next"], requeued
        healthy = WorkerProcess(
            ["--db", env["db"], "--queue", env["queue"]],
            cwd=tmp_path,
            env=worker_env(server.base_url),
        )
        try:
            wait_for(
                lambda: saga_status(readers, saga_id)["status"] == "completed",
                timeout=120,
                what="the requeued saga completed",
            )
        finally:
            assert healthy.terminate() == 0, "\n".join(healthy.lines)
    view = saga_status(readers, saga_id)
    assert view["completed"] == ["validator", "reviewer", "summarizer"]
    assert sorted(files_of(env["outputs"], saga_id)) == sorted(PAPER_FILES.values())


@pytest.mark.parametrize("verb", ["cancel", "rollback"])
def test_a_dead_lettered_saga_cancelled_or_rolled_back_leaves_no_outputs(
    verb: str,
    env: dict[str, Any],
    readers: Any,
    dead_lettered: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    saga_id = dead_lettered
    assert files_of(env["outputs"], saga_id) == ["validation.txt"]
    if verb == "cancel":
        args = ["cancel", saga_id, "--by", "ops", "--reason", "stop it", *env["flags"][:4]]
    else:
        args = ["rollback", saga_id, *env["flags"][:2], "--outputs", str(env["outputs"])]
    cli(capsys, *args, "--json")
    view = saga_status(readers, saga_id)
    assert view["status"] == "rolled_back", view
    # The reviewer that was running when its worker died is cleaned up first, then the
    # validator's committed output.
    assert view["compensated"] == ["reviewer", "validator"]
    assert files_of(env["outputs"], saga_id) == []
