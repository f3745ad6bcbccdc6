"""One step service consuming its queue on RabbitMQ: each event handled in a worker thread, its own
events published with confirms, and the delivery acknowledged only after both."""

from __future__ import annotations

import asyncio
import logging
import threading

from aio_pika.abc import (
    AbstractChannel,
    AbstractConnection,
    AbstractExchange,
    AbstractIncomingMessage,
)
from aio_pika.exceptions import CONNECTION_EXCEPTIONS

from sagagraph.choreography.bus import Consumer
from sagagraph.choreography.messages import decode
from sagagraph.choreography.rabbitmq_topology import RabbitTopology
from sagagraph.errors import BusError
from sagagraph.saga.view import describe_error

log = logging.getLogger("sagagraph")


async def consume(
    connection: AbstractConnection,
    topology: RabbitTopology,
    consumer: Consumer,
    stop: threading.Event,
    ready: threading.Event | None,
    retry_delay: float,
) -> None:
    """Deliver ``consumer``'s events until ``stop`` is set; ``retry_delay`` seconds pass
    before a failed delivery goes back to the queue."""
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        await channel.set_qos(prefetch_count=1)
        exchange = await topology.declare_common(channel, consumer.saga)
        queue = await topology.declare_consumer(channel, exchange, consumer.name, consumer.topics)
        exchanges = {consumer.saga: exchange}
        idle = asyncio.Event()
        idle.set()

        async def on_message(incoming: AbstractIncomingMessage) -> None:
            idle.clear()
            try:
                await _deliver(channel, topology, exchanges, consumer, incoming, retry_delay)
            finally:
                idle.set()

        tag = await queue.consume(on_message, no_ack=False)
        if ready is not None:
            ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.05)
        await queue.cancel(tag)
        # Let the event being handled finish and be acknowledged before closing.
        await idle.wait()


async def _deliver(
    channel: AbstractChannel,
    topology: RabbitTopology,
    exchanges: dict[str, AbstractExchange],
    consumer: Consumer,
    incoming: AbstractIncomingMessage,
    retry_delay: float,
) -> None:
    try:
        message = decode(incoming.body)
    except BusError as error:
        log.error("step service %s: unreadable event dead-lettered: %s", consumer.name, error)
        await incoming.reject(requeue=False)
        return
    try:
        # The step runs in a worker thread so the connection's heartbeats go on meanwhile.
        outgoing = await asyncio.to_thread(consumer.handle, message)
        await topology.publish_on(channel, exchanges, outgoing)
    except Exception as error:
        log.warning(
            "step service %s: event %s failed: %s",
            consumer.name,
            message["id"],
            describe_error(error),
        )
        await asyncio.sleep(retry_delay)
        await _settle(incoming, ack=False)
        return
    await _settle(incoming, ack=True)


async def _settle(incoming: AbstractIncomingMessage, *, ack: bool) -> None:
    try:
        if ack:
            await incoming.ack()
        else:
            await incoming.nack(requeue=True)
    except CONNECTION_EXCEPTIONS as error:
        # The channel went away: the broker redelivers, and the ledger dedups.
        log.warning("could not settle event %s: %s", incoming.message_id, error)
