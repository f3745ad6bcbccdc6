"""The event bus: a dumb pipe that delivers events at least once and keeps a log of them.

Three backends share one protocol, chosen by URL with :func:`open_bus`:

- ``memory://``: one process, nothing kept (tests);
- ``sqlite:///path``: a durable append-only event log in one SQLite file, with a cursor per
  step service (the embedded default; step services may be separate processes on one machine);
- ``amqp://user:pass@host:5672/vhost``: RabbitMQ, services anywhere (needs ``sagagraph[rabbitmq]``).

With a deployment key (:mod:`.signing`) a bus signs every event it publishes, and its log
(:meth:`EventBus.read_log`, :meth:`EventBus.wait_log`) holds the authentic events only; it
still delivers every event to the step services, which refuse and record the unauthentic ones.

A bus never decides anything: services do. It delivers each event to every service subscribed to
its type, acknowledges it only after the service's handler returned and the handler's own events
are published, and sets aside (dead-letters) an event whose handler keeps failing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol, TypedDict

from sagagraph.choreography.ledger import StepLedger
from sagagraph.choreography.messages import SagaMessage
from sagagraph.choreography.signing import Authenticator
from sagagraph.choreography.topology import Choreography

Handler = Callable[[SagaMessage], list[SagaMessage]]
"""Reacts to one event; returns the events to publish before the delivery is acknowledged."""

Until = Callable[[list[SagaMessage]], bool]
"""A condition on the events read so far: :meth:`EventBus.wait_log` returns once it holds."""
StopEvent = threading.Event | None
"""Set by another thread to stop waiting at once (None: wait for the condition or the time)."""

DEFAULT_MAX_DELIVERIES = 5
"""Deliveries of one event whose handler raised before the event is dead-lettered."""


@dataclass(frozen=True)
class Consumer:
    """One step service as the bus sees it: a durable subscription and a handler."""

    name: str
    """Durable identity (``<saga>.<step>``): the queue name or the log cursor."""
    saga: str
    """Saga type whose events it hears."""
    topics: tuple[str, ...]
    """Event types it subscribes to."""
    handle: Handler
    """Runs the step service on one event."""
    max_deliveries: int = DEFAULT_MAX_DELIVERIES
    """After this many failed deliveries of one event, the event is dead-lettered. (RabbitMQ
    counts them itself: its queues are created with ``DEFAULT_MAX_DELIVERIES``.)"""


class DeadLetter(TypedDict):
    """An event set aside because its handler kept failing (or it could not be read)."""

    consumer: str
    event_id: str | None
    error: str
    body: str


class EventBus(Protocol):
    """What step services and runners need from a bus."""

    url: str
    """The bus URL with any password hidden."""
    authenticator: Authenticator
    """Signs what this bus publishes and checks what it reads (no key: neither)."""

    def prepare(self, choreography: Choreography) -> None:
        """Create what the saga's events need (exchanges, queues); idempotent."""
        ...

    def publish(self, messages: Sequence[SagaMessage]) -> None:
        """Sign the events (with a key) and append them durably; return once the bus has them."""
        ...

    def serve(
        self, consumer: Consumer, stop: threading.Event, ready: threading.Event | None = None
    ) -> None:
        """Deliver events to ``consumer`` until ``stop`` is set; sets ``ready`` once listening."""
        ...

    def listeners(self, consumer: str) -> int:
        """How many processes (``sagagraph agent``) consume as ``consumer`` right now."""
        ...

    def presence(self, consumer: str) -> AbstractContextManager[None]:
        """While open, this process counts as a listener of ``consumer`` (where the bus
        cannot count its consumers itself: the log backends)."""
        ...

    def ledger(self, consumer: str) -> AbstractContextManager[StepLedger]:
        """The durable inbox of ``consumer`` (processed ids, emitted events, saga states)."""
        ...

    def read_log(
        self, saga_ids: Collection[str] | None = None, *, unauthentic: bool = False
    ) -> list[SagaMessage]:
        """Authentic events of these sagas (all when None), in log order, each id once;
        ``unauthentic=True`` includes the unsigned and badly signed ones (to show them)."""
        ...

    def wait_log(
        self, saga_ids: Collection[str], until: Until, timeout: float, interrupt: StopEvent = None
    ) -> list[SagaMessage]:
        """Authentic events of these sagas once ``until(events)`` holds, or when time or
        patience ends."""
        ...

    def dead_letters(self) -> list[DeadLetter]:
        """Events set aside so far."""
        ...

    def close(self) -> None: ...
