"""What the memory and SQLite backends share: an append-only log read through per-service cursors.

A step service's cursor is the position of the last event it finished with. Its loop reads the
events after the cursor that it subscribes to, hands each to the handler, publishes what the
handler returned, and only then moves the cursor: a crash in between delivers the event again
(at-least-once), and the step service's ledger makes the second delivery harmless.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager

from sagagraph.choreography.bus import Consumer, DeadLetter, StopEvent, Until
from sagagraph.choreography.messages import SagaMessage, decode, encode
from sagagraph.choreography.signing import Authenticator
from sagagraph.choreography.topology import Choreography
from sagagraph.errors import BusError
from sagagraph.saga.view import describe_error

log = logging.getLogger("sagagraph")

PRESENCE_BEAT = 1.0
"""Seconds between two presence beats of a step service process."""
PRESENCE_TIMEOUT = 10.0
"""A step service that has not beaten for this long no longer counts as listening."""

Entry = tuple[int, bytes]
"""A log position and the event's encoded body."""


class LogBus(ABC):
    """An event bus over an append-only log; subclasses store the log."""

    url: str
    authenticator: Authenticator = Authenticator(None)
    poll_interval: float = 0.05
    """Seconds an idle step service waits before it looks at the log again."""
    retry_delay: float = 0.2
    """Seconds before a failed delivery is tried again."""

    # --- storage, provided by each backend --------------------------------------------

    @abstractmethod
    def _append(self, messages: Sequence[tuple[SagaMessage, bytes]]) -> None:
        """Append events, ignoring any whose id is already in the log."""

    @abstractmethod
    def _fetch(self, consumer: Consumer, after: int, limit: int) -> list[Entry]:
        """Entries after position ``after`` that ``consumer`` subscribes to, oldest first."""

    @abstractmethod
    def _entries(self, saga_ids: Collection[str] | None) -> list[bytes]:
        """Bodies of these sagas' events (all when None), in log order."""

    @abstractmethod
    def cursor(self, consumer: str) -> int:
        """Position of the last event ``consumer`` finished with (0: none)."""

    @abstractmethod
    def _set_cursor(self, consumer: str, position: int) -> None: ...

    @abstractmethod
    def _count_failure(self, consumer: str, position: int) -> int:
        """Record one more failed delivery of the entry at ``position``; return the total."""

    @abstractmethod
    def _dead_letter(self, letter: DeadLetter) -> None: ...

    @abstractmethod
    def _beat(self, consumer: str, token: str, alive: bool) -> None:
        """Record (``alive``) or remove the presence of listener ``token`` of ``consumer``."""

    @abstractmethod
    def _present(self, consumer: str, since: float) -> int:
        """Listeners of ``consumer`` whose last beat is at or after ``since`` (epoch seconds)."""

    @abstractmethod
    def _wait_for_news(self, stop: threading.Event, timeout: float) -> None:
        """Return when something may have been appended, ``stop`` is set, or time is up."""

    # --- the bus ------------------------------------------------------------------------

    def prepare(self, choreography: Choreography) -> None:
        """Nothing to create: every step service reads the one log."""
        return None

    def publish(self, messages: Sequence[SagaMessage]) -> None:
        if messages:
            sealed = [self.authenticator.seal(m) for m in messages]
            self._append([(m, encode(m)) for m in sealed])

    def listeners(self, consumer: str) -> int:
        """Step service processes that announced themselves (:meth:`presence`) and beat recently.

        A log does not know who reads it, so step services say so themselves; one killed without
        cleanup stops counting ``PRESENCE_TIMEOUT`` seconds after its last beat.
        """
        return self._present(consumer, time.time() - PRESENCE_TIMEOUT)

    @contextmanager
    def presence(self, consumer: str) -> Iterator[None]:
        token = uuid.uuid4().hex
        stop = threading.Event()
        self._beat(consumer, token, True)

        def beat() -> None:
            while not stop.wait(PRESENCE_BEAT):
                try:
                    self._beat(consumer, token, True)
                except Exception as error:  # a missed beat is not worth stopping the step service
                    log.warning("step service %s: presence not recorded: %s", consumer, error)

        beater = threading.Thread(target=beat, name=f"sagagraph:presence:{consumer}", daemon=True)
        beater.start()
        try:
            yield
        finally:
            stop.set()
            beater.join()
            self._beat(consumer, token, False)

    def serve(
        self, consumer: Consumer, stop: threading.Event, ready: threading.Event | None = None
    ) -> None:
        position = self.cursor(consumer.name)
        if ready is not None:
            ready.set()
        while not stop.is_set():
            batch = self._fetch(consumer, position, 100)
            if not batch:
                self._wait_for_news(stop, self.poll_interval)
                continue
            for entry_position, body in batch:
                if stop.is_set():
                    return
                if not self._deliver(consumer, entry_position, body, stop):
                    break  # failed; read again from the cursor after a pause
                position = entry_position

    def _deliver(
        self, consumer: Consumer, position: int, body: bytes, stop: threading.Event
    ) -> bool:
        """Handle one entry; True when the cursor moved past it."""
        try:
            message = decode(body)
        except BusError as error:
            self._give_up(consumer, position, None, body, str(error))
            return True
        try:
            self.publish(consumer.handle(message))
        except Exception as error:
            failures = self._count_failure(consumer.name, position)
            log.warning(
                "step service %s: event %s failed (delivery %d of %d): %s",
                consumer.name,
                message["id"],
                failures,
                consumer.max_deliveries,
                describe_error(error),
            )
            if failures >= consumer.max_deliveries:
                self._give_up(consumer, position, message["id"], body, describe_error(error))
                return True
            stop.wait(self.retry_delay)
            return False
        self._set_cursor(consumer.name, position)
        return True

    def _give_up(
        self, consumer: Consumer, position: int, event_id: str | None, body: bytes, error: str
    ) -> None:
        log.error("step service %s: event %s dead-lettered: %s", consumer.name, event_id, error)
        self._dead_letter(
            {
                "consumer": consumer.name,
                "event_id": event_id,
                "error": error,
                "body": body.decode(errors="replace"),
            }
        )
        self._set_cursor(consumer.name, position)

    def read_log(
        self, saga_ids: Collection[str] | None = None, *, unauthentic: bool = False
    ) -> list[SagaMessage]:
        messages: list[SagaMessage] = []
        for body in self._entries(saga_ids):
            try:
                message = decode(body)
            except BusError as error:
                log.warning("event log: unreadable entry skipped: %s", error)
                continue
            if unauthentic or self.authenticator.check(message) is None:
                messages.append(message)
        return messages

    def wait_log(
        self, saga_ids: Collection[str], until: Until, timeout: float, interrupt: StopEvent = None
    ) -> list[SagaMessage]:
        deadline = time.monotonic() + timeout
        stop = interrupt if interrupt is not None else threading.Event()
        while True:
            messages = self.read_log(saga_ids)
            remaining = deadline - time.monotonic()
            if until(messages) or remaining <= 0 or stop.is_set():
                return messages
            self._wait_for_news(stop, min(remaining, self.poll_interval))
