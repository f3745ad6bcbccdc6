"""Group commit: writes handed over while one commit runs gather, and the next commit carries them.

:class:`CommitBatches` is the queue and the flusher; what a commit does (one SQL transaction
holding every write of the batch) is the saver's. Each writer waits for the commit that holds
its rows, so a write is as durable when its call returns as it would be on its own.

When a batch fails, no writer learns of another's failure by accident: the batch's writes are
committed again one by one, each in its own commit, and each writer gets the outcome of its
own (its rows stored, or its own error). A writer cancelled meanwhile (a timeout) cancels only
its own wait; its rows stay in the batch. When the flusher itself is cancelled (the event loop
is closing), every writer still waiting is cancelled: none waits for a commit that never comes.

While a writer waits for its commit it is inside the scope :func:`wait_for_commits_in` set
(the async runner sets :func:`sagagraph.saga.loop_gate.waiting_for_io`, which this storage
layer cannot import): the saga gives its turn on the event loop to another saga meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Generic, TypeVar

log = logging.getLogger("sagagraph")

W = TypeVar("W")

WaitScope = Callable[[], AbstractAsyncContextManager[None]]
"""Makes the async context a writer waits for its commit in."""


class _NoScope:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


_wait_scope: WaitScope = _NoScope


def wait_for_commits_in(scope: WaitScope) -> None:
    """Have every writer of every batch wait for its commit inside ``scope()`` from now on.

    Without it, an async saga kept its turn while its checkpoint reached the disk: with every
    turn held by a saga waiting for the commit in flight, the event loop sat idle while other
    sagas queued for a turn (issue 18, docs/performance.md).
    """
    global _wait_scope
    _wait_scope = scope


class CommitBatches(Generic[W]):
    """Hands batches of writes (``W``) to ``commit``, one batch at a time, in arrival order."""

    def __init__(self, commit: Callable[[list[W]], Awaitable[None]], *, name: str) -> None:
        """``commit(batch)`` stores every write of ``batch`` in one transaction, or raises."""
        self._commit = commit
        self._name = name
        self._pending: list[tuple[W, asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self.commits = 0
        """Batches committed so far (one-by-one retries after a failed batch included)."""

    async def write(self, item: W) -> None:
        """Return once a commit holding ``item`` has returned; raise its error if it failed."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((item, done))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush(), name=self._name)
        async with _wait_scope():
            await done

    async def drain(self) -> None:
        """Wait until every write handed over so far is committed (or has failed)."""
        while self._flusher is not None and not self._flusher.done():
            await asyncio.shield(self._flusher)

    async def _flush(self) -> None:
        batch: list[tuple[W, asyncio.Future[None]]] = []
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                await self._commit_batch(batch)
        except asyncio.CancelledError as error:
            _settle(batch + self._pending, error)
            self._pending = []
            raise

    async def _commit_batch(self, batch: list[tuple[W, asyncio.Future[None]]]) -> None:
        try:
            await self._commit([item for item, _ in batch])
        except Exception as error:
            if len(batch) == 1:
                _settle(batch, error)
                return
            log.warning(
                "%s: commit of %d writes failed (%s); committing them one by one",
                self._name,
                len(batch),
                error,
            )
        else:
            self.commits += 1
            _settle(batch, None)
            return
        for entry in batch:
            try:
                await self._commit([entry[0]])
            except Exception as error:
                _settle([entry], error)
            else:
                self.commits += 1
                _settle([entry], None)


def _settle(batch: list[tuple[W, asyncio.Future[None]]], error: BaseException | None) -> None:
    for _, done in batch:
        if done.done():
            continue
        if error is None:
            done.set_result(None)
        elif isinstance(error, asyncio.CancelledError):
            done.cancel()
        else:
            done.set_exception(error)
