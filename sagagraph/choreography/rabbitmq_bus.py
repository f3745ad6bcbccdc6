"""``amqp://``: RabbitMQ as the bus, through aio-pika (the ``sagagraph[rabbitmq]`` extra).

Topology, for namespace ``N`` (``?namespace=N`` in the URL; default ``sagagraph``) and saga
type ``S``:

- ``N.S``: a durable topic exchange; routing key = event name (``validated``);
- ``N.S.<step>``: one durable quorum queue per step service, bound to its subscriptions, with a
  delivery limit: an event whose handler keeps failing goes to the dead-letter exchange;
- ``N.dead``: the dead-letter exchange (fanout) and queue;
- ``N.log``: a durable stream bound to every saga exchange with ``#``: the event log that
  ``status`` and ``events`` read, from any machine, without consuming anything.

Messages are persistent and published with confirms; a step service acknowledges a delivery only
after its ledger committed and its own events were confirmed. Each step service keeps its ledger (a
SQLite file) under ``state_dir``. aio-pika is used because it is maintained, typed, and keeps
the connection's heartbeats going while a slow step (a model call) runs in a worker thread.

The names and declarations live in :mod:`.rabbitmq_topology`, a step service's consuming loop in
:mod:`.rabbitmq_consumer`; this module holds the connection handling and the bus protocol.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from sagagraph.checkpoints.urls import redact_url
from sagagraph.choreography.bus import Consumer, DeadLetter, StopEvent, Until
from sagagraph.choreography.ledger import StepLedger
from sagagraph.choreography.messages import SagaMessage
from sagagraph.choreography.signing import Authenticator
from sagagraph.choreography.topology import Choreography
from sagagraph.errors import BusError, ConfigurationError
from sagagraph.saga.view import describe_error

try:
    import aio_pika
    from aio_pika.abc import AbstractConnection
    from aio_pika.exceptions import (
        CONNECTION_EXCEPTIONS,
        ChannelNotFoundEntity,
        ProbableAuthenticationError,
    )
except ImportError:  # pragma: no cover - depends on installed extras
    raise ConfigurationError(
        "the RabbitMQ bus needs the extra: make extra EXTRA=rabbitmq, in the checkout"
    ) from None

from sagagraph.choreography.amqp_support import (
    DEFAULT_NAMESPACE,
    check_amqp_url,
    peek_dead_letters,
    read_stream,
    run_sync,
    split_namespace,
)
from sagagraph.choreography.rabbitmq_consumer import consume
from sagagraph.choreography.rabbitmq_topology import RabbitTopology

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

    def __init__(
        self,
        url: str,
        *,
        state_dir: str | Path | None = None,
        authenticator: Authenticator | None = None,
    ) -> None:
        check_amqp_url(url)
        self.namespace, self._connect_url = split_namespace(url)
        # Signatures bind events to this namespace: a copy into another is badly signed there.
        unbound = authenticator or Authenticator(None)
        self.authenticator = unbound.bound_to(f"rabbitmq-namespace:{self.namespace}")
        self.topology = RabbitTopology(self.namespace)
        self._password = urlsplit(url).password
        self.url = redact_url(url)
        self.state_dir = Path(state_dir or os.environ.get("SAGAGRAPH_STATE") or DEFAULT_STATE_DIR)
        self._prepared: dict[str, Choreography] = {}

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
        self, what: str, make: Callable[[float], Awaitable[T]], timeout: float, interrupt: StopEvent
    ) -> T:
        """``make(seconds left)`` until it succeeds, reconnecting after a lost or refused
        connection (as the step services' robust connections do) until ``timeout`` runs out."""
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

    async def _connected(self, use: Callable[[AbstractConnection], Awaitable[T]]) -> T:
        """``use`` on a connection of its own, closed after."""
        async with await self._connect() as connection:
            return await use(connection)

    def _on_connection(self, what: str, use: Callable[[AbstractConnection], Awaitable[T]]) -> T:
        """``use`` on a connection of its own, from sync code; broker errors say ``what``."""
        return self._sync(what, lambda: self._connected(use))

    async def _connect(self, *, robust: bool = False) -> AbstractConnection:
        connect = aio_pika.connect_robust if robust else aio_pika.connect
        try:
            return await connect(self._connect_url, timeout=CONNECT_TIMEOUT)
        except ProbableAuthenticationError:
            # Bad usage, not an outage: retrying cannot help, and the user must fix the URL.
            raise ConfigurationError(
                f"bus {self.url!r}: the broker refused the user name or password"
            ) from None
        except TimeoutError:
            # The port may be open and the broker still silent: say how long it was given.
            silent = TimeoutError(f"no answer from the broker within {CONNECT_TIMEOUT:g} s")
            raise self._error("cannot connect", silent) from None
        except CONNECTION_EXCEPTIONS as error:
            raise self._error("cannot connect", error) from None

    # --- the bus ------------------------------------------------------------------------

    def prepare(self, choreography: Choreography) -> None:
        self._prepared[choreography.saga] = choreography

        async def declare(connection: AbstractConnection) -> None:
            channel = await connection.channel()
            exchange = await self.topology.declare_common(channel, choreography.saga)
            for role in choreography.roles:
                name = f"{choreography.saga}.{role.name}"
                await self.topology.declare_consumer(channel, exchange, name, role.subscriptions)

        self._on_connection("cannot declare the saga's exchange and queues", declare)

    def publish(self, messages: Sequence[SagaMessage]) -> None:
        if not messages:
            return

        sealed = [self.authenticator.seal(m) for m in messages]

        async def send(connection: AbstractConnection) -> None:
            channel = await connection.channel(publisher_confirms=True)
            await self.topology.publish_on(channel, {}, sealed)

        self._on_connection("cannot publish", send)

    def serve(
        self, consumer: Consumer, stop: threading.Event, ready: threading.Event | None = None
    ) -> None:
        self._sync(
            f"step service {consumer.name} lost the broker",
            lambda: self._serve(consumer, stop, ready),
        )

    async def _serve(
        self, consumer: Consumer, stop: threading.Event, ready: threading.Event | None
    ) -> None:
        connection = await self._connect(robust=True)
        await consume(connection, self.topology, consumer, stop, ready, self.retry_delay)

    def listeners(self, consumer: str) -> int:
        async def count(connection: AbstractConnection) -> int:
            channel = await connection.channel()
            try:
                queue = await channel.declare_queue(
                    self.topology.queue_name(consumer), passive=True
                )
            except ChannelNotFoundEntity:
                return 0
            result = queue.declaration_result
            return int(result.consumer_count or 0) if result is not None else 0

        return self._on_connection("cannot inspect the step service queues", count)

    def presence(self, consumer: str) -> AbstractContextManager[None]:
        """Nothing to do: the broker counts each queue's consumers itself."""
        return nullcontext()

    @contextmanager
    def ledger(self, consumer: str) -> Iterator[StepLedger]:
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigurationError(
                f"step service state folder {self.state_dir}: cannot create it ({error.strerror})"
            ) from None
        path = self.state_dir / f"{self.namespace}.{consumer}.sqlite"
        with StepLedger(path, consumer) as ledger:
            yield ledger

    def read_log(
        self, saga_ids: Collection[str] | None = None, *, unauthentic: bool = False
    ) -> list[SagaMessage]:
        read = self._log_reader(saga_ids, None, None, must_reach_end=True, unauthentic=unauthentic)
        return self._sync("cannot read the event log", lambda: read(READ_TIMEOUT))

    def wait_log(
        self, saga_ids: Collection[str], until: Until, timeout: float, interrupt: StopEvent = None
    ) -> list[SagaMessage]:
        read = self._log_reader(saga_ids, until, interrupt, must_reach_end=False)
        return self._patiently("cannot read the event log", read, timeout, interrupt)

    def _log_reader(
        self,
        saga_ids: Collection[str] | None,
        until: Until | None,
        interrupt: StopEvent,
        *,
        must_reach_end: bool,
        unauthentic: bool = False,
    ) -> Callable[[float], Awaitable[list[SagaMessage]]]:
        """Reads the log stream for at most the seconds it is given, on its own connection;
        authentic events only, unless ``unauthentic``."""
        check = None if unauthentic else self.authenticator.check

        def read(seconds: float) -> Awaitable[list[SagaMessage]]:
            return self._connected(
                lambda connection: read_stream(
                    connection,
                    self.topology.log_name,
                    self.url,
                    saga_ids,
                    until,
                    seconds,
                    interrupt,
                    must_reach_end=must_reach_end,
                    check=check,
                )
            )

        return read

    def dead_letters(self) -> list[DeadLetter]:
        return self._on_connection(
            "cannot read the dead-letter queue",
            lambda connection: peek_dead_letters(
                connection, self.topology.dead_name, self.namespace
            ),
        )

    def delete(self, choreographies: Sequence[Choreography] = ()) -> None:
        """Delete this namespace's log, dead letters, and the exchanges and queues of the given
        sagas and of every saga prepared through this object.

        For tests and teardown; events still in the queues are lost.
        """
        known = {c.saga: c for c in self._prepared.values()}
        known.update({c.saga: c for c in choreographies})
        choreographies = list(known.values())

        async def drop(connection: AbstractConnection) -> None:
            await self.topology.delete(await connection.channel(), choreographies)

        self._on_connection("cannot delete the topology", drop)

    def close(self) -> None:
        """Nothing held open between calls."""
