"""A worker pool that loses its PostgreSQL or its RabbitMQ connections mid-run: every saga
still ends completed with all its outputs, and no step commits twice. Real RabbitMQ and
PostgreSQL; the workers reach the one being cut through a proxy that cuts every connection
for a while (the submitter and the readers reach both directly)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from sagagraph.agents.paper_app import PAPER_APP, PaperSettings
from sagagraph.graph.runner import saga_status
from sagagraph.workers import SagaRequest, submit_sagas
from tests.support.queue_support import (
    PAPER_FILES,
    WorkerProcess,
    counting_server,
    delete_queue,
    files_of,
    unique_queue,
    wait_for,
    worker_env,
    write_papers,
)
from tests.support.tcp_proxy import TcpProxy, through

pytestmark = [pytest.mark.postgres, pytest.mark.rabbitmq, pytest.mark.slow]
COUNT = 6


@pytest.mark.parametrize("lost", ["database", "broker"])
def test_a_pool_that_loses_a_service_mid_run_finishes_every_saga_once(
    lost: str,
    tmp_path: Path,
    postgres_url: str,
    amqp_url: str,
    readers: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cut_url, default_port = (postgres_url, 5432) if lost == "database" else (amqp_url, 5672)
    port = urlsplit(cut_url).port or default_port
    queue = unique_queue(amqp_url, max_deliveries=10)
    papers = write_papers(tmp_path / "papers", COUNT)
    ids = [f"{lost[:2]}cut-{tmp_path.name[-6:]}-{i:02d}" for i in range(COUNT)]
    outputs = tmp_path / "outputs"
    try:
        with counting_server(COUNT, delay=0.3) as (server, model), TcpProxy(port) as proxy:
            monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
            monkeypatch.setenv("OPENAI_API_KEY", "sk-test-submitter")
            recorded = PaperSettings.resolve(outputs=str(outputs), llm="openai").recorded()
            requests = [
                SagaRequest({"paper": str(p), "settings": recorded}, i)
                for p, i in zip(papers, ids, strict=True)
            ]
            submit_sagas(requests, app=PAPER_APP, queue=queue, db=postgres_url)
            if lost == "database":
                flags = ["--db", through(postgres_url, proxy.port), "--queue", queue]
            else:
                flags = ["--db", postgres_url, "--queue", through(queue, proxy.port)]
            workers = [
                WorkerProcess(
                    [*flags, "--concurrency", "3"], cwd=tmp_path, env=worker_env(server.base_url)
                )
                for _ in range(2)
            ]
            wait_for(lambda: len(model.calls) >= 3, timeout=90, what="sagas in flight")
            proxy.cut(4.0)  # every connection of the pool to that service is cut, mid-step
            if lost == "broker":
                # Again once the first redeliveries run beside the tasks still running: their
                # second delivery finds the saga busy and hands it back through the broker.
                wait_for(lambda: len(model.calls) >= 2 * COUNT, timeout=90, what="later steps")
                proxy.cut(3.0)

            def settled() -> bool:
                views = [saga_status(readers, i)["status"] for i in ids]
                return all(s in ("completed", "rolled_back") for s in views)

            try:
                wait_for(settled, timeout=150, what="every saga final", every=0.5)
            except AssertionError:
                views = {i: saga_status(readers, i) for i in ids}
                print({i: (v["status"], v["completed"], v.get("reason")) for i, v in views.items()})
                for w in workers:
                    print("alive", w.alive(), "\n".join(w.lines[-25:]))
                raise
            finally:
                lines = [line for w in workers for line in w.lines]
                codes = [w.terminate() for w in workers]
            assert proxy.cuts > 0
            assert codes == [0, 0], "\n".join(lines[-40:])
    finally:
        delete_queue(queue)
    for saga_id in ids:
        view = saga_status(readers, saga_id)
        assert view["status"] == "completed", (saga_id, view["status"], view["reason"])
        assert files_of(outputs, saga_id) == sorted(PAPER_FILES.values()), saga_id
        committed = Counter(
            e["step"] for e in view["events"] if (e["action"], e["outcome"]) == ("execute", "ok")
        )
        assert all(n == 1 for n in committed.values()), (saga_id, committed)
