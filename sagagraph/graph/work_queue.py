"""The work queue of sagas: one durable RabbitMQ quorum queue that workers consume.

A submitted saga is one persistent message (``{"saga_id": ...}``) on the queue named by the
queue URL (``amqp://user:pw@host/vhost?queue=NAME``; default name ``sagagraph.sagas``),
published with confirms. The saga's state lives in the checkpointer, not in the message, so
a message is only a claim ticket: any worker holding it resumes the saga from its last
checkpoint.

Poison work: RabbitMQ counts the deliveries of a quorum queue's message (a worker that dies
returns its unacknowledged messages, and that counts). After ``max_deliveries`` deliveries
(``?max_deliveries=N`` in the URL, default :data:`DEFAULT_MAX_DELIVERIES`) the message goes to
the dead-letter exchange ``NAME.dead`` and its queue ``NAME.dead``, where a worker records the
saga as needing an operator. Both limits are fixed when the queue is first declared: every
submitter and worker of one queue must use the same URL parameters.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from sagagraph.checkpoints.factory import _redact_text, redact_url
from sagagraph.errors import BusError, ConfigurationError, InputError
from sagagraph.saga.ids import validate_saga_id
from sagagraph.saga.view import describe_error

try:
    import aio_pika
    from aio_pika.abc import AbstractChannel, AbstractConnection, AbstractQueue
    from aio_pika.exceptions import CONNECTION_EXCEPTIONS
except ImportError:  # pragma: no cover - depends on installed extras
    raise ConfigurationError(
        "the work queue needs the extra: pip install 'sagagraph[rabbitmq]'"
    ) from None

QUEUE_ENV = "SAGAGRAPH_QUEUE"
"""Environment variable with the queue URL, when ``--queue`` is not given."""
DEFAULT_QUEUE_URL = "amqp://guest:guest@127.0.0.1:5672/"
DEFAULT_QUEUE_NAME = "sagagraph.sagas"
DEFAULT_MAX_DELIVERIES = 5
"""Deliveries of one saga before it is dead-lettered: a saga survives four dead workers."""
CONNECT_TIMEOUT = 10.0
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


@dataclass(frozen=True)
class QueueAddress:
    """Where the work queue is: the broker, the queue's name and its delivery limit."""

    connect_url: str
    """The broker URL without sagagraph's parameters (it may hold a password: never show it)."""
    shown: str
    """The URL with its password hidden, for messages and logs."""
    name: str
    """The queue's name; its dead letters go to ``<name>.dead``."""
    max_deliveries: int
    """Deliveries of one message before it is dead-lettered."""

    @property
    def dead_name(self) -> str:
        return f"{self.name}.dead"

    def error(self, what: str, error: BaseException) -> BusError:
        """One line naming the queue (password hidden), what failed and why."""
        cause = _redact_text(describe_error(error), self.connect_url)
        return BusError(f"queue {self.shown!r}: {what}: {cause}")


def queue_address(url: str | None = None) -> QueueAddress:
    """The queue a URL names (default: ``SAGAGRAPH_QUEUE``, else the local RabbitMQ)."""
    url = url or os.environ.get(QUEUE_ENV, "").strip() or DEFAULT_QUEUE_URL
    shown = redact_url(url)
    parts = urlsplit(url)
    if parts.scheme not in ("amqp", "amqps"):
        raise ConfigurationError(f"queue url {shown!r}: expected amqp://user:password@host/")
    name, max_deliveries, kept = DEFAULT_QUEUE_NAME, str(DEFAULT_MAX_DELIVERIES), []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key == "queue":
            name = value
        elif key == "max_deliveries":
            max_deliveries = value
        else:
            kept.append((key, value))
    if not _NAME.match(name):
        raise ConfigurationError(
            f"queue url {shown!r}: queue name {name!r} must be letters, digits, '_', '.' and '-'"
        )
    if not max_deliveries.isdigit() or int(max_deliveries) < 1:
        raise ConfigurationError(
            f"queue url {shown!r}: max_deliveries must be a whole number >= 1, "
            f"got {max_deliveries!r}"
        )
    connect_url = urlunsplit(parts._replace(query=urlencode(kept)))
    return QueueAddress(connect_url, shown, name, int(max_deliveries))


def encode_job(saga_id: str) -> bytes:
    return json.dumps({"saga_id": saga_id}).encode()


