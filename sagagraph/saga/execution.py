"""Run a step's execute or compensate under its retry policy and timeout, recording events.

Both coordination styles call these two functions, so a step behaves the same whether a graph
or an event decides that it runs.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TypeVar

from langgraph.errors import GraphBubbleUp

from sagagraph.errors import ConfigurationError, InjectedFailure, StepTimeoutError
from sagagraph.redaction import redact, redact_value
from sagagraph.saga.drivers import Returned, advance
from sagagraph.saga.protocol import Step, StepContext, StepResult
from sagagraph.saga.tracing import AttemptSpan
from sagagraph.saga.view import Event, describe_error, make_event

log = logging.getLogger("sagagraph")

T = TypeVar("T")


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
    if ctx.attempt == attempt:
        return ctx  # frozen: the first attempt's context is the one the step was given
    return StepContext(ctx.saga_id, ctx.step, ctx.input, ctx.results, attempt, ctx.deps)


# -- one attempt loop, driven by a sync driver here and an async one in async_execution -------
# The loops decide (attempt, record, retry or give up); the drivers only run the calls and the
# waits, so a step records the same events under ``invoke`` and ``ainvoke``.


@dataclass(frozen=True)
class Call:
    """The loop asks its driver to run one attempt with this context."""

    ctx: StepContext
    events: list[Event]
    """Where events the participant emits while it runs go (its step's trail)."""
    action: str = "execute"
    """``execute`` or ``compensate``: what the attempt runs (its span says so)."""
    injected: Exception | None = None
    """The failure ``fail_at`` injects: the driver answers with it and calls nothing."""


@dataclass(frozen=True)
class Wait:
    """The loop asks its driver to wait before the next attempt."""

    seconds: float


@dataclass(frozen=True)
class Tried:
    """What the driver sends back after a :class:`Call`: the value returned, or the error."""

    value: object = None
    error: Exception | None = None


AttemptLoop = Generator[Call | Wait, Tried | None, StepAttempts]
"""An attempt loop: yields calls and waits, receives what each call did, returns the outcome."""


def failed(error: Exception) -> Tried:
    """An attempt's error, for its loop; LangGraph's control flow (``interrupt()`` inside a
    step, ``GraphBubbleUp``) is no failure and passes through to the driver's caller."""
    if isinstance(error, GraphBubbleUp):
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


def execute_attempts(step: Step, ctx: StepContext, *, inject_failure: bool = False) -> AttemptLoop:
    """The attempt loop of ``step.participant.execute`` under the step's retry policy.

    One event per attempt: ``ok`` or ``halted`` when it finished, ``retry`` when another
    attempt follows, ``error`` or ``timeout`` when the step failed for good. An injected
    failure is never retried and never calls the step.
    """
    outcome = StepAttempts()
    for attempt in range(1, step.retry.max_attempts + 1):
        outcome.attempts = attempt
        injected = injected_failure(step) if inject_failure else None
        sent = yield Call(with_attempt(ctx, attempt), outcome.events, "execute", injected)
        assert sent is not None, "a driver answers every Call"
        tried = sent
        done = _tried_result(step, tried)
        if isinstance(done, StepResult):
            outcome.events.append(_finished_event(step, done, attempt))
            outcome.result = done
            return outcome
        retry = not inject_failure and step.retry.should_retry(done, attempt)
        kind = "timeout" if isinstance(done, StepTimeoutError) else "error"
        described = describe_error(done)
        outcome.events.append(
            make_event(step.name, "execute", "retry" if retry else kind, attempt, described)
        )
        if not retry:
            outcome.error = done
            outcome.described = described
            return outcome
        yield Wait(step.retry.delay(attempt))
    raise AssertionError("unreachable: Retry.max_attempts >= 1")


def _finished_event(step: Step, result: StepResult, attempt: int) -> Event:
    if result.halt:
        return make_event(step.name, "execute", "halted", attempt, result.reason or "halted")
    return make_event(step.name, "execute", "ok", attempt, result.output or "")


UNFINISHED_COMPENSATED = "step had not finished: cleaned up by its idempotency key"
"""Detail of the ``compensate ok`` event of a step that failed or crashed before it finished:
its compensation ran anyway and removed whatever partial work carried the step's key."""


def compensate_attempts(step: Step, ctx: StepContext, result: StepResult | None) -> AttemptLoop:
    """The attempt loop of ``step.participant.compensate`` under its compensation retry policy."""
    outcome = StepAttempts()
    policy = step.compensation_retry
    for attempt in range(1, policy.max_attempts + 1):
        outcome.attempts = attempt
        tried = yield Call(with_attempt(ctx, attempt), outcome.events, "compensate")
        assert tried is not None, "a driver answers every Call"
        if tried.error is None:
            detail = UNFINISHED_COMPENSATED if result is None else ""
            outcome.events.append(make_event(step.name, "compensate", "ok", attempt, detail))
            return outcome
        retry = policy.should_retry(tried.error, attempt)
        outcome.events.append(
            make_event(
                step.name,
                "compensate",
                "retry" if retry else "error",
                attempt,
                describe_error(tried.error),
            )
        )
        if not retry:
            outcome.error = tried.error
            return outcome
        yield Wait(policy.delay(attempt))
    raise AssertionError("unreachable: Retry.max_attempts >= 1")


def run_attempts(
    loop: AttemptLoop,
    call: Callable[[StepContext], object],
    *,
    timeout: float | None,
    what: str,
    sleep: Callable[[float], None] = time.sleep,
) -> StepAttempts:
    """Run an attempt loop on this thread: each attempt under ``timeout``, waits with ``sleep``.

    An ``Exception`` from an attempt goes back to the loop; LangGraph's control flow
    (``interrupt()``, ``GraphBubbleUp``) and ``BaseException`` (a kill, ``KeyboardInterrupt``)
    pass through: the graph then stops with the step unfinished, and resuming runs it again.
    """
    request = advance(loop)
    while not isinstance(request, Returned):
        if isinstance(request, Wait):
            sleep(request.seconds)
            request = advance(loop)
            continue
        with attempt_span(request):
            request = advance(loop, _attempt(request, call, timeout, what))
    return request.value


def attempt_span(request: Call) -> AttemptSpan:
    """The span of the attempt ``request`` asks for; its outcome is the event the loop
    records for it before the span ends."""
    ctx = request.ctx
    return AttemptSpan(ctx.saga_id, ctx.step, request.action, ctx.attempt, request.events)


def _attempt(
    request: Call, call: Callable[[StepContext], object], timeout: float | None, what: str
) -> Tried:
    if request.injected is not None:
        return Tried(error=request.injected)
    try:
        with collecting_events(request.events):
            if timeout is None:
                value = call(request.ctx)
            else:
                value = call_with_timeout(partial(call, request.ctx), timeout, what)
    except Exception as error:
        return failed(error)
    return Tried(value=value)


def execute_step(
    step: Step,
    ctx: StepContext,
    *,
    inject_failure: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> StepAttempts:
    """Run ``step.participant.execute`` with retries and its timeout; return what happened.

    Failures come back in the :class:`StepAttempts`, never as an ``Exception``. LangGraph's own
    control flow (``interrupt()``) and ``BaseException`` (a kill, ``KeyboardInterrupt``) pass
    through: the graph then stops with the step unfinished, and resuming runs it again.
    """
    return run_attempts(
        execute_attempts(step, ctx, inject_failure=inject_failure),
        step.participant.execute,
        timeout=step.timeout,
        what=f"step {step.name!r}",
        sleep=sleep,
    )


def compensate_step(
    step: Step,
    ctx: StepContext,
    result: StepResult | None,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> StepAttempts:
    """Run ``step.participant.compensate`` with its retries; return what happened.

    Like :func:`execute_step`, failures come back in the :class:`StepAttempts`; ``BaseException``
    and LangGraph's control flow pass through.
    """
    return run_attempts(
        compensate_attempts(step, ctx, result),
        lambda attempt_ctx: step.participant.compensate(attempt_ctx, result),
        timeout=step.compensation_timeout,
        what=f"compensation of step {step.name!r}",
        sleep=sleep,
    )
