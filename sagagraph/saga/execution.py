"""Run a step's execute or compensate under its retry policy and timeout, recording events.

Every coordination style runs its steps here, so a step behaves the same whether a graph or an
event decides that it runs. Each side of a step is one attempt loop, written once as a flow
(:mod:`sagagraph.saga.drivers`): it decides (attempt, record, retry or give up) and yields what
it needs done, each attempt (:class:`Call`), each wait (:class:`Pause`) and the hooks' news of
each attempt's start and end. Under ``invoke`` they are done on this thread
(:func:`execute_step`); under ``ainvoke`` on the event loop (:func:`aexecute_step`), awaiting a
participant's ``aexecute`` / ``acompensate`` when it has them, else running the sync method on
the step pool. A graph node yields from the loops directly.

Calling a participant under a timeout: Python cannot kill a thread, so a call given up on by
its timeout runs on, abandoned: a late write it makes is refused by the step's store, which
remembers compensated keys, and :func:`abandoned_calls` counts it until it ends. A sync
participant of an async saga runs on the step pool (:data:`STEP_THREADS` threads), not on
asyncio's default executor, whose ``min(32, cpus + 4)`` threads would make every saga beyond
the first few wait for a free thread. Both paths run the call in a copy of the caller's
context, so LangGraph's ``get_config()`` and ``interrupt()`` still work inside a step that has
a timeout.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar

from sagagraph.errors import ConfigurationError, InjectedFailure, StepTimeoutError
from sagagraph.redaction import redact, redact_value
from sagagraph.saga.drivers import Flow, Tell, adrive, drive
from sagagraph.saga.hooks import NO_HOOKS, SagaHooks
from sagagraph.saga.protocol import Step, StepContext, StepResult
from sagagraph.saga.view import Event, describe_error, make_event, now, timed

log = logging.getLogger("sagagraph")

Action = Literal["execute", "compensate"]
Sleep = Callable[[float], None]
ASleep = Callable[[float], Awaitable[None]]


@dataclass
class StepAttempts:
    """What happened when the engine ran one side of a step."""

    result: StepResult | None = None
    """The result (execute only), None when the step failed."""
    error: BaseException | None = None
    """The last error, when every attempt failed."""
    attempts: int = 0
    """How many attempts were made."""
    events: list[Event] = field(default_factory=list)
    """Events to append to the audit trail, one per attempt."""
    described: str | None = None
    """The last error as :func:`~sagagraph.saga.view.describe_error` put it in its event,
    when every attempt failed: the failure record reuses it instead of describing (and
    redacting) the error again."""

    @property
    def ok(self) -> bool:
        return self.error is None


_step_events: contextvars.ContextVar[list[Event] | None] = contextvars.ContextVar(
    "sagagraph_step_events", default=None
)


class collecting_events:  # used as a function: ``with collecting_events(events):``
    """Let the participant running now add events to its step's trail (see :func:`emit_event`).

    The list is shared by reference with the copies of the context that timeouts and thread
    pools run the participant in, so events land in ``events`` whichever thread emits them.
    A class rather than a ``contextmanager``: every attempt enters one, and a generator-based
    context manager costs several times more.
    """

    __slots__ = ("_events", "_token")

    def __init__(self, events: list[Event]) -> None:
        self._events = events

    def __enter__(self) -> None:
        self._token = _step_events.set(self._events)

    def __exit__(self, *exc: object) -> None:
        _step_events.reset(self._token)


def emit_event(event: Event) -> bool:
    """Append ``event`` to the trail of the step whose execute or compensate is running.

    For what happens inside a step (an agent's tool calls and their undos). False, and nothing
    recorded, outside a step run by the engine (an agent used on its own).
    """
    events = _step_events.get()
    if events is None:
        return False
    events.append(event)
    return True


def with_attempt(ctx: StepContext, attempt: int) -> StepContext:
    """``ctx`` for attempt number ``attempt`` (the idempotency key stays the same)."""
    # Frozen: the first attempt's context is the one the step was given.
    return ctx if ctx.attempt == attempt else replace(ctx, attempt=attempt)


@dataclass(frozen=True)
class Tried:
    """What the driver sends back after a :class:`Call`: the value returned, or the error."""

    value: object = None
    error: Exception | None = None
    started: str = ""
    """When the attempt began (:func:`~sagagraph.saga.view.now`), set by its loop."""


@dataclass(frozen=True)
class Call:
    """One attempt of a step's execute or compensate: the participant's sync method on this
    thread under :meth:`run`, its async one (or the sync one on the step pool) under
    :meth:`arun`; either way under the step's timeout, with the events the participant emits
    landing in ``events`` (its step's trail). An ``Exception`` comes back as the attempt's
    error; LangGraph's control flow (``interrupt()``) and ``BaseException`` (a kill,
    ``KeyboardInterrupt``, cancellation) pass through, leaving the step unfinished so that
    resuming runs it again."""

    step: Step
    ctx: StepContext
    events: list[Event]
    action: Action = "execute"
    result: StepResult | None = None
    """The committed result a compensation undoes (None: the step had not finished)."""
    injected: Exception | None = None
    """The failure ``fail_at`` injects: the attempt fails with it and calls nothing."""

    @property
    def timeout(self) -> float | None:
        return self.step.timeout if self.action == "execute" else self.step.compensation_timeout

    @property
    def what(self) -> str:
        name = self.step.name
        return f"step {name!r}" if self.action == "execute" else f"compensation of step {name!r}"

    def _sync(self) -> object:
        participant, ctx = self.step.participant, self.ctx
        if self.action == "execute":
            return participant.execute(ctx)
        participant.compensate(ctx, self.result)
        return None

    async def _async(self) -> object:
        participant, ctx = self.step.participant, self.ctx
        method = getattr(participant, "a" + self.action, None)
        if not callable(method):
            return await run_in_step_thread(self._sync)
        value: Any = await (method(ctx) if self.action == "execute" else method(ctx, self.result))
        return value

    def run(self) -> Tried:
        if self.injected is not None:
            return Tried(error=self.injected)
        try:
            with collecting_events(self.events):
                if self.timeout is None:
                    return Tried(value=self._sync())
                return Tried(value=call_with_timeout(self._sync, self.timeout, self.what))
        except Exception as error:
            return failed(error)

    async def arun(self) -> Tried:
        if self.injected is not None:
            return Tried(error=self.injected)
        try:
            with collecting_events(self.events):
                if self.timeout is None:
                    return Tried(value=await self._async())
                return Tried(value=await await_with_timeout(self._async, self.timeout, self.what))
        except Exception as error:  # interrupt() inside a step passes through ``failed``
            return failed(error)


@dataclass(frozen=True)
class Pause:
    """The wait before the next attempt: ``sleep`` on this thread, ``asleep`` on the loop."""

    seconds: float
    sleep: Sleep = time.sleep
    asleep: ASleep = asyncio.sleep

    def run(self) -> None:
        self.sleep(self.seconds)

    async def arun(self) -> None:
        await self.asleep(self.seconds)


def _attempted(call: Call, hooks: SagaHooks) -> Flow[Tried]:
    """One attempt, its start told to the hooks."""
    ctx = call.ctx
    if hooks is not NO_HOOKS:
        start = hooks.on_step_start, hooks.aon_step_start
        yield Tell(*start, ctx.saga_id, ctx.step, call.action, ctx.attempt)
    started = now()
    tried = yield call
    assert isinstance(tried, Tried)
    return replace(tried, started=started)


def _recorded(outcome: StepAttempts, event: Event, saga_id: str, hooks: SagaHooks) -> Flow[None]:
    """The attempt's event recorded in its step's trail, and told to the hooks as its end."""
    outcome.events.append(event)
    if hooks is not NO_HOOKS:
        yield Tell(hooks.on_step_end, hooks.aon_step_end, saga_id, event)


def _is_control_flow(error: Exception) -> bool:
    """True for LangGraph's ``GraphBubbleUp`` (an interrupt): looked up in ``sys.modules``,
    since an error of that class exists only once LangGraph is loaded, and the kernel does
    not load it (choreography and reading a saga run without it)."""
    errors = sys.modules.get("langgraph.errors")
    bubble_up = getattr(errors, "GraphBubbleUp", None)
    return isinstance(bubble_up, type) and isinstance(error, bubble_up)


def failed(error: Exception) -> Tried:
    """An attempt's error, for its loop; LangGraph's control flow (``interrupt()`` inside a
    step, ``GraphBubbleUp``) is no failure and passes through to the driver's caller."""
    if _is_control_flow(error):
        raise error
    # The saga records an error's description, never its traceback (DEBUG logs it). Dropped
    # here, the failed call's frames, and LangGraph's runner frames above them, are freed
    # when the step returns: the traceback refers to the driver's frame, which holds the
    # outcome holding the error, a cycle only the garbage collector would break (300
    # objects a failed step, kept alive until a collection walks them all).
    if log.isEnabledFor(logging.DEBUG):
        log.debug("attempt failed: %s", describe_error(error), exc_info=error)
    error.__traceback__ = None
    return Tried(error=error)


def injected_failure(step: Step) -> InjectedFailure:
    """The error ``fail_at`` (``--fail-at``) raises in a step; worded for every entry point."""
    return InjectedFailure(f"failure injected into step {step.name!r} (fail_at)")


def checked_result(step: Step, result: object) -> StepResult:
    """``result``, redacted, when it is a StepResult the step may return; else a step failure.

    Every coordination style records a step's result through here, so a secret a model quoted
    in a successful answer (its data, output path or halt reason) never reaches the saga's
    state, its events, its views or its checkpoints.

    TypeError for anything but a StepResult; ConfigurationError (never retried) for a halt
    from a step not declared ``Step(..., can_halt=True)``: ending a saga early is part of the
    saga's design, so it is declared where the saga is defined, not decided by surprise.
    """
    if not isinstance(result, StepResult):
        raise TypeError(f"step {step.name!r} returned {type(result).__name__}, expected StepResult")
    if result.halt and not step.can_halt:
        raise ConfigurationError(
            f"step {step.name!r} returned halt=True but is not declared Step(..., can_halt=True)"
        )
    return redacted_result(result)


def redacted_result(result: StepResult) -> StepResult:
    """``result`` with every known secret hidden in its data, output and reason; the same
    object when it holds none."""
    data = redact_value(result.data)
    output = redact(result.output) if result.output else result.output
    reason = redact(result.reason) if result.reason else result.reason
    if data is result.data and output == result.output and reason == result.reason:
        return result
    return replace(result, data=data, output=output, reason=reason)


def _tried_result(step: Step, tried: Tried) -> StepResult | Exception:
    if tried.error is not None:
        return tried.error
    try:
        return checked_result(step, tried.value)
    except Exception as error:
        return error


def execute_attempts(
    step: Step,
    ctx: StepContext,
    *,
    inject_failure: bool = False,
    hooks: SagaHooks = NO_HOOKS,
    sleep: Sleep = time.sleep,
    asleep: ASleep = asyncio.sleep,
) -> Flow[StepAttempts]:
    """The attempt loop of ``step.participant.execute`` under the step's retry policy.

    One event per attempt: ``ok`` or ``halted`` when it finished, ``retry`` when another
    attempt follows, ``error`` or ``timeout`` when the step failed for good. An injected
    failure is never retried and never calls the step.
    """
    outcome = StepAttempts()
    for attempt in range(1, step.retry.max_attempts + 1):
        outcome.attempts = attempt
        injected = injected_failure(step) if inject_failure else None
        call = Call(step, with_attempt(ctx, attempt), outcome.events, "execute", None, injected)
        tried = yield from _attempted(call, hooks)
        done = _tried_result(step, tried)
        if isinstance(done, StepResult):
            finished = timed(_finished_event(step, done, attempt), tried.started)
            yield from _recorded(outcome, finished, ctx.saga_id, hooks)
            outcome.result = done
            return outcome
        retry = not inject_failure and step.retry.should_retry(done, attempt)
        kind = "timeout" if isinstance(done, StepTimeoutError) else "error"
        described = describe_error(done)
        event = make_event(step.name, "execute", "retry" if retry else kind, attempt, described)
        timed(event, tried.started)
        yield from _recorded(outcome, event, ctx.saga_id, hooks)
        if not retry:
            outcome.error = done
            outcome.described = described
            return outcome
        yield Pause(step.retry.delay(attempt), sleep, asleep)
    raise AssertionError("unreachable: Retry.max_attempts >= 1")


def _finished_event(step: Step, result: StepResult, attempt: int) -> Event:
    if result.halt:
        return make_event(step.name, "execute", "halted", attempt, result.reason or "halted")
    return make_event(step.name, "execute", "ok", attempt, result.output or "")


UNFINISHED_COMPENSATED = "step had not finished: cleaned up by its idempotency key"
"""Detail of the ``compensate ok`` event of a step that failed or crashed before it finished:
its compensation ran anyway and removed whatever partial work carried the step's key."""


def compensate_attempts(
    step: Step,
    ctx: StepContext,
    result: StepResult | None,
    *,
    hooks: SagaHooks = NO_HOOKS,
    sleep: Sleep = time.sleep,
    asleep: ASleep = asyncio.sleep,
) -> Flow[StepAttempts]:
    """The attempt loop of ``step.participant.compensate`` under its compensation retry policy."""
    outcome = StepAttempts()
    policy = step.compensation_retry
    for attempt in range(1, policy.max_attempts + 1):
        outcome.attempts = attempt
        call = Call(step, with_attempt(ctx, attempt), outcome.events, "compensate", result)
        tried = yield from _attempted(call, hooks)
        if tried.error is None:
            detail = UNFINISHED_COMPENSATED if result is None else ""
            event = timed(make_event(step.name, "compensate", "ok", attempt, detail), tried.started)
            yield from _recorded(outcome, event, ctx.saga_id, hooks)
            return outcome
        retry = policy.should_retry(tried.error, attempt)
        outcome_kind = "retry" if retry else "error"
        event = make_event(
            step.name, "compensate", outcome_kind, attempt, describe_error(tried.error)
        )
        timed(event, tried.started)
        yield from _recorded(outcome, event, ctx.saga_id, hooks)
        if not retry:
            outcome.error = tried.error
            return outcome
        yield Pause(policy.delay(attempt), sleep, asleep)
    raise AssertionError("unreachable: Retry.max_attempts >= 1")


def execute_step(
    step: Step,
    ctx: StepContext,
    *,
    inject_failure: bool = False,
    hooks: SagaHooks = NO_HOOKS,
    sleep: Sleep = time.sleep,
) -> StepAttempts:
    """Run ``step.participant.execute`` with retries and its timeout; return what happened.

    Failures come back in the :class:`StepAttempts`, never as an ``Exception``. LangGraph's own
    control flow (``interrupt()``) and ``BaseException`` (a kill, ``KeyboardInterrupt``) pass
    through: the graph then stops with the step unfinished, and resuming runs it again.
    """
    loop = execute_attempts(step, ctx, inject_failure=inject_failure, hooks=hooks, sleep=sleep)
    return drive(loop)


def compensate_step(
    step: Step,
    ctx: StepContext,
    result: StepResult | None,
    *,
    hooks: SagaHooks = NO_HOOKS,
    sleep: Sleep = time.sleep,
) -> StepAttempts:
    """Run ``step.participant.compensate`` with its retries; return what happened.

    Like :func:`execute_step`, failures come back in the :class:`StepAttempts`; ``BaseException``
    and LangGraph's control flow pass through.
    """
    return drive(compensate_attempts(step, ctx, result, hooks=hooks, sleep=sleep))


async def aexecute_step(
    step: Step,
    ctx: StepContext,
    *,
    inject_failure: bool = False,
    hooks: SagaHooks = NO_HOOKS,
    sleep: ASleep = asyncio.sleep,
) -> StepAttempts:
    """:func:`execute_step` on the event loop: the step's ``aexecute`` when it has one, else
    ``execute`` on the step pool; cancellation passes through, as ``BaseException`` does."""
    loop = execute_attempts(step, ctx, inject_failure=inject_failure, hooks=hooks, asleep=sleep)
    return await adrive(loop)


async def acompensate_step(
    step: Step,
    ctx: StepContext,
    result: StepResult | None,
    *,
    hooks: SagaHooks = NO_HOOKS,
    sleep: ASleep = asyncio.sleep,
) -> StepAttempts:
    """:func:`compensate_step` on the event loop: the step's ``acompensate`` when it has one,
    else ``compensate`` on the step pool."""
    return await adrive(compensate_attempts(step, ctx, result, hooks=hooks, asleep=sleep))


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
