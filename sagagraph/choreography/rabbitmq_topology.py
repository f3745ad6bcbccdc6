"""The exchanges and queues of one bus namespace on RabbitMQ: their names, their declaration,
publishing events onto them, and deleting them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractExchange, AbstractQueue

from sagagraph.choreography.bus import DEFAULT_MAX_DELIVERIES
from sagagraph.choreography.messages import SagaMessage, encode
from sagagraph.choreography.topology import Choreography


@dataclass(frozen=True)
class RabbitTopology:
    """Names and declarations under ``namespace`` (see :mod:`.rabbitmq_bus` for the layout)."""

    namespace: str

    def exchange_name(self, saga: str) -> str:
        return f"{self.namespace}.{saga}"

    def queue_name(self, consumer: str) -> str:
        return f"{self.namespace}.{consumer}"

    @property
    def log_name(self) -> str:
        return f"{self.namespace}.log"

    @property
    def dead_name(self) -> str:
        return f"{self.namespace}.dead"

    async def declare_common(self, channel: AbstractChannel, saga: str) -> AbstractExchange:
        exchange = await channel.declare_exchange(
            self.exchange_name(saga), aio_pika.ExchangeType.TOPIC, durable=True
        )
        log_queue = await channel.declare_queue(
            self.log_name, durable=True, arguments={"x-queue-type": "stream"}
        )
        await log_queue.bind(exchange, "#")
        dead = await channel.declare_exchange(
            self.dead_name, aio_pika.ExchangeType.FANOUT, durable=True
        )
        dead_queue = await channel.declare_queue(self.dead_name, durable=True)
        await dead_queue.bind(dead)
        return exchange

    async def declare_consumer(
        self, channel: AbstractChannel, exchange: AbstractExchange, name: str, topics: Sequence[str]
    ) -> AbstractQueue:
        queue = await channel.declare_queue(
            self.queue_name(name),
            durable=True,
            arguments={
                "x-queue-type": "quorum",
                # The limit is fixed when the queue is created; every declaration must agree.
                "x-delivery-limit": DEFAULT_MAX_DELIVERIES,
                "x-dead-letter-exchange": self.dead_name,
            },
        )
        for topic in topics:
            await queue.bind(exchange, topic)
        return queue

    async def publish_on(
        self,
        channel: AbstractChannel,
        exchanges: dict[str, AbstractExchange],
        messages: Sequence[SagaMessage],
    ) -> None:
        for message in messages:
            saga = message["saga"]
            if saga not in exchanges:
                exchanges[saga] = await channel.get_exchange(self.exchange_name(saga))
            await exchanges[saga].publish(
                aio_pika.Message(
                    encode(message),
                    content_type="application/json",
                    delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                    message_id=message["id"],
                    type=message["type"],
                    headers={"saga_id": message["saga_id"], "saga": saga},
                ),
                routing_key=message["type"],
            )

    async def delete(
        self, channel: AbstractChannel, choreographies: Sequence[Choreography]
    ) -> None:
        """The log, the dead letters, and the exchanges and queues of ``choreographies``."""
        names = [self.log_name, self.dead_name] + [
            self.queue_name(f"{c.saga}.{r.name}") for c in choreographies for r in c.roles
        ]
        for name in names:
            await channel.queue_delete(name)
        for exchange in [self.dead_name] + [self.exchange_name(c.saga) for c in choreographies]:
            await channel.exchange_delete(exchange)
