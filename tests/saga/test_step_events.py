"""A participant adds events to its step's trail with ``emit_event`` (an agent's tool calls)."""

from __future__ import annotations

import asyncio

from sagagraph import Retry, Step, StepContext, StepResult, participant
from sagagraph.saga.execution import (
    acompensate_step,
    aexecute_step,
    compensate_step,
    emit_event,
    execute_step,
)
from sagagraph.saga.view import make_event

CTX = StepContext(saga_id="s1", step="agent", input={}, results={})


def emitting(ctx: StepContext) -> StepResult:
    assert emit_event(make_event(ctx.step, "tool_call", "ok", ctx.attempt, "book"))
    if ctx.attempt == 1:
        raise ConnectionError("flaky")
    return StepResult()


def undo(ctx: StepContext, result: StepResult | None) -> None:
    emit_event(make_event(ctx.step, "tool_undo", "ok", ctx.attempt, "cancel"))


STEP = Step(participant("agent", emitting, undo), retry=Retry(max_attempts=2), timeout=5)


def trail(events: list[dict[str, object]]) -> list[tuple[object, object, object]]:
    return [(e["action"], e["outcome"], e["attempt"]) for e in events]


EXPECTED_EXECUTE = [
    ("tool_call", "ok", 1),
    ("execute", "retry", 1),
    ("tool_call", "ok", 2),
    ("execute", "ok", 2),
]


def test_events_emitted_by_a_step_land_in_its_trail_in_order_on_every_attempt() -> None:
    outcome = execute_step(STEP, CTX, sleep=lambda _: None)
    assert trail(outcome.events) == EXPECTED_EXECUTE  # type: ignore[arg-type]
    undone = compensate_step(STEP, CTX, None)
    assert trail(undone.events) == [("tool_undo", "ok", 1), ("compensate", "ok", 1)]  # type: ignore[arg-type]


def test_the_async_drivers_collect_them_alike() -> None:
    async def both() -> tuple[list[object], list[object]]:
        async def no_wait(_: float) -> None:
            return None

        outcome = await aexecute_step(STEP, CTX, sleep=no_wait)
        undone = await acompensate_step(STEP, CTX, None)
        return list(outcome.events), list(undone.events)

    executed, undone = asyncio.run(both())
    assert trail(executed) == EXPECTED_EXECUTE  # type: ignore[arg-type]
    assert trail(undone) == [("tool_undo", "ok", 1), ("compensate", "ok", 1)]  # type: ignore[arg-type]


def test_outside_a_step_nothing_is_recorded() -> None:
    assert emit_event(make_event("agent", "tool_call", "ok")) is False
