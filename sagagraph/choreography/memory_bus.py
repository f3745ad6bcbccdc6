"""``memory://``: the event log in this process's memory. Nothing survives the process.

Events are stored encoded, exactly as the durable backends store them, so a test on this bus
catches a result that would not survive the trip through JSON.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager

from sagagraph.choreography.bus import Consumer, DeadLetter
from sagagraph.choreography.ledger import StepLedger
from sagagraph.choreography.log_bus import Entry, LogBus
from sagagraph.choreography.messages import SagaMessage
from sagagraph.choreography.signing import Authenticator


class MemoryBus(LogBus):
    """An in-memory event log; step services in threads of this process share it."""

    poll_interval = (
        0.05  # publishers wake step services at once; the interval bounds how long stop takes
    )

    def __init__(self, authenticator: Authenticator | None = None) -> None:
        self.url = "memory://"
        self.authenticator = authenticator or Authenticator(None)
        self._changed = threading.Condition()
        self._log: list[tuple[SagaMessage, bytes]] = []
        self._ids: set[str] = set()
        self._cursors: dict[str, int] = {}
        self._failures: dict[tuple[str, int], int] = {}
        self._dead: list[DeadLetter] = []
        self._ledgers: dict[str, StepLedger] = {}
        self._beats: dict[str, tuple[str, float]] = {}

    def _append(self, messages: Sequence[tuple[SagaMessage, bytes]]) -> None:
        with self._changed:
            for message, body in messages:
                if message["id"] not in self._ids:
                    self._ids.add(message["id"])
                    self._log.append((message, body))
            self._changed.notify_all()

    def _fetch(self, consumer: Consumer, after: int, limit: int) -> list[Entry]:
        with self._changed:
            entries = [
                (i + 1, body)
                for i, (m, body) in enumerate(self._log[after:], start=after)
                if m["saga"] == consumer.saga and m["type"] in consumer.topics
            ]
        return entries[:limit]

    def _entries(self, saga_ids: Collection[str] | None) -> list[bytes]:
        with self._changed:
            return [b for m, b in self._log if saga_ids is None or m["saga_id"] in saga_ids]

    def cursor(self, consumer: str) -> int:
        with self._changed:
            return self._cursors.get(consumer, 0)

    def _set_cursor(self, consumer: str, position: int) -> None:
        with self._changed:
            self._cursors[consumer] = position

    def _count_failure(self, consumer: str, position: int) -> int:
        with self._changed:
            key = (consumer, position)
            self._failures[key] = self._failures.get(key, 0) + 1
            return self._failures[key]

    def _dead_letter(self, letter: DeadLetter) -> None:
        with self._changed:
            self._dead.append(letter)

    def dead_letters(self) -> list[DeadLetter]:
        with self._changed:
            return list(self._dead)

    def _beat(self, consumer: str, token: str, alive: bool) -> None:
        with self._changed:
            if alive:
                self._beats[token] = (consumer, time.time())
            else:
                self._beats.pop(token, None)

    def _present(self, consumer: str, since: float) -> int:
        with self._changed:
            return sum(c == consumer and t >= since for c, t in self._beats.values())

    def _wait_for_news(self, stop: threading.Event, timeout: float) -> None:
        with self._changed:
            if not stop.is_set():
                self._changed.wait(timeout)

    @contextmanager
    def ledger(self, consumer: str) -> Iterator[StepLedger]:
        # Kept for the life of the bus, so a step service restarted in this process remembers.
        with self._changed:
            if consumer not in self._ledgers:
                self._ledgers[consumer] = StepLedger(":memory:", consumer)
            ledger = self._ledgers[consumer]
        yield ledger

    def close(self) -> None:
        with self._changed:
            for ledger in self._ledgers.values():
                ledger.close()
            self._ledgers.clear()
            self._changed.notify_all()
