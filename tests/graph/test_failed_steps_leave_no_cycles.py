"""A failed step leaves no reference cycle behind: its frames are freed as the step returns.

An error's traceback refers to the frames it passed through, the driver's among them, and
the driver holds the outcome holding the error: before the traceback was dropped, each
failed attempt left about 300 objects (LangGraph's runner frames and channels among them)
for the garbage collector to find, which costs every saga that fails and every process
running many at once. The saga keeps the error's description; DEBUG logs its traceback.

(A saga that stops for an operator still leaves LangGraph's own cycle: ``interrupt()`` raises
through its runner, which keeps the exception.)
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from sagagraph import (
    Retry,
    SagaDefinition,
    Step,
    StepContext,
    StepResult,
    arun_saga,
    build_saga_graph,
    open_async_checkpointer,
    open_checkpointer,
    run_saga,
)


class Agent:
    """Fails every execute (``fails``), or its first attempt at each undo (``undo_fails``)."""

    def __init__(self, name: str, *, fails: bool = False, undo_fails: bool = False) -> None:
        self.name, self.fails, self.undo_fails = name, fails, undo_fails
        self.undone: set[str] = set()

    def execute(self, ctx: StepContext) -> StepResult:
        if self.fails:
            raise RuntimeError(f"{self.name} is down")
        return StepResult(data={"step": self.name})

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        if self.undo_fails and result is not None and ctx.saga_id not in self.undone:
            self.undone.add(ctx.saga_id)
            raise ConnectionError(f"{self.name} cannot undo yet")


def definition() -> SagaDefinition:
    quick = Retry(max_attempts=2)
    return SagaDefinition(
        "cycles",
        (
            Step(Agent("first", undo_fails=True), compensation_retry=quick),
            Step(Agent("second", fails=True), retry=quick),
        ),
    )


@pytest.fixture
def no_collection() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.parametrize("url", ["memory://", "sqlite"])
def test_a_failed_saga_leaves_nothing_for_the_garbage_collector(
    url: str, tmp_path: Path, no_collection: None
) -> None:
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}" if url == "sqlite" else url
    with open_checkpointer(url) as checkpointer:
        app = build_saga_graph(definition()).compile(checkpointer=checkpointer)
        run_saga(app, {}, saga_id="warm-up")
        gc.collect()
        for n in range(3):
            view = run_saga(app, {}, saga_id=f"failed-{n}")
            assert view["status"] == "rolled_back", view["status"]
        assert gc.collect() == 0


def test_an_async_failed_saga_leaves_nothing_for_the_garbage_collector(
    tmp_path: Path, no_collection: None
) -> None:
    async def failing() -> int:
        async with open_async_checkpointer(f"sqlite:///{tmp_path / 'a.sqlite'}") as saver:
            app = build_saga_graph(definition()).compile(checkpointer=saver)
            await arun_saga(app, {}, saga_id="warm-up")
            gc.collect()
            for n in range(3):
                view = await arun_saga(app, {}, saga_id=f"failed-{n}")
                assert view["status"] == "rolled_back", view["status"]
            return gc.collect()

    assert asyncio.run(failing()) == 0


def test_debug_logs_a_failed_attempts_traceback(caplog: pytest.LogCaptureFixture) -> None:
    with open_checkpointer("memory://") as checkpointer:
        app = build_saga_graph(definition()).compile(checkpointer=checkpointer)
        with caplog.at_level(logging.DEBUG, logger="sagagraph"):
            run_saga(app, {}, saga_id="debugged")
    [record, *_] = [r for r in caplog.records if r.message.startswith("attempt failed")]
    assert record.exc_info is not None and "second is down" in caplog.text
    assert "Traceback" in caplog.text and "in execute" in caplog.text
