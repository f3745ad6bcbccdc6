"""Worker processes on real RabbitMQ and PostgreSQL: SIGKILLed at random, dying on one saga
every time, stopped with SIGTERM. Sagas run the paper pipeline through the real ``ChatOpenAI``
client against a scripted server that records, per paper and step, when each request came.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sagagraph.cli.apps import paper_app
from sagagraph.cli.entry import main as sagagraph
from sagagraph.config import Settings
from sagagraph.graph.runner import saga_status
from sagagraph.graph.submit import SagaRequest, submit_sagas
from sagagraph.graph.work_queue import delete_queues, queue_address, queue_counts
from tests.support.queue_support import (
    DIE_EXIT_CODE,
    PAPER_FILES,
    WorkerProcess,
    commit_times,
    counting_server,
    files_of,
    unique_queue,
    wait_for,
    worker_env,
    write_papers,
)

pytestmark = [pytest.mark.postgres, pytest.mark.rabbitmq, pytest.mark.slow]

STEPS = list(PAPER_FILES)


@pytest.fixture
def readers(postgres_url: str) -> Iterator[Any]:
    """The paper saga on the shared checkpointer, to read views and history (offline engine:
    the graph is the same whatever engine the workers use)."""
    with paper_app(Settings.resolve(db=postgres_url, llm="offline"), "deterministic") as app:
        yield app


def submit(
    postgres_url: str,
    queue: str,
    outputs: Path,
    papers: list[Path],
    fail_at: list[str | None],
    llm: str,
) -> list[str]:
    settings = Settings.resolve(db=postgres_url, outputs=str(outputs), llm=llm)
    recorded = settings.recorded() | {"router": "deterministic"}
    requests = [
        SagaRequest({"paper": str(p), "settings": recorded}, fail_at=f)
        for p, f in zip(papers, fail_at, strict=True)
    ]
    with paper_app(settings, "deterministic") as app:
        return submit_sagas(app, requests, queue=queue)


def views_of(app: Any, ids: list[str]) -> dict[str, dict[str, Any]]:
    return {i: saga_status(app, i) for i in ids}


def all_final(app: Any, ids: list[str]) -> bool:
    return all(v["status"] in ("completed", "rolled_back") for v in views_of(app, ids).values())


def worker_flags(postgres_url: str, queue: str, concurrency: int) -> list[str]:
    return ["--db", postgres_url, "--queue", queue, "--concurrency", str(concurrency)]


def test_workers_killed_at_random_lose_no_saga_and_repeat_no_committed_step(
    tmp_path: Path, postgres_url: str, amqp_url: str, readers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    count, kills_wanted = 100, 8
    # Every kill costs the sagas in flight one delivery; none may reach the limit here.
    queue = unique_queue(amqp_url, max_deliveries=kills_wanted + 2)
    papers = write_papers(tmp_path / "papers", count)
    fail_at = [rng.choice([None, None, *STEPS]) for _ in range(count)]
    outputs = tmp_path / "outputs"
    with counting_server(count, delay=0.02) as (server, model):
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-submitter")
        ids = submit(postgres_url, queue, outputs, papers, fail_at, "openai")
        env = worker_env(server.base_url)
        flags = worker_flags(postgres_url, queue, 4)

        def start() -> WorkerProcess:
            return WorkerProcess(flags, cwd=tmp_path, env=env)

        workers = [start() for _ in range(3)]
        started = list(workers)
        kills = 0
        try:
            while kills < kills_wanted and not all_final(readers, ids):
                busy = [i for i, w in enumerate(workers) if w.count("took saga")]
                if busy:
                    victim = rng.choice(busy)
                    time.sleep(rng.uniform(0.05, 0.8))  # a random moment of its work
                    workers[victim].kill()
                    workers[victim] = start()
                    started.append(workers[victim])
                    kills += 1
                time.sleep(0.2)
            wait_for(lambda: all_final(readers, ids), timeout=300, what="every saga final", every=1)
        finally:
            codes = [w.terminate() for w in workers]
        assert codes == [0, 0, 0], f"seed {seed}"
        assert kills >= 1, f"seed {seed}: the sagas finished before any worker was killed"
        # The kills hit work in flight: some saga came back to a worker a second time.
        assert any(w.count("(delivery 2 of") for w in started), f"seed {seed}"

    views = views_of(readers, ids)
    for index, saga_id in enumerate(ids):
        view, why = views[saga_id], f"seed {seed}, saga {saga_id} (fail_at {fail_at[index]})"
        if fail_at[index] is None:
            assert view["status"] == "completed", why
            assert files_of(outputs, saga_id) == sorted(PAPER_FILES.values()), why
            assert view["completed"] == STEPS, why
        else:
            assert view["status"] == "rolled_back", why
            assert files_of(outputs, saga_id) == [] and view["outputs"] == {}, why
        # A step's model call never comes again once the step committed.
        for step, committed_at in commit_times(readers, saga_id).items():
            late = [t for t in model.calls[(index, step)] if t > committed_at]
            assert not late, f"{why}: {step} called the model after it committed"
        assert view["dead_letter"] is None, why
    assert (-1, "validator") not in model.calls and (-1, "") not in model.calls
    counts = asyncio.run(queue_counts(queue_address(queue)))
    assert (counts.ready, counts.dead) == (0, 0)
    asyncio.run(delete_queues(queue_address(queue)))


def test_a_saga_whose_worker_always_dies_is_dead_lettered_and_the_others_finish(
    tmp_path: Path,
    postgres_url: str,
    amqp_url: str,
    readers: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    queue = unique_queue(amqp_url, max_deliveries=3)
    outputs = tmp_path / "outputs"
    papers = write_papers(tmp_path / "papers", 7)
    poison = f"saga-poison-{uuid.uuid4().hex[:8]}"
    settings = Settings.resolve(db=postgres_url, outputs=str(outputs), llm="offline")
    recorded = settings.recorded() | {"router": "deterministic"}
    requests = [SagaRequest({"paper": str(p), "settings": recorded}) for p in papers[1:]]
    requests.insert(3, SagaRequest({"paper": str(papers[0]), "settings": recorded}, poison))
    with paper_app(settings, "deterministic") as app:
        ids = submit_sagas(app, requests, queue=queue)
    others = [i for i in ids if i != poison]
    env = worker_env()
    flags = worker_flags(postgres_url, queue, 1)  # one at a time: a death hits only the poison

    def start() -> WorkerProcess:
        return WorkerProcess(flags, cwd=tmp_path, env=env, die_on=poison)

    workers = [start(), start()]
    deaths = 0

    def settled() -> bool:
        nonlocal deaths
        # Read first: a death that led to what is read has happened, and is counted below.
        done = all_final(readers, others) and saga_status(readers, poison)["dead_letter"]
        for i, w in enumerate(workers):
            if not w.alive():
                assert w.reap() == DIE_EXIT_CODE, "\n".join(w.lines)
                deaths += 1
                workers[i] = start()
        return bool(done)

    try:
        wait_for(
            settled, timeout=240, what="the poison dead-lettered and the others final", every=0.5
        )
    finally:
        codes = [w.terminate() for w in workers]
    assert codes == [0, 0]
    assert deaths == 3  # one per delivery, and no more
    view = saga_status(readers, poison)
    assert view["status"] == "queued" and "3 deliveries" in view["dead_letter"]["detail"]
    assert all(v["status"] == "completed" for v in views_of(readers, others).values())

    capsys.readouterr()
    assert sagagraph(["workers", "--db", postgres_url, "--queue", queue, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [s["saga_id"] for s in summary["needs_operator"]] == [poison]
    assert "3 deliveries" in summary["needs_operator"][0]["why"]
    assert summary["finished"] == len(others)
    asyncio.run(delete_queues(queue_address(queue)))


def test_sigterm_finishes_the_sagas_in_flight_loses_none_and_exits_0(
    tmp_path: Path, postgres_url: str, amqp_url: str, readers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = unique_queue(amqp_url)
    count = 6
    papers = write_papers(tmp_path / "papers", count)
    outputs = tmp_path / "outputs"
    with counting_server(count, delay=1.0) as (server, model):
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-submitter")
        ids = submit(postgres_url, queue, outputs, papers, [None] * count, "openai")
        env = worker_env(server.base_url)
        first = WorkerProcess(worker_flags(postgres_url, queue, 3), cwd=tmp_path, env=env)
        wait_for(lambda: first.count("took saga") >= 3, timeout=60, what="three sagas taken")
        assert first.terminate() == 0, "\n".join(first.lines)
        taken = first.count("took saga")
        assert 3 <= taken < count
        # Every saga it took, it finished; none handed back, none lost, the rest still queued.
        assert first.count(" completed in ") == taken
        assert first.count("handed back to the queue") == 0
        left = [i for i in ids if saga_status(readers, i)["status"] == "queued"]
        assert len(left) == count - taken
        assert asyncio.run(queue_counts(queue_address(queue))).ready == count - taken
        second = WorkerProcess(worker_flags(postgres_url, queue, 3), cwd=tmp_path, env=env)
        wait_for(lambda: all_final(readers, ids), timeout=120, what="every saga final", every=0.5)
        assert second.terminate() == 0
    assert all(v["status"] == "completed" for v in views_of(readers, ids).values())
    # Nothing was killed: every step of every saga called the model exactly once.
    assert {key: len(calls) for key, calls in model.calls.items()} == {
        (i, step): 1 for i in range(count) for step in STEPS
    }
    asyncio.run(delete_queues(queue_address(queue)))


def test_a_second_sigterm_hands_the_sagas_in_flight_back_and_they_resume_elsewhere(
    tmp_path: Path, postgres_url: str, amqp_url: str, readers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = unique_queue(amqp_url)
    count = 2
    papers = write_papers(tmp_path / "papers", count)
    with counting_server(count, delay=1.0) as (server, model):
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-submitter")
        ids = submit(postgres_url, queue, tmp_path / "outputs", papers, [None] * count, "openai")
        env = worker_env(server.base_url)
        first = WorkerProcess(worker_flags(postgres_url, queue, 2), cwd=tmp_path, env=env)
        wait_for(lambda: first.count("took saga") == 2, timeout=60, what="both sagas taken")
        first.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: first.count("finishing 2 saga(s)"), timeout=30, what="the first stop")
        assert first.terminate() == 0, "\n".join(first.lines)
        assert first.count("handed back to the queue") == 2
        assert asyncio.run(queue_counts(queue_address(queue))).ready == 2
        second = WorkerProcess(worker_flags(postgres_url, queue, 2), cwd=tmp_path, env=env)
        wait_for(lambda: all_final(readers, ids), timeout=120, what="every saga final", every=0.5)
        assert second.terminate() == 0
        assert second.count("(delivery 2 of") == 2
    for index, saga_id in enumerate(ids):
        assert saga_status(readers, saga_id)["status"] == "completed"
        for step, committed_at in commit_times(readers, saga_id).items():
            assert all(t <= committed_at for t in model.calls[(index, step)]), (saga_id, step)
    asyncio.run(delete_queues(queue_address(queue)))
