"""Async twins of :func:`~sagagraph.agents.execution.execute_step` and ``compensate_step``.

A saga run with ``ainvoke`` (see :mod:`sagagraph.graph.async_runner`) runs its steps here, so
hundreds of sagas can wait on their models at once in one process. A participant may define
``async def aexecute(ctx)`` and ``async def acompensate(ctx, result)``: they are awaited when
present. A participant with only the sync methods runs them on a thread of the step pool
(:data:`STEP_THREADS` threads), not on asyncio's default executor, whose ``min(32, cpus + 4)``
threads would make every saga beyond the first few wait for a free thread.

Retries, timeouts, events and the :class:`~sagagraph.agents.execution.Outcome` are the same as
on the sync path: a step behaves alike under ``invoke`` and ``ainvoke``. While a participant
runs, its saga gives its turn on the event loop to another (:mod:`sagagraph.agents.loop_gate`).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from langgraph.errors import GraphBubbleUp

from sagagraph.agents.execution import (
    Outcome,
    checked_result,
    collecting_events,
    injected_failure,
    record_compensate_error,
    record_compensate_ok,
    record_execute_error,
    record_execute_result,
    with_attempt,
)
from sagagraph.agents.loop_gate import waiting_for_io
from sagagraph.agents.protocol import Step, StepContext, StepResult
from sagagraph.errors import StepTimeoutError

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
    work inside a sync step run from an async saga.
    """
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(step_pool(), context.run, fn)


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


# -- the async twins ---------------------------------------------------------------------------


async def aexecute_step(
    step: Step,
    ctx: StepContext,
    *,
    inject_failure: bool = False,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> Outcome:
    """Run the step's ``aexecute`` (else ``execute`` on the step pool) with retries and timeout.

    Like :func:`~sagagraph.agents.execution.execute_step`: failures come back in the
    :class:`Outcome`; LangGraph's control flow (``interrupt()``), cancellation and other
    ``BaseException`` pass through, leaving the step unfinished so that resuming runs it again.
    """
    outcome = Outcome()
    what = f"step {step.name!r}"
    for attempt in range(1, step.retry.max_attempts + 1):
        outcome.attempts = attempt
        attempt_ctx = with_attempt(ctx, attempt)
        try:
            if inject_failure:
                raise injected_failure(step)
            async with waiting_for_io():
                with collecting_events(outcome.events):
                    returned = await await_with_timeout(
                        partial(_execute_once, step, attempt_ctx), step.timeout, what
                    )
            result = checked_result(step, returned)
        except GraphBubbleUp:
            raise  # interrupt() inside a step: LangGraph's control flow, not a failure
        except Exception as error:
            delay = record_execute_error(outcome, step, error, attempt, injected=inject_failure)
            if delay is None:
                return outcome
            async with waiting_for_io():
                await sleep(delay)
            continue
        record_execute_result(outcome, step, result, attempt)
        return outcome
    raise AssertionError("unreachable: Retry.max_attempts >= 1")


async def acompensate_step(
    step: Step,
    ctx: StepContext,
    result: StepResult | None,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> Outcome:
    """Run the step's ``acompensate`` (else ``compensate`` on the step pool) with its retries.

    Like :func:`~sagagraph.agents.execution.compensate_step`, failures come back in the
    :class:`Outcome`; ``BaseException`` and LangGraph's control flow pass through.
    """
    outcome = Outcome()
    for attempt in range(1, step.compensation_retry.max_attempts + 1):
        outcome.attempts = attempt
        try:
            async with waiting_for_io():
                with collecting_events(outcome.events):
                    await await_with_timeout(
                        partial(_compensate_once, step, with_attempt(ctx, attempt), result),
                        step.compensation_timeout,
                        f"compensation of step {step.name!r}",
                    )
        except GraphBubbleUp:
            raise
        except Exception as error:
            delay = record_compensate_error(outcome, step, error, attempt)
            if delay is None:
                return outcome
            async with waiting_for_io():
                await sleep(delay)
            continue
        record_compensate_ok(outcome, step, result, attempt)
        return outcome
    raise AssertionError("unreachable: Retry.max_attempts >= 1")
