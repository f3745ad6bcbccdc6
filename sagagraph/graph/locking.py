"""A saga's semantic locks in orchestration: found from its store, taken by its steps,
released when it ends.

The lock table is the one of the store the saga's checkpoints live in, which the saga's
lease lends its steps (:func:`~sagagraph.checkpoints.savers.lent_checkpointer`), so every
process that drives the saga, after a crash included, sees the same locks. A step takes them
through ``ctx.lock(key)`` or declares them (``Step(locks=...)``), taken in sorted order before
its execute. The node that ends the saga (its last step, ``complete``, or the compensation
that finishes a rollback) releases them before its superstep is checkpointed: a crash in
between runs that node again, which releases again; no final saga keeps a lock.
"""

from __future__ import annotations

import threading
import weakref
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import Any

from sagagraph.checkpoints.locks import open_lock_table
from sagagraph.checkpoints.savers import lent_checkpointer
from sagagraph.saga.locks import LockRecord, LockTable, MemoryLockTable, SagaLocks, declared_keys
from sagagraph.saga.protocol import Participant, Step, StepContext, StepResult

_tables: weakref.WeakKeyDictionary[Any, LockTable] = weakref.WeakKeyDictionary()
_tables_mutex = threading.Lock()


def lock_table_for(checkpointer: Any) -> LockTable:
    """The lock table of the store ``checkpointer`` keeps its sagas in, opened once per saver
    (on a connection of its own, closed when the saver is gone); for a saver whose database
    cannot be told (memory), a table of this process."""
    with _tables_mutex:
        with suppress(KeyError, TypeError):
            return _tables[checkpointer]
        table: LockTable = open_lock_table(checkpointer) or MemoryLockTable()
        with suppress(TypeError):
            _tables[checkpointer] = table
        return table


def saga_locks(saga_id: str) -> SagaLocks | None:
    """The saga's handle on its store's lock table; None when no checkpointer is lent."""
    checkpointer = lent_checkpointer(saga_id)
    if checkpointer is None:
        return None
    return SagaLocks(lock_table_for(checkpointer), saga_id)


def release_locks(saga_id: str) -> int:
    """Release every lock the saga holds (it has ended); how many it held."""
    locks = saga_locks(saga_id)
    return locks.release() if locks is not None else 0


def release_saga_locks(checkpointer: Any, saga_id: str) -> int:
    """Release the locks ``saga_id`` holds in ``checkpointer``'s store (recovery's sweep)."""
    return lock_table_for(checkpointer).release_saga(saga_id)


def held_locks(checkpointer: Any, saga_id: str | None = None) -> list[LockRecord]:
    """The locks ``saga_id`` holds in ``checkpointer``'s store (every lock when None)."""
    return lock_table_for(checkpointer).held(saga_id)


@dataclass(frozen=True)
class _Locking:
    """A participant that takes its step's declared locks before it executes."""

    inner: Participant[Any]
    step: Step[Any]

    @property
    def name(self) -> str:
        return self.inner.name

    def execute(self, ctx: StepContext[Any]) -> StepResult:
        for key in declared_keys(self.step.locks, dict(ctx.input)):
            ctx.lock(key, on_busy=self.step.on_busy, timeout=self.step.lock_timeout)
        return self.inner.execute(ctx)

    def compensate(self, ctx: StepContext[Any], result: StepResult | None) -> None:
        self.inner.compensate(ctx, result)


def locking(step: Step[Any]) -> Step[Any]:
    """``step``, taking its declared locks first when it declares any."""
    if not step.locks:
        return step
    return replace(step, participant=_Locking(step.participant, step))
