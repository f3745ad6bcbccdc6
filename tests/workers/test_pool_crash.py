"""Worker processes killed mid-saga and mid-compensation, with 12 sagas in flight on two
workers: another worker finishes them all. Every saga ends completed with all its outputs or
rolled back with none, and no step commits twice or asks the model again once committed.

Real RabbitMQ and PostgreSQL; the paper pipeline through the real ``ChatOpenAI`` client
against a scripted server that records, per paper and step, when each request came.
"""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sagagraph.agents.paper_app import PAPER_APP, PaperSettings
from sagagraph.graph.runner import saga_status
from sagagraph.workers import SagaRequest, submit_sagas
from tests.support.queue_support import (
    DIE_EXIT_CODE,
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

STEPS = list(PAPER_FILES)
COUNT = 12


def test_killed_workers_lose_no_saga_and_repeat_no_committed_step(
    tmp_path: Path,
    postgres_url: str,
    amqp_url: str,
    readers: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queue = unique_queue(amqp_url, max_deliveries=5)
    papers = write_papers(tmp_path / "papers", COUNT)
    fail_at = ["summarizer" if i % 3 == 0 else None for i in range(COUNT)]
    ids = [f"crash-{tmp_path.name[-6:]}-{i:02d}" for i in range(COUNT)]
    outputs = tmp_path / "outputs"
    dies_compensating = ids[3]  # a saga whose summarizer fails: it compensates
    marker = tmp_path / "died-compensating"
    try:
        with counting_server(COUNT, delay=0.3) as (server, model):
            monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
            monkeypatch.setenv("OPENAI_API_KEY", "sk-test-submitter")
            settings = PaperSettings.resolve(outputs=str(outputs), llm="openai")
            recorded = settings.recorded()
            requests = [
                SagaRequest({"paper": str(p), "settings": recorded}, saga_id, f)
                for p, saga_id, f in zip(papers, ids, fail_at, strict=True)
            ]
            submit_sagas(requests, app=PAPER_APP, queue=queue, db=postgres_url)
            env = worker_env(server.base_url)
            flags = ["--db", postgres_url, "--queue", queue, "--concurrency", "3"]

            def start() -> WorkerProcess:
                die = f"{dies_compensating}:compensate:{marker}"
                return WorkerProcess(flags, cwd=tmp_path, env=env, die_once=die)

            workers = [start(), start()]
            started = list(workers)
            # Mid-saga: SIGKILL a worker while it holds sagas whose first step committed.
            wait_for(
                lambda: any(w.count("took saga") >= 2 for w in workers) and len(model.calls) >= 4,
                timeout=90,
                what="sagas in flight",
            )
            victim = next(w for w in workers if w.alive() and w.count("took saga") >= 2)
            victim.proc.send_signal(signal.SIGKILL)
            victim.reap()
            workers = [w for w in workers if w is not victim] + [start()]
            started.append(workers[-1])

            def settled() -> bool:
                for i, w in enumerate(workers):
                    if not w.alive():  # died mid-compensation: another takes its place
                        assert w.reap() == DIE_EXIT_CODE, "\n".join(w.lines)
                        workers[i] = start()
                        started.append(workers[i])
                views = [saga_status(readers, i)["status"] for i in ids]
                return all(s in ("completed", "rolled_back") for s in views)

            try:
                wait_for(settled, timeout=300, what="every saga final", every=0.5)
            finally:
                codes = [w.terminate() for w in workers]
            assert codes == [0] * len(workers)
    finally:
        delete_queue(queue)

    assert marker.exists(), "no worker died mid-compensation"
    # The kills hit work in flight: some saga came back to a worker a second time.
    assert any(w.count("(delivery 2 of") for w in started)
    for index, saga_id in enumerate(ids):
        view, why = saga_status(readers, saga_id), f"saga {saga_id} (fail_at {fail_at[index]})"
        if fail_at[index] is None:
            assert view["status"] == "completed", why
            assert files_of(outputs, saga_id) == sorted(PAPER_FILES.values()), why
            assert view["completed"] == STEPS, why
        else:
            assert view["status"] == "rolled_back", why
            assert files_of(outputs, saga_id) == [] and view["outputs"] == {}, why
            assert view["compensated"] == ["summarizer", "reviewer", "validator"], why
        # Each step committed once, and never asked the model again after it committed.
        committed = Counter(
            e["step"] for e in view["events"] if (e["action"], e["outcome"]) == ("execute", "ok")
        )
        assert all(n == 1 for n in committed.values()), (why, committed)
        for step, committed_at in commit_times(readers, saga_id).items():
            late = [t for t in model.calls[(index, step)] if t > committed_at]
            assert not late, f"{why}: {step} called the model after it committed"
        assert view["dead_letter"] is None, why
