"""The worker's closing summary counts the messages it dead-lettered (issue 28 item 10).

Five malformed messages on the work queue are each dead-lettered by the worker that takes
them (and dropped again from the dead-letter queue); the summary says 5 dead-lettered, not 0.
Real RabbitMQ and PostgreSQL, as in ``test_workers.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sagagraph.graph import work_queue
from sagagraph.graph.work_queue import publish_jobs, queue_address
from tests.workers.test_workers import env, queue, run_until  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.postgres, pytest.mark.rabbitmq]


def test_the_closing_summary_counts_malformed_messages_dead_lettered(
    env: dict[str, Any],  # noqa: F811 (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(work_queue, "encode_job", lambda saga_id: b"not a job " + saga_id.encode())
    ids = [f"bad{i}" for i in range(5)]
    assert asyncio.run(publish_jobs(queue_address(env["queue"]), ids)) == ids
    lines: list[str] = []

    def settled() -> bool:
        refused = sum("dead-lettering a message that is not a saga job" in x for x in lines)
        dropped = sum("dropping a dead letter that is not a saga job" in x for x in lines)
        return refused == 5 and dropped == 5

    tally = run_until(env, settled, say=lines.append)
    summary = lines[-1]
    assert summary.startswith("worker: stopped after 5 deliveries"), lines
    assert "; 5 dead-lettered" in summary, summary
    assert tally.taken == 5
