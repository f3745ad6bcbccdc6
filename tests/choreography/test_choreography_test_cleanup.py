"""The tests' own clean-up: a test's RabbitMQ namespace does not outlive the test.

Agents in other processes declare the paper saga's queues; the test process's bus never
prepared them, so deleting only what it prepared left three queues and an exchange a test
(about 70 a run of the suite) on the broker the suite shares with everything else.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aio_pika
import pytest
from aio_pika.exceptions import ChannelNotFoundEntity

from sagagraph.choreography.buses import open_bus
from sagagraph.choreography.topology import derive_choreography
from tests.support.choreo_buses import cleaned_up, unique_amqp_url
from tests.support.choreo_saga import file_saga
from tests.support.services import require_rabbitmq

pytestmark = pytest.mark.rabbitmq


async def queues_present(url: str, names: list[str]) -> list[str]:
    present = []
    async with await aio_pika.connect(url) as connection:
        for name in names:
            channel = await connection.channel()
            try:
                await channel.declare_queue(name, passive=True)
                present.append(name)
            except ChannelNotFoundEntity:
                pass
    return present


def test_queues_another_process_declared_are_deleted_with_the_tests_namespace(
    tmp_path: Path,
) -> None:
    base = require_rabbitmq()
    url = unique_amqp_url(base)
    choreography = derive_choreography(file_saga(tmp_path / "saga"))
    elsewhere = open_bus(url, state_dir=tmp_path / "elsewhere")
    elsewhere.prepare(choreography)  # as an agent process does
    names = [
        elsewhere.topology.queue_name(f"{choreography.saga}.{r.name}")  # type: ignore[attr-defined]
        for r in choreography.roles
    ]
    elsewhere.close()
    assert asyncio.run(queues_present(base, names)) == names

    with cleaned_up(url, tmp_path):
        pass

    assert asyncio.run(queues_present(base, names)) == []