def decode_job(body: bytes) -> str:
    """The saga id a message carries; InputError for a message that is not a saga job."""
    try:
        job = json.loads(body)
        return validate_saga_id(job["saga_id"])
    except (ValueError, TypeError, KeyError) as error:
        raise InputError(f"not a saga job ({describe_error(error)}): {body[:80]!r}") from None


async def connect(address: QueueAddress) -> AbstractConnection:
    """A connection to the broker; BusError (one line, password hidden) when it fails.

    Not a robust connection: a worker that loses its broker stops (its unacknowledged
    messages go back to the queue), rather than carrying on with deliveries it cannot settle.
    """
    try:
        return await aio_pika.connect(address.connect_url, timeout=CONNECT_TIMEOUT)
    except TimeoutError:
        # The port may be open and the broker still silent (starting, overloaded, out of
        # sockets): say how long it was given instead of an empty TimeoutError.
        silent = TimeoutError(f"no answer from the broker within {CONNECT_TIMEOUT:g} s")
        raise address.error("cannot connect", silent) from None
    except (*CONNECTION_EXCEPTIONS, OSError) as error:
        raise address.error("cannot connect", error) from None


class Queues(NamedTuple):
    work: AbstractQueue
    """Where submitted sagas wait for a worker."""
    dead: AbstractQueue
    """Where sagas land after ``max_deliveries`` deliveries."""


async def declare(channel: AbstractChannel, address: QueueAddress) -> Queues:
    """Declare the work queue and its dead-letter queue (idempotent; arguments must agree)."""
    dead_exchange = await channel.declare_exchange(
        address.dead_name, aio_pika.ExchangeType.FANOUT, durable=True
    )
    dead = await channel.declare_queue(
        address.dead_name, durable=True, arguments={"x-queue-type": "quorum"}
    )
    await dead.bind(dead_exchange)
    arguments: dict[str, Any] = {
        "x-queue-type": "quorum",
        # RabbitMQ delivers a message x-delivery-limit + 1 times before dead-lettering it.
        "x-delivery-limit": address.max_deliveries - 1,
        "x-dead-letter-exchange": address.dead_name,
        # At-least-once dead-lettering: a saga is never dropped between the two queues.
        "x-dead-letter-strategy": "at-least-once",
        "x-overflow": "reject-publish",
    }
    work = await channel.declare_queue(address.name, durable=True, arguments=arguments)
    return Queues(work, dead)


class PublishError(BusError):
    """Publishing stopped part way: ``published`` says which sagas did reach the queue."""

    def __init__(self, message: str, published: list[str]) -> None:
        super().__init__(message)
        self.published = published


async def publish_jobs(address: QueueAddress, saga_ids: list[str]) -> list[str]:
    """Publish one persistent message per saga, each confirmed by the broker.

    Returns the ids published; PublishError on a failure, with the ids published so far.
    """
    published: list[str] = []
    try:
        async with await connect(address) as connection:
            channel = await connection.channel(publisher_confirms=True)
            await declare(channel, address)
            for saga_id in saga_ids:
                await channel.default_exchange.publish(
                    aio_pika.Message(
                        encode_job(saga_id),
                        content_type="application/json",
                        delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                        message_id=saga_id,
                    ),
                    routing_key=address.name,
                    mandatory=True,
                )
                published.append(saga_id)
    except BusError as error:
        raise PublishError(str(error), published) from None
    except Exception as error:
        raise PublishError(str(address.error("cannot publish", error)), published) from None
    return published


class QueueCounts(NamedTuple):
    ready: int
    """Messages waiting for a worker."""
    consumers: int
    """Workers consuming the queue now."""
    dead: int
    """Messages in the dead-letter queue not yet recorded by a worker."""


async def queue_counts(address: QueueAddress) -> QueueCounts:
    """What the broker says about the queue (declaring it if it does not exist yet)."""
    try:
        async with await connect(address) as connection:
            channel = await connection.channel()
            queues = await declare(channel, address)
            work = await queues.work.declare()
            dead = await queues.dead.declare()
    except BusError:
        raise
    except Exception as error:
        raise address.error("cannot read the queue", error) from None
    return QueueCounts(work.message_count or 0, work.consumer_count or 0, dead.message_count or 0)


async def delete_queues(address: QueueAddress) -> None:
    """Delete the work and dead-letter queues and the exchange (tests and benchmarks)."""
    async with await connect(address) as connection:
        channel = await connection.channel()
        await channel.queue_delete(address.name)
        await channel.queue_delete(address.dead_name)
        await channel.exchange_delete(address.dead_name)
