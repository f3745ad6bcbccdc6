"""Async twins of :func:`~sagagraph.saga.execution.execute_step` and ``compensate_step``.

A saga run with ``ainvoke`` (see :mod:`sagagraph.graph.async_runner`) runs its steps here, so
hundreds of sagas can wait on their models at once in one process. A participant may define
``async def aexecute(ctx)`` and ``async def acompensate(ctx, result)``: they are awaited when
present. A participant with only the sync methods runs them on a thread of the step pool
(:data:`STEP_THREADS` threads), not on asyncio's default executor, whose ``min(32, cpus + 4)``
threads would make every saga beyond the first few wait for a free thread.

Retries, timeouts, events and the :class:`~sagagraph.saga.execution.StepAttempts` are the same as
on the sync path: a step behaves alike under ``invoke`` and ``ainvoke``.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from sagagraph.errors import StepTimeoutError
from sagagraph.saga.drivers import Returned, advance
from sagagraph.saga.execution import (
    AttemptLoop,
    Call,
    StepAttempts,
    Tried,
    Wait,
    abandon,
    attempt_span,
    collecting_events,
    compensate_attempts,
    execute_attempts,
    failed,
)
from sagagraph.saga.protocol import Step, StepContext, StepResult

T = TypeVar("T")

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


def _async_method(participant: object, name: str) -> Callable[..., Awaitable[Any]] | None:
    method = getattr(participant, name, None)
    return method if callable(method) else None


async def _execute_once(step: Step, ctx: StepContext) -> object:
    aexecute = _async_method(step.participant, "aexecute")
    if aexecute is not None:
        return await aexecute(ctx)
    return await run_in_step_thread(lambda: step.participant.execute(ctx))


async def _compensate_once(step: Step, ctx: StepContext, result: StepResult | None) -> None:
    acompensate = _async_method(step.participant, "acompensate")
    if acompensate is not None:
        await acompensate(ctx, result)
    else:
        await run_in_step_thread(lambda: step.participant.compensate(ctx, result))


# -- the async driver of the kernel's attempt loops --------------------------------------------


async def arun_attempts(
    loop: AttemptLoop,
    call: Callable[[StepContext], Awaitable[object]],
    *,
    timeout: float | None,
    what: str,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> StepAttempts:
    """Run an attempt loop on the event loop: the async twin of ``execution.run_attempts``.

    Cancellation, LangGraph's control flow and other ``BaseException`` pass
    through, leaving the step unfinished so that resuming runs it again.
    """
    request = advance(loop)
    while not isinstance(request, Returned):
        if isinstance(request, Wait):
            await sleep(request.seconds)
            request = advance(loop)
            continue
        with attempt_span(request):
            request = advance(loop, await _attempt(request, call, timeout, what))
    return request.value


async def _attempt(
    request: Call,
    call: Callable[[StepContext], Awaitable[object]],
    timeout: float | None,
    what: str,
) -> Tried:
    if request.injected is not None:
        return Tried(error=request.injected)
    try:
        with collecting_events(request.events):
            if timeout is None:
                value = await call(request.ctx)
            else:
                value = await await_with_timeout(partial(call, request.ctx), timeout, what)
    except Exception as error:  # interrupt() inside a step passes through ``failed``
        return failed(error)
    return Tried(value=value)


async def aexecute_step(
    step: Step,
    ctx: StepContext,
    *,
    inject_failure: bool = False,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> StepAttempts:
    """Run the step's ``aexecute`` (else ``execute`` on the step pool) with retries and timeout.

    Like :func:`~sagagraph.saga.execution.execute_step`: failures come back in the
    :class:`StepAttempts`; LangGraph's control flow (``interrupt()``), cancellation and other
    ``BaseException`` pass through, leaving the step unfinished so that resuming runs it again.
    """
    return await arun_attempts(
        execute_attempts(step, ctx, inject_failure=inject_failure),
        partial(_execute_once, step),
        timeout=step.timeout,
        what=f"step {step.name!r}",
        sleep=sleep,
    )


async def acompensate_step(
    step: Step,
    ctx: StepContext,
    result: StepResult | None,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> StepAttempts:
    """Run the step's ``acompensate`` (else ``compensate`` on the step pool) with its retries.

    Like :func:`~sagagraph.saga.execution.compensate_step`, failures come back in the
    :class:`StepAttempts`; ``BaseException`` and LangGraph's control flow pass through.
    """
    return await arun_attempts(
        compensate_attempts(step, ctx, result),
        lambda attempt_ctx: _compensate_once(step, attempt_ctx, result),
        timeout=step.compensation_timeout,
        what=f"compensation of step {step.name!r}",
        sleep=sleep,
    )
