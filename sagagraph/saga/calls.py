"""Calling a participant under a timeout: on this thread, or on the event loop.

Python cannot kill a thread, so a call given up on by its timeout runs on, abandoned: a late
write it makes is refused by the step's store, which remembers compensated keys, and
:func:`abandoned_calls` counts it until it ends. A sync participant of an async saga runs on
the step pool (:data:`STEP_THREADS` threads), not on asyncio's default executor, whose
``min(32, cpus + 4)`` threads would make every saga beyond the first few wait for a free thread.
Both paths run the call in a copy of the caller's context, so LangGraph's ``get_config()`` and
``interrupt()`` still work inside a step that has a timeout.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from sagagraph.errors import StepTimeoutError

T = TypeVar("T")

_abandoned: set[threading.Event] = set()
_abandoned_lock = threading.Lock()


def abandon(finished: threading.Event) -> None:
    """Count a call given up on (a step timed out) until ``finished`` is set."""
    with _abandoned_lock:
        for done in [d for d in _abandoned if d.is_set()]:
            _abandoned.discard(done)
        if not finished.is_set():
            _abandoned.add(finished)


def abandoned_calls() -> int:
    """How many calls given up on by a step timeout are still running.

    Such a call may hold a thread the interpreter joins at exit (LangChain runs model calls
    on a thread pool), so a process that exits normally waits for it: up to the HTTP
    client's own timeout, or for as long as a server holds the socket. A command that has
    decided its saga ends at once instead when this is not 0 (``os._exit``, see the CLI).
    """
    with _abandoned_lock:
        return sum(1 for done in _abandoned if not done.is_set())


def call_with_timeout(fn: Callable[[], T], timeout: float | None, what: str) -> T:
    """Run ``fn`` and fail with StepTimeoutError when it takes longer than ``timeout``.

    The call runs on a daemon thread that is abandoned on timeout: Python cannot kill a thread.
    A late write it makes is refused by the step's store, which remembers compensated keys;
    :func:`abandoned_calls` counts it until it ends.
    The thread runs in a copy of the caller's context, so LangGraph's ``get_config()`` and
    ``interrupt()`` still work inside a step that has a timeout.
    """
    if timeout is None:
        return fn()
    box: dict[str, object] = {}
    context = contextvars.copy_context()
    finished = threading.Event()

    def target() -> None:
        try:
            box["value"] = context.run(fn)
        except BaseException as e:  # carried to the caller's thread
            box["error"] = e
        finally:
            finished.set()

    worker = threading.Thread(target=target, name=f"sagagraph:{what}", daemon=True)
    worker.start()
    if not finished.wait(timeout):
        abandon(finished)
        raise StepTimeoutError(f"{what} did not finish within {timeout:g}s")
    worker.join()  # it has finished: only its last bookkeeping is left
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


STEP_THREADS = 512
"""Threads that run sync-only participants for async sagas: the sagas that can wait at once."""

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def step_pool() -> ThreadPoolExecutor:
    """The thread pool of sync-only participants (created on first use; threads start lazily)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(STEP_THREADS, thread_name_prefix="sagagraph-step")
        return _pool


async def run_in_step_thread(fn: Callable[[], T]) -> T:
    """Run ``fn`` on the step pool, in a copy of the caller's context.

    The copy carries LangGraph's context variables, so ``get_config()`` and ``interrupt()``
    work inside a sync step run from an async saga. A call whose awaiting is cancelled (its
    step timed out) runs on, counted by :func:`~sagagraph.saga.execution.abandoned_calls`
    until it ends: the pool's threads are joined when the interpreter exits.
    """
    context = contextvars.copy_context()
    finished = threading.Event()

    def run() -> T:
        try:
            return context.run(fn)
        finally:
            finished.set()

    submitted = step_pool().submit(run)
    try:
        return await asyncio.wrap_future(submitted)
    except asyncio.CancelledError:
        if not submitted.cancelled():  # it had started: it runs on, abandoned
            abandon(finished)
        raise


async def await_with_timeout(
    start: Callable[[], Awaitable[T]], timeout: float | None, what: str
) -> T:
    """Await ``start()``; StepTimeoutError when it takes longer than ``timeout`` seconds.

    A coroutine is cancelled at the deadline. A sync step on the step pool cannot be: its
    thread is abandoned, as on the sync path, and a late write it makes is refused by the
    step's store, which remembers compensated keys. A ``TimeoutError`` the step raises itself
    is a step error like any other, not this timeout.
    """
    if timeout is None:
        return await start()
    try:
        async with asyncio.timeout(timeout) as deadline:
            return await start()
    except TimeoutError:
        if deadline.expired():
            raise StepTimeoutError(f"{what} did not finish within {timeout:g}s") from None
        raise
