"""Semantic locks: a saga marks a shared resource as its own until the saga ends.

A saga is not isolated: between its steps, other sagas see what it committed so far. A step
that touches a resource other sagas contend for (the last seat of a flight) takes a lock on
the resource's key (``ctx.lock("seat:SG-101:12A")``, or ``Step(locks=...)``); the lock stays
with the saga until it completes or finishes compensating, so no other saga acts on a booking
that may yet be undone (a dirty read) or overwrites it (a lost update).

Another saga asking for a held key does what its step chose (:data:`LockMode`): ``wait`` (up
to a timeout, then :class:`~sagagraph.errors.LockTimeoutError`), ``fail`` at once
(:class:`~sagagraph.errors.LockBusyError`), or ``pending``: it proceeds, told who holds the
resource (:class:`LockGrant`), and decides for itself (show the seat as pending, say).

Deadlocks are detected, not prevented: a saga about to wait records which key it waits for,
and when the holder of that key waits, directly or through others, for a key this saga holds,
one saga of the cycle, the one with the greatest id, fails its wait with
:class:`~sagagraph.errors.DeadlockError` (never retried); the others keep waiting and get their
keys once it compensates. A
step's declared locks are taken in sorted order, so two steps declaring the same keys never
deadlock each other.

The kernel holds the rules; where locks are stored is a :class:`LockTable`: in memory here,
in the saga store's own tables (SQLite, PostgreSQL) in :mod:`sagagraph.checkpoints.locks`.
The same table keeps, until the saga ends, a mark for each gated tool call an operator
approved, written before the call runs (:meth:`SagaLocks.note_approved`): a call rejected
later ran only if it was approved once (its approving process died before the result was
checkpointed), so only then may its effect need undoing (or, when it cannot be undone,
reporting to an operator).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol, TypedDict, runtime_checkable

from sagagraph.errors import ConfigurationError, DeadlockError, LockBusyError, LockTimeoutError

LockMode = Literal["wait", "fail", "pending"]
"""What a step does when another saga holds the key: wait for it, fail at once, or proceed
seeing the resource as pending."""
LOCK_MODES: tuple[LockMode, ...] = ("wait", "fail", "pending")

DEFAULT_LOCK_TIMEOUT = 30.0
"""Seconds a step waits for a held key by default."""
POLL_SECONDS = 0.02
"""How often a waiting step looks again: locks live in a table, not behind a notification."""


class LockRecord(TypedDict):
    """One held lock, as the view shows it."""

    key: str
    saga_id: str
    step: str
    since: str


@runtime_checkable
class LockTable(Protocol):
    """Where locks are kept: one row per held key, one per waiting saga."""

    def try_acquire(self, key: str, saga_id: str, step: str) -> str | None:
        """Take ``key`` for ``saga_id``; None when it is the saga's now (or was already),
        else the id of the saga that holds it."""
        ...

    def holder(self, key: str) -> str | None:
        """The saga that holds ``key``, None when it is free."""
        ...

    def release_saga(self, saga_id: str) -> int:
        """Release every key ``saga_id`` holds (and its wait); how many keys it held."""
        ...

    def release(self, key: str, saga_id: str, step: str) -> bool:
        """Release ``key`` when ``saga_id`` holds it under the name ``step`` (the one that took
        it); True when it did. A key taken under another name stays."""
        ...

    def held(self, saga_id: str | None = None) -> list[LockRecord]:
        """The locks ``saga_id`` holds (every lock when None), by key."""
        ...

    def set_waiting(self, saga_id: str, key: str | None) -> None:
        """Record that ``saga_id`` waits for ``key`` (None: it waits for nothing)."""
        ...

    def waiting_for(self, saga_id: str) -> str | None:
        """The key ``saga_id`` waits for, None when it waits for nothing."""
        ...

    def note_approved(self, call: str, saga_id: str) -> None:
        """Record, durably, that the tool call keyed ``call`` was approved and may run now
        (kept until :meth:`release_saga`)."""
        ...

    def approved(self, call: str) -> bool:
        """True when the tool call keyed ``call`` was approved (it may have run)."""
        ...


class MemoryLockTable:
    """Locks of one process, for in-memory checkpointers and tests."""

    def __init__(self) -> None:
        self._locks: dict[str, LockRecord] = {}
        self._waits: dict[str, str] = {}
        self._approved: dict[str, str] = {}
        self._mutex = threading.Lock()

    def try_acquire(self, key: str, saga_id: str, step: str) -> str | None:
        with self._mutex:
            record = self._locks.setdefault(
                key, {"key": key, "saga_id": saga_id, "step": step, "since": _now()}
            )
            return None if record["saga_id"] == saga_id else record["saga_id"]

    def holder(self, key: str) -> str | None:
        with self._mutex:
            record = self._locks.get(key)
            return record["saga_id"] if record else None

    def release_saga(self, saga_id: str) -> int:
        with self._mutex:
            keys = [k for k, r in self._locks.items() if r["saga_id"] == saga_id]
            for key in keys:
                del self._locks[key]
            self._waits.pop(saga_id, None)
            for call in [c for c, s in self._approved.items() if s == saga_id]:
                del self._approved[call]
            return len(keys)

    def release(self, key: str, saga_id: str, step: str) -> bool:
        with self._mutex:
            record = self._locks.get(key)
            if record is None or (record["saga_id"], record["step"]) != (saga_id, step):
                return False
            del self._locks[key]
            return True

    def held(self, saga_id: str | None = None) -> list[LockRecord]:
        with self._mutex:
            records = [dict(r) for k, r in sorted(self._locks.items())]
        return [r for r in records if saga_id is None or r["saga_id"] == saga_id]  # type: ignore[misc]

    def set_waiting(self, saga_id: str, key: str | None) -> None:
        with self._mutex:
            if key is None:
                self._waits.pop(saga_id, None)
            else:
                self._waits[saga_id] = key

    def waiting_for(self, saga_id: str) -> str | None:
        with self._mutex:
            return self._waits.get(saga_id)

    def note_approved(self, call: str, saga_id: str) -> None:
        with self._mutex:
            self._approved[call] = saga_id

    def approved(self, call: str) -> bool:
        with self._mutex:
            return call in self._approved


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True)
class LockGrant:
    """What ``ctx.lock`` returns: whether the saga holds the key now, and who does."""

    key: str
    holder: str
    """The saga that holds the key: this one, or (``pending``) another."""
    held: bool
    """True when this saga holds the key."""

    @property
    def pending(self) -> bool:
        """True when another saga holds the resource: it is pending, not free."""
        return not self.held


Sleep = Callable[[float], None]


@dataclass(frozen=True)
class SagaLocks:
    """One saga's handle on a lock table: what a step's context takes locks through."""

    table: LockTable
    saga_id: str

    def acquire(
        self,
        key: str,
        step: str,
        *,
        on_busy: LockMode = "wait",
        timeout: float = DEFAULT_LOCK_TIMEOUT,
        sleep: Sleep = time.sleep,
    ) -> LockGrant:
        """Take ``key`` for this saga, doing what ``on_busy`` says when another saga holds it."""
        if on_busy not in LOCK_MODES:
            raise ConfigurationError(f"lock {key!r}: on_busy must be one of {LOCK_MODES}")
        if not isinstance(key, str) or not key:
            raise ConfigurationError(f"lock key: expected a non-empty string, got {key!r}")
        holder = self.table.try_acquire(key, self.saga_id, step)
        if holder is None:
            return LockGrant(key, self.saga_id, True)
        if on_busy == "pending":
            return LockGrant(key, holder, False)
        if on_busy == "fail":
            raise LockBusyError(f"lock {key!r}: held by saga {holder!r}")
        deadline = time.monotonic() + timeout
        self.table.set_waiting(self.saga_id, key)
        try:
            while holder is not None:
                self._refuse_cycle(key, holder)
                if time.monotonic() >= deadline:
                    raise LockTimeoutError(
                        f"lock {key!r}: held by saga {holder!r} for more than {timeout:g} s"
                    )
                sleep(POLL_SECONDS)
                holder = self.table.try_acquire(key, self.saga_id, step)
        finally:
            self.table.set_waiting(self.saga_id, None)
        return LockGrant(key, self.saga_id, True)

    def _refuse_cycle(self, key: str, holder: str) -> None:
        """DeadlockError when ``holder`` waits, through a chain of sagas, for this saga, and
        this saga is the one of the cycle that gives up: the one with the greatest id.

        Every saga of a cycle waits, and looks at every poll, so each finds the same cycle;
        were each to give up on finding it, two sagas closing a cycle at the same moment
        would both give up. One victim named by the cycle itself leaves the others waiting:
        they get their keys once the victim compensates and releases."""
        seen = {self.saga_id}
        chain = [self.saga_id, holder]
        while holder not in seen:
            seen.add(holder)
            wanted = self.table.waiting_for(holder)
            next_holder = self.table.holder(wanted) if wanted is not None else None
            if next_holder is None:
                return
            holder = next_holder
            chain.append(holder)
        if holder == self.saga_id and self.saga_id == max(chain):
            raise DeadlockError(
                f"lock {key!r}: deadlock between sagas {' -> '.join(chain)}; this one gives up"
            )

    def release(self) -> int:
        """Release every key the saga holds (its end: completed, or compensated)."""
        return self.table.release_saga(self.saga_id)

    def release_key(self, key: str, step: str) -> bool:
        """Release ``key`` before the saga ends, when the saga took it under the name ``step``
        (a tool call whose effect was undone: nothing of the saga needs the resource now)."""
        return self.table.release(key, self.saga_id, step)

    def held(self) -> list[LockRecord]:
        """The keys the saga holds now."""
        return self.table.held(self.saga_id)

    def note_approved(self, call: str) -> None:
        """Mark the tool call keyed ``call`` approved, before it runs (until the saga ends)."""
        self.table.note_approved(call, self.saga_id)

    def approved(self, call: str) -> bool:
        """True when the tool call keyed ``call`` was approved once: it may have run."""
        return self.table.approved(call)


def declared_keys(templates: tuple[str, ...], input: object) -> list[str]:
    """A step's declared lock keys, each template filled in from the saga's input
    (``"seat:{flight}:{seat}"``), sorted: one order of acquisition for every step."""
    values = input if isinstance(input, dict) else {}
    keys = set()
    for template in templates:
        try:
            keys.add(template.format_map(values))
        except (KeyError, IndexError, ValueError) as error:
            raise ConfigurationError(
                f"lock key {template!r}: cannot be filled from the saga's input ({error})"
            ) from None
    return sorted(keys)
