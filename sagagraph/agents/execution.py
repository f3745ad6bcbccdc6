"""Run a step's execute or compensate under its retry policy and timeout, recording events.

Both coordination styles call these two functions, so a step behaves the same whether a graph
or an event decides that it runs.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from langgraph.errors import GraphBubbleUp

from sagagraph.agents.protocol import Step, StepContext, StepResult
from sagagraph.agents.view import Event, describe_error, make_event
from sagagraph.errors import ConfigurationError, InjectedFailure, StepTimeoutError

T = TypeVar("T")


@dataclass
class Outcome:
    """What happened when the engine ran one side of a step."""

    result: StepResult | None = None
    """The result (execute only), None when the step failed."""
    error: BaseException | None = None
    """The last error, when every attempt failed."""
    attempts: int = 0
    """How many attempts were made."""
    events: list[Event] = field(default_factory=list)
    """Events to append to the audit trail, one per attempt."""

    @property
    def ok(self) -> bool:
        return self.error is None


def call_with_timeout(fn: Callable[[], T], timeout: float | None, what: str) -> T:
    """Run ``fn`` and fail with StepTimeoutError when it takes longer than ``timeout``.

    The call runs on a daemon thread that is abandoned on timeout: Python cannot kill a thread.
    A late write it makes is refused by the step's store, which remembers compensated keys.
    The thread runs in a copy of the caller's context, so LangGraph's ``get_config()`` and
    ``interrupt()`` still work inside a step that has a timeout.
    """
    if timeout is None:
        return fn()
    box: dict[str, object] = {}
    context = contextvars.copy_context()

    def target() -> None:
        try:
            box["value"] = context.run(fn)
        except BaseException as e:  # carried to the caller's thread
            box["error"] = e

    worker = threading.Thread(target=target, name=f"sagagraph:{what}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise StepTimeoutError(f"{what} did not finish within {timeout:g}s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


_step_events: contextvars.ContextVar[list[Event] | None] = contextvars.ContextVar(
    "sagagraph_step_events", default=None
)


@contextmanager
def collecting_events(events: list[Event]) -> Iterator[None]:
    """Let the participant running now add events to its step's trail (see :func:`emit_event`).

    The list is shared by reference with the copies of the context that timeouts and thread
    pools run the participant in, so events land in ``events`` whichever thread emits them.
    """
    token = _step_events.set(events)
    try:
        yield
    finally:
        _step_events.reset(token)


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
    return StepContext(ctx.saga_id, ctx.step, ctx.input, ctx.results, attempt, ctx.services)


# -- what one attempt records: shared by the sync path here and the async one ----------------
# (sagagraph.agents.async_execution), so a step records the same events under both.


def injected_failure(step: Step) -> InjectedFailure:
    """The error ``fail_at`` (``--fail-at``) raises in a step."""
    return InjectedFailure(f"failure injected into step {step.name!r} (--fail-at)")


def checked_result(step: Step, result: object) -> StepResult:
    """``result`` when it is a StepResult the step may return; else a step failure.

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
    return result


def record_execute_error(
    outcome: Outcome, step: Step, error: Exception, attempt: int, *, injected: bool
) -> float | None:
    """Record a failed execute attempt.

    Returns the seconds to wait before the next attempt, or None when the step has failed for
    good (``outcome.error`` is then set). An injected failure is never retried.
    """
    retry = not injected and step.retry.should_retry(error, attempt)
    kind = "timeout" if isinstance(error, StepTimeoutError) else "error"
    outcome.events.append(
        make_event(step.name, "execute", "retry" if retry else kind, attempt, describe_error(error))
    )
    if retry:
        return step.retry.delay(attempt)
    outcome.error = error
    return None


