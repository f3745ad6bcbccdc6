"""``amqp://``: RabbitMQ as the bus, through aio-pika (the ``sagagraph[rabbitmq]`` extra).

Topology, for namespace ``N`` (``?namespace=N`` in the URL; default ``sagagraph``) and saga
type ``S``:

- ``N.S``: a durable topic exchange; routing key = event name (``validated``);
- ``N.S.<step>``: one durable quorum queue per agent, bound to its subscriptions, with a
  delivery limit: an event whose handler keeps failing goes to the dead-letter exchange;
- ``N.dead``: the dead-letter exchange (fanout) and queue;
- ``N.log``: a durable stream bound to every saga exchange with ``#``: the event log that
  ``status`` and ``events`` read, from any machine, without consuming anything.

Messages are persistent and published with confirms; an agent acknowledges a delivery only
after its ledger committed and its own events were confirmed. Each agent keeps its ledger (a
SQLite file) under ``state_dir``. aio-pika is used because it is maintained, typed, and keeps
the connection's heartbeats going while a slow step (a model call) runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from sagagraph.checkpoints.factory import redact_url
from sagagraph.choreography.bus import DEFAULT_MAX_DELIVERIES, Consumer, DeadLetter
from sagagraph.choreography.ledger import AgentLedger
from sagagraph.choreography.messages import SagaMessage, decode, encode
from sagagraph.choreography.topology import Choreography
from sagagraph.errors import BusError, ConfigurationError
from sagagraph.saga.view import describe_error

try:
    import aio_pika
    from aio_pika.abc import (
        AbstractChannel,
        AbstractExchange,
        AbstractIncomingMessage,
        AbstractQueue,
    )
    from aio_pika.exceptions import (
        CONNECTION_EXCEPTIONS,
        ChannelNotFoundEntity,
        ProbableAuthenticationError,
    )
except ImportError:  # pragma: no cover - depends on installed extras
    raise ConfigurationError(
        "the RabbitMQ bus needs the extra: pip install 'sagagraph[rabbitmq]'"
    ) from None

from sagagraph.choreography.amqp_support import (
    DEFAULT_NAMESPACE,
    check_amqp_url,
    peek_dead_letters,
    read_stream,
    run_sync,
    split_namespace,
)

log = logging.getLogger("sagagraph")
T = TypeVar("T")

__all__ = ["DEFAULT_NAMESPACE", "BrokerUnreachable", "RabbitBus", "split_namespace"]

DEFAULT_STATE_DIR = "sagagraph-agents"
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 60.0
RECONNECT_DELAY = 1.0
"""Seconds between two attempts to reach the broker again while waiting for a saga."""


class BrokerUnreachable(BusError):
    """The broker could not be reached, or the connection to it was lost (worth retrying)."""


class RabbitBus:
    """The event bus on a RabbitMQ broker."""

    retry_delay: float = 0.5
    """Seconds before a failed delivery goes back to its queue (slows a poison loop down)."""

    def __init__(self, url: str, *, state_dir: str | Path | None = None) -> None:
        check_amqp_url(url)
        self.namespace, self._connect_url = split_namespace(url)
        self._password = urlsplit(url).password
        self.url = redact_url(url)
        self.state_dir = Path(state_dir or os.environ.get("SAGAGRAPH_STATE") or DEFAULT_STATE_DIR)
        self._prepared: dict[str, Choreography] = {}

    # --- names --------------------------------------------------------------------------

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

    # --- plumbing -----------------------------------------------------------------------

    def _error(self, what: str, error: BaseException) -> BusError:
        text = describe_error(error)
        if self._password:
            text = text.replace(self._password, "***")
        return BrokerUnreachable(f"bus {self.url!r}: {what}: {text}")

    def _sync(self, what: str, make: Callable[[], Awaitable[T]]) -> T:
        try:
            return run_sync(make)
        except BusError:
            raise
        except (*CONNECTION_EXCEPTIONS, TimeoutError) as error:
            raise self._error(what, error) from None

    def _patiently(
        self, what: str, make: Callable[[float], Awaitable[T]], timeout: float,
        interrupt: threading.Event | None,
    ) -> T:  # fmt: skip
        """``make(seconds left)`` until it succeeds, reconnecting after a lost or refused
        connection (as the agents' robust connections do) until ``timeout`` runs out."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self._sync(what, lambda: make(max(0.0, deadline - time.monotonic())))
            except BrokerUnreachable as error:
                stopped = interrupt is not None and interrupt.is_set()
                if stopped or time.monotonic() + RECONNECT_DELAY >= deadline:
                    raise
                log.warning("%s; reconnecting in %gs", error, RECONNECT_DELAY)
                time.sleep(RECONNECT_DELAY)

    async def _read(
        self,
        saga_ids: Collection[str] | None,
        until: Callable[[list[SagaMessage]], bool] | None,
        timeout: float,
        interrupt: threading.Event | None,
        *,
        must_reach_end: bool,
    ) -> list[SagaMessage]:
        async with await self._connect() as connection:
            return await read_stream(
                connection,
                self.log_name,
                self.url,
                saga_ids,
                until,
                timeout,
                interrupt,
                must_reach_end=must_reach_end,
            )

    async def _connect(self, *, robust: bool = False) -> aio_pika.abc.AbstractConnection:
        connect = aio_pika.connect_robust if robust else aio_pika.connect
        try:
            return await connect(self._connect_url, timeout=CONNECT_TIMEOUT)
        except ProbableAuthenticationError:
            # Bad usage, not an outage: retrying cannot help, and the user must fix the URL.
            raise ConfigurationError(
                f"bus {self.url!r}: the broker refused the user name or password"
            ) from None
        except (*CONNECTION_EXCEPTIONS, TimeoutError) as error:
            raise self._error("cannot connect", error) from None

    async def _declare_common(self, channel: AbstractChannel, saga: str) -> AbstractExchange:
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

    async def _declare_consumer(
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

    async def _publish_on(
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

    # --- the bus ------------------------------------------------------------------------

    def prepare(self, choreography: Choreography) -> None:
        self._prepared[choreography.saga] = choreography

        async def declare() -> None:
            async with await self._connect() as connection:
                channel = await connection.channel()
                exchange = await self._declare_common(channel, choreography.saga)
                for role in choreography.roles:
                    name = f"{choreography.saga}.{role.name}"
                    await self._declare_consumer(channel, exchange, name, role.subscriptions)

        self._sync("cannot declare the saga's exchange and queues", declare)

    def publish(self, messages: Sequence[SagaMessage]) -> None:
        if not messages:
            return

        async def send() -> None:
            async with await self._connect() as connection:
                channel = await connection.channel(publisher_confirms=True)
                await self._publish_on(channel, {}, messages)

        self._sync("cannot publish", send)

    def serve(
        self, consumer: Consumer, stop: threading.Event, ready: threading.Event | None = None
    ) -> None:
        self._sync(
            f"agent {consumer.name} lost the broker", lambda: self._serve(consumer, stop, ready)
        )

    async def _serve(
        self, consumer: Consumer, stop: threading.Event, ready: threading.Event | None
    ) -> None:
        connection = await self._connect(robust=True)
        async with connection:
            channel = await connection.channel(publisher_confirms=True)
            await channel.set_qos(prefetch_count=1)
            exchange = await self._declare_common(channel, consumer.saga)
            queue = await self._declare_consumer(channel, exchange, consumer.name, consumer.topics)
            exchanges = {consumer.saga: exchange}
            idle = asyncio.Event()
            idle.set()

            async def on_message(incoming: AbstractIncomingMessage) -> None:
                idle.clear()
                try:
                    await self._deliver(channel, exchanges, consumer, incoming)
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
        self,
        channel: AbstractChannel,
        exchanges: dict[str, AbstractExchange],
        consumer: Consumer,
        incoming: AbstractIncomingMessage,
    ) -> None:
        try:
            message = decode(incoming.body)
        except BusError as error:
            log.error("agent %s: unreadable event dead-lettered: %s", consumer.name, error)
            await incoming.reject(requeue=False)
            return
        try:
            # The step runs in a worker thread so the connection's heartbeats go on meanwhile.
            outgoing = await asyncio.to_thread(consumer.handle, message)
            await self._publish_on(channel, exchanges, outgoing)
        except Exception as error:
            log.warning(
                "agent %s: event %s failed: %s", consumer.name, message["id"], describe_error(error)
            )
            await asyncio.sleep(self.retry_delay)
            await self._settle(incoming, ack=False)
            return
        await self._settle(incoming, ack=True)

    @staticmethod
    async def _settle(incoming: AbstractIncomingMessage, *, ack: bool) -> None:
        try:
            if ack:
                await incoming.ack()
            else:
                await incoming.nack(requeue=True)
        except CONNECTION_EXCEPTIONS as error:
            # The channel went away: the broker redelivers, and the ledger dedups.
            log.warning("could not settle event %s: %s", incoming.message_id, error)

    def listeners(self, consumer: str) -> int:
        async def count() -> int:
            async with await self._connect() as connection:
                channel = await connection.channel()
                try:
                    queue = await channel.declare_queue(self.queue_name(consumer), passive=True)
                except ChannelNotFoundEntity:
                    return 0
                result = queue.declaration_result
                return int(result.consumer_count or 0) if result is not None else 0

        return self._sync("cannot inspect the agent queues", count)

    def presence(self, consumer: str) -> AbstractContextManager[None]:
        """Nothing to do: the broker counts each queue's consumers itself."""
        return nullcontext()

    @contextmanager
    def ledger(self, consumer: str) -> Iterator[AgentLedger]:
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigurationError(
                f"agent state folder {self.state_dir}: cannot create it ({error.strerror})"
            ) from None
        path = self.state_dir / f"{self.namespace}.{consumer}.sqlite"
        with AgentLedger(path, consumer) as ledger:
            yield ledger

    def read_log(self, saga_ids: Collection[str] | None = None) -> list[SagaMessage]:
        return self._sync(
            "cannot read the event log",
            lambda: self._read(saga_ids, None, READ_TIMEOUT, None, must_reach_end=True),
        )

    def wait_log(
        self,
        saga_ids: Collection[str],
        until: Callable[[list[SagaMessage]], bool],
        timeout: float,
        interrupt: threading.Event | None = None,
    ) -> list[SagaMessage]:
        return self._patiently(
            "cannot read the event log",
            lambda left: self._read(saga_ids, until, left, interrupt, must_reach_end=False),
            timeout,
            interrupt,
        )

    def dead_letters(self) -> list[DeadLetter]:
        async def peek() -> list[DeadLetter]:
            async with await self._connect() as connection:
                return await peek_dead_letters(connection, self.dead_name, self.namespace)

        return self._sync("cannot read the dead-letter queue", peek)

    def delete(self, choreographies: Sequence[Choreography] = ()) -> None:
        """Delete this namespace's log, dead letters, and the exchanges and queues of the given
        sagas and of every saga prepared through this object.

        For tests and teardown; events still in the queues are lost.
        """
        known = {c.saga: c for c in self._prepared.values()}
        known.update({c.saga: c for c in choreographies})
        choreographies = list(known.values())

        async def drop() -> None:
            async with await self._connect() as connection:
                channel = await connection.channel()
                names = [self.log_name, self.dead_name] + [
                    self.queue_name(f"{c.saga}.{r.name}") for c in choreographies for r in c.roles
                ]
                for name in names:
                    await channel.queue_delete(name)
                for exchange in [self.dead_name] + [
                    self.exchange_name(c.saga) for c in choreographies
                ]:
                    await channel.exchange_delete(exchange)

        self._sync("cannot delete the topology", drop)

    def close(self) -> None:
        """Nothing held open between calls."""
