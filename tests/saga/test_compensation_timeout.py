"""A compensation that hangs past ``Step.compensation_timeout`` fails, is retried, escalates."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from sagagraph import (
    Retry,
    SagaDefinition,
    Step,
    StepContext,
    StepResult,
    arun_saga,
    build_saga_graph,
    open_checkpointer,
    participant,
    resolve_saga,
    run_saga,
)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown, so an abandoned, hung compensation thread ends with the test."""
    event = threading.Event()
    yield event
    event.set()


def hanging_saga(release: threading.Event, calls: list[str]) -> SagaDefinition:
    def book(ctx: StepContext) -> StepResult:
        calls.append("book")
        return StepResult(output="booking")

    def cancel(ctx: StepContext, result: StepResult | None) -> None:
        calls.append(f"cancel attempt {ctx.attempt}")
        if not release.is_set():
            release.wait(10)  # the remote system does not answer
        calls.append("cancelled")

    def charge(ctx: StepContext) -> StepResult:
        raise RuntimeError("card declined")

    return SagaDefinition.of(
        "hang",
        [
            Step(
                participant("book", book, cancel),
                compensation_retry=Retry(max_attempts=2),
                compensation_timeout=0.2,
            ),
            participant("charge", charge),
        ],
    )


def assert_escalated(view: dict[str, Any]) -> None:
    assert view["status"] == "compensation_failed"
    assert view["waiting_for_operator"] is True
    failure = view["compensation_failure"]
    assert failure["step"] == "book"
    assert failure["attempts"] == 2
    assert failure["error"].startswith("StepTimeoutError: compensation of step 'book'")
    trail = [
        (e["outcome"], e["attempt"])
        for e in view["events"]
        if e["step"] == "book" and e["action"] == "compensate"
    ]
    assert trail == [("retry", 1), ("error", 2)]
    assert view["completed"] == ["book"], "never reported undone"


def test_a_hung_compensation_times_out_and_escalates(release: threading.Event) -> None:
    calls: list[str] = []
    definition = hanging_saga(release, calls)
    with open_checkpointer("memory://") as checkpointer:
        app = build_saga_graph(definition).compile(checkpointer=checkpointer)
        view = run_saga(app, {}, saga_id="hung")
        assert_escalated(view)
        assert calls[:3] == ["book", "cancel attempt 1", "cancel attempt 2"]
        release.set()  # the remote system is back: the operator retries
        done = resolve_saga(app, "hung", "retry")
    assert done["status"] == "rolled_back"
    assert done["compensated"] == ["charge", "book"]


def test_a_hung_compensation_times_out_under_ainvoke_too(release: threading.Event) -> None:
    calls: list[str] = []
    definition = hanging_saga(release, calls)
    with open_checkpointer("memory://") as checkpointer:
        app = build_saga_graph(definition).compile(checkpointer=checkpointer)
        view = asyncio.run(arun_saga(app, {}, saga_id="hung-async"))
    assert_escalated(view)