def record_execute_result(outcome: Outcome, step: Step, result: StepResult, attempt: int) -> None:
    """Record a finished execute: ``ok``, or ``halted`` when the step stopped the saga."""
    if result.halt:
        detail = result.reason or "halted"
        outcome.events.append(make_event(step.name, "execute", "halted", attempt, detail))
    else:
        outcome.events.append(make_event(step.name, "execute", "ok", attempt, result.output or ""))
    outcome.result = result


def record_compensate_error(
    outcome: Outcome, step: Step, error: Exception, attempt: int
) -> float | None:
    """Record a failed compensate attempt; the wait before retrying, or None when giving up."""
    policy = step.compensation_retry
    retry = policy.should_retry(error, attempt)
    outcome.events.append(
        make_event(
            step.name, "compensate", "retry" if retry else "error", attempt, describe_error(error)
        )
    )
    if retry:
        return policy.delay(attempt)
    outcome.error = error
    return None


UNFINISHED_COMPENSATED = "step had not finished: cleaned up by its idempotency key"
"""Detail of the ``compensate ok`` event of a step that failed or crashed before it finished:
its compensation ran anyway and removed whatever partial work carried the step's key."""


def record_compensate_ok(
    outcome: Outcome, step: Step, result: StepResult | None, attempt: int
) -> None:
    """Record a finished compensate (a step without a result says how it was cleaned up)."""
    detail = UNFINISHED_COMPENSATED if result is None else ""
    outcome.events.append(make_event(step.name, "compensate", "ok", attempt, detail))


# -- the sync path -----------------------------------------------------------------------------


def execute_step(
    step: Step,
    ctx: StepContext,
    *,
    inject_failure: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> Outcome:
    """Run ``step.participant.execute`` with retries and its timeout; return what happened.

    Failures come back in the :class:`Outcome`, never as an ``Exception``. LangGraph's own
    control flow (``interrupt()``) and ``BaseException`` (a kill, ``KeyboardInterrupt``) pass
    through: the graph then stops with the step unfinished, and resuming runs it again.
    """
    outcome = Outcome()
    what = f"step {step.name!r}"
    for attempt in range(1, step.retry.max_attempts + 1):
        outcome.attempts = attempt
        attempt_ctx = with_attempt(ctx, attempt)
        try:
            if inject_failure:
                raise injected_failure(step)
            with collecting_events(outcome.events):
                returned = call_with_timeout(
                    partial(step.participant.execute, attempt_ctx), step.timeout, what
                )
            result = checked_result(step, returned)
        except GraphBubbleUp:
            # interrupt() or Command(graph=PARENT) inside a step: LangGraph's control flow,
            # not a failure; let it reach the graph.
            raise
        except Exception as error:
            delay = record_execute_error(outcome, step, error, attempt, injected=inject_failure)
            if delay is None:
                return outcome
            sleep(delay)
            continue
        record_execute_result(outcome, step, result, attempt)
        return outcome
    raise AssertionError("unreachable: Retry.max_attempts >= 1")


def compensate_step(
    step: Step,
    ctx: StepContext,
    result: StepResult | None,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> Outcome:
    """Run ``step.participant.compensate`` with its retries; return what happened.

    Like :func:`execute_step`, failures come back in the :class:`Outcome`; ``BaseException``
    and LangGraph's control flow pass through.
    """
    outcome = Outcome()
    for attempt in range(1, step.compensation_retry.max_attempts + 1):
        outcome.attempts = attempt
        attempt_ctx = with_attempt(ctx, attempt)
        try:
            with collecting_events(outcome.events):
                call_with_timeout(
                    partial(step.participant.compensate, attempt_ctx, result),
                    step.compensation_timeout,
                    f"compensation of step {step.name!r}",
                )
        except GraphBubbleUp:
            raise
        except Exception as error:
            delay = record_compensate_error(outcome, step, error, attempt)
            if delay is None:
                return outcome
            sleep(delay)
            continue
        record_compensate_ok(outcome, step, result, attempt)
        return outcome
    raise AssertionError("unreachable: Retry.max_attempts >= 1")
