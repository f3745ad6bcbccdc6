"""A genuine signed event copied verbatim into another log that shares the key (issue 38,
item 3): the signature binds the event to its log (a SQLite log's id, a RabbitMQ namespace),
so the second log refuses it. Agents of the second deployment (real processes) start nothing
and touch no file of the first's."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from sagagraph.agents.paper_saga import PAPER_SAGA
from sagagraph.choreography.buses import open_bus
from sagagraph.choreography.runner import start_choreographed_saga, wait_for_sagas
from sagagraph.choreography.topology import derive_choreography
from tests.choreography.test_choreography_processes import agent_processes
from tests.support.choreo_saga import PAPER_STEPS, file_saga

KEY = "a-deployment-key-shared-by-two-logs"


def namespace(url: str) -> str:
    return parse_qs(urlsplit(url).query)["namespace"][0]


def rows(path: Path) -> list[tuple[str, str, str, str, bytes]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(
            "SELECT id, saga, saga_id, type, body FROM bus_events ORDER BY position"
        ).fetchall()


def test_a_signed_event_copied_into_another_log_is_refused_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGAGRAPH_BUS_KEY", KEY)
    monkeypatch.delenv("SAGAGRAPH_BUS_KEY_FILE", raising=False)
    first = tmp_path / "first"
    first.mkdir()
    with agent_processes("sqlite", first) as (agents, bus):
        for step in PAPER_STEPS:
            agents.start(step)
        start_choreographed_saga(file_saga(agents.root), {}, "copied", bus)
        done = wait_for_sagas(bus, ["copied"], timeout=60)
        assert done["copied"]["status"] == "completed", agents.logs()
        kept = sorted(p.name for p in (agents.root / "copied").iterdir())
        submitted = next(r for r in rows(Path(agents.url.removeprefix("sqlite:///"))))
    second = tmp_path / "second"
    second.mkdir()
    with agent_processes("sqlite", second) as (others, other_bus):
        other_bus.read_log()  # the log exists, with its own id
        with closing(sqlite3.connect(others.url.removeprefix("sqlite:///"))) as conn, conn:
            conn.execute(
                "INSERT INTO bus_events (id, saga, saga_id, type, body, published_at) "
                "VALUES (?, ?, ?, ?, ?, 'now')",
                submitted,
            )
        assert other_bus.read_log() == []  # not genuine here
        for step in PAPER_STEPS:
            others.start(step, env={"SAGAGRAPH_BUS_KEY": KEY})
        # A saga started there after the copy completes: the agents kept going past it.
        start_choreographed_saga(file_saga(others.root), {}, "own", other_bus)
        assert wait_for_sagas(other_bus, ["own"], timeout=60)["own"]["status"] == "completed"
        assert [m["saga_id"] for m in other_bus.read_log() if m["saga_id"] == "copied"] == []
    assert sorted(p.name for p in (agents.root / "copied").iterdir()) == kept
    assert not (others.root / "copied").exists()
    with closing(open_bus(agents.url)) as reopened:
        assert {m["saga_id"] for m in reopened.read_log()} == {"copied"}


async def _stream_copy(url: str, log_name: str) -> tuple[str, bytes, dict[str, Any]]:
    """The first event of a namespace's log stream as the broker holds it: its routing key,
    body (signed) and properties."""
    import aio_pika  # the rabbitmq extra: only this test needs it
    from aio_pika.abc import AbstractIncomingMessage

    connection = await aio_pika.connect(url.split("?", 1)[0])
    async with connection:
        channel = await connection.channel()
        await channel.set_qos(prefetch_count=10)
        stream = await channel.declare_queue(log_name, passive=True)
        inbox: asyncio.Queue[AbstractIncomingMessage] = asyncio.Queue()
        await stream.consume(inbox.put, arguments={"x-stream-offset": "first"})
        first = await asyncio.wait_for(inbox.get(), timeout=30)
        properties = {
            "content_type": first.content_type,
            "message_id": first.message_id,
            "type": first.type,
            "headers": dict(first.headers or {}),
        }
        return str(first.routing_key), first.body, properties


async def _publish_copy(
    url: str, exchange_name: str, copied: tuple[str, bytes, dict[str, Any]]
) -> None:
    import aio_pika

    routing_key, body, properties = copied
    connection = await aio_pika.connect(url.split("?", 1)[0])
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        exchange = await channel.get_exchange(exchange_name)
        message = aio_pika.Message(
            body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT, **properties
        )
        await exchange.publish(message, routing_key=routing_key)


@pytest.mark.rabbitmq
def test_a_signed_event_copied_into_another_rabbitmq_namespace_is_refused_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The RabbitMQ bus's signature binds an event to its namespace: the first deployment's
    genuine start event, published verbatim (body and properties) onto the second's saga
    exchange, starts nothing there; both namespaces are deleted afterwards."""
    from sagagraph.choreography.rabbitmq_topology import RabbitTopology

    monkeypatch.setenv("SAGAGRAPH_BUS_KEY", KEY)
    monkeypatch.delenv("SAGAGRAPH_BUS_KEY_FILE", raising=False)
    first = tmp_path / "first"
    first.mkdir()
    with agent_processes("amqp", first) as (agents, bus):
        for step in PAPER_STEPS:
            agents.start(step)
        start_choreographed_saga(file_saga(agents.root), {}, "copied", bus)
        done = wait_for_sagas(bus, ["copied"], timeout=60)
        assert done["copied"]["status"] == "completed", agents.logs()
        kept = sorted(p.name for p in (agents.root / "copied").iterdir())
        copied = asyncio.run(
            _stream_copy(agents.url, RabbitTopology(namespace(agents.url)).log_name)
        )
        assert copied[2]["headers"]["saga_id"] == "copied"
        second = tmp_path / "second"
        second.mkdir()
        with agent_processes("amqp", second) as (others, other_bus):
            # Its exchange and queues exist before the copy lands, as a running deployment's do.
            other_bus.prepare(derive_choreography(file_saga(others.root)))
            theirs = RabbitTopology(namespace(others.url))
            asyncio.run(_publish_copy(others.url, theirs.exchange_name(PAPER_SAGA), copied))
            assert [m for m in other_bus.read_log() if m["saga_id"] == "copied"] == []
            for step in PAPER_STEPS:
                others.start(step, env={"SAGAGRAPH_BUS_KEY": KEY})
            # A saga started there after the copy completes: the agents kept going past it.
            start_choreographed_saga(file_saga(others.root), {}, "own", other_bus)
            assert wait_for_sagas(other_bus, ["own"], timeout=60)["own"]["status"] == "completed"
            assert [m["saga_id"] for m in other_bus.read_log() if m["saga_id"] == "copied"] == []
            assert not (others.root / "copied").exists()
        assert sorted(p.name for p in (agents.root / "copied").iterdir()) == kept
        assert {m["saga_id"] for m in bus.read_log()} == {"copied"}
