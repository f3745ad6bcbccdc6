"""Turns on the event loop: async sagas take turns for their engine work, not all at once.

When hundreds of sagas start together on one event loop, asyncio moves each of them forward
one ``await`` at a time, round robin. Every saga then finishes its bookkeeping (checkpoint,
routing, next step) only when all the others have finished theirs: they reach their model
calls together, wake together, and the run takes three model latencies *plus* all the
engine's work, end to end. With turns, at most :data:`DEFAULT_TURNS` sagas do engine work at
a time. A saga gives its turn back whenever it waits for its model, and a saga that has
started goes before one that has not: each saga then moves from one model call to the next without
queueing behind every other saga's bookkeeping, and the engine's work overlaps the model
latency instead of adding to it.

A turn is a scheduling hint, not a lock: nothing breaks when a saga works without one. Code
that runs outside :func:`saga_turn` (a graph invoked directly) is not gated at all.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar

DEFAULT_TURNS = 32
"""Sagas of one event loop that may do engine work at the same time."""


class _Turns:
    """A semaphore with two queues: sagas coming back from a wait go before new sagas."""

    def __init__(self, slots: int) -> None:
        self._free = slots
        self._returning: deque[asyncio.Future[None]] = deque()
        self._new: deque[asyncio.Future[None]] = deque()

    def try_acquire(self) -> bool:
        """Take a free slot when nobody queues for one; False when the caller must wait."""
        if self._free > 0 and not self._returning and not self._new:
            self._free -= 1
            return True
        return False

    async def acquire(self, *, returning: bool) -> None:
        if self.try_acquire():
            return
        slot: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._returning if returning else self._new
        queue.append(slot)
        try:
            await slot
        except asyncio.CancelledError:
            if slot.done() and not slot.cancelled():
                self.release()  # the slot was handed over as we were cancelled: pass it on
            elif slot in queue:
                queue.remove(slot)
            raise

    def release(self) -> None:
        """Hand the slot to the next waiter (returning sagas first), or free it."""
        for queue in (self._returning, self._new):
            while queue:
                slot = queue.popleft()
                if not slot.done():
                    slot.set_result(None)
                    return
        self._free += 1


_turns_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Turns] = (
    weakref.WeakKeyDictionary()
)


def _turns_of_this_loop() -> _Turns:
    loop = asyncio.get_running_loop()
    turns = _turns_by_loop.get(loop)
    if turns is None:
        turns = _turns_by_loop[loop] = _Turns(DEFAULT_TURNS)
    return turns


class _Turn:
    """One saga's hold on a turn, shared by every task its graph runs."""

    def __init__(self, turns: _Turns) -> None:
        self._turns = turns
        self._held = False
        self._started = False
        self._waiting = 0
        self._taking = asyncio.Lock()

    async def take(self) -> None:
        if not self._taking.locked():
            # Nothing below awaits when a slot is free: no other task of this saga can come
            # in between, so the lock is not needed (every attempt of every step takes a turn).
            if self._held or self._waiting:
                return
            if self._turns.try_acquire():
                self._held = self._started = True
                return
        # The lock keeps two tasks of one saga from taking two turns for it.
        async with self._taking:
            if not self._held and self._waiting == 0:
                await self._turns.acquire(returning=self._started)
                self._started = True
                if self._waiting:
                    # Another task of this saga started waiting (for a commit) while this
                    # one queued: holding the turn through that wait would leave the loop
                    # idle when every holder waits. Pass it on; the wait's end takes one.
                    self._turns.release()
                else:
                    self._held = True

    def give_back(self) -> None:
        if self._held:
            self._held = False
            self._turns.release()

    def start_waiting(self) -> None:
        self._waiting += 1
        self.give_back()

    async def stop_waiting(self) -> None:
        self._waiting -= 1
        if self._waiting == 0:
            await self.take()


_current: ContextVar[_Turn | None] = ContextVar("sagagraph_turn", default=None)


@asynccontextmanager
async def saga_turn() -> AsyncIterator[None]:
    """Run the block (one saga) in turns with the other sagas of this event loop."""
    if _current.get() is not None:
        yield  # already inside a saga's turn: a nested run shares it
        return
    turn = _Turn(_turns_of_this_loop())
    token = _current.set(turn)
    try:
        await turn.take()
        yield
    finally:
        _current.reset(token)
        turn.give_back()


class waiting_for_io:  # used as a function: ``async with waiting_for_io():``
    """Give the saga's turn to another saga while the block waits; take one back after.

    A class rather than an ``asynccontextmanager``: every attempt of every step enters one,
    and a generator-based context manager costs more than the turn itself.
    """

    __slots__ = ("_turn",)

    def __init__(self) -> None:
        self._turn = _current.get()

    async def __aenter__(self) -> None:
        if self._turn is not None:
            self._turn.start_waiting()

    async def __aexit__(self, *exc: object) -> None:
        if self._turn is not None:
            await self._turn.stop_waiting()
