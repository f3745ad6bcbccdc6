"""Calls a step timeout gave up on are counted until they end, on the sync and async paths.

The CLI reads the count (``abandoned_calls``) to end at once, rather than wait for a hung
model call the interpreter would join at exit.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from sagagraph.errors import StepTimeoutError
from sagagraph.saga.execution import (
    abandoned_calls,
    await_with_timeout,
    call_with_timeout,
    run_in_step_thread,
)


def wait_until_none_left() -> None:
    for _ in range(500):
        if abandoned_calls() == 0:
            return
        threading.Event().wait(0.01)
    raise AssertionError("an abandoned call that ended is still counted")


def test_a_timed_out_sync_call_is_counted_until_it_ends() -> None:
    release = threading.Event()
    before = abandoned_calls()
    with pytest.raises(StepTimeoutError):
        call_with_timeout(lambda: release.wait(60), 0.05, "step 'hung'")
    assert abandoned_calls() == before + 1
    release.set()
    wait_until_none_left()
    assert call_with_timeout(lambda: 7, 5, "step 'quick'") == 7
    assert abandoned_calls() == 0


def test_a_timed_out_call_on_the_step_pool_is_counted_until_it_ends() -> None:
    release = threading.Event()

    async def hung() -> None:
        await await_with_timeout(
            lambda: run_in_step_thread(lambda: release.wait(60)), 0.05, "step 'hung'"
        )

    with pytest.raises(StepTimeoutError):
        asyncio.run(hung())
    assert abandoned_calls() == 1
    release.set()
    wait_until_none_left()
