"""Group commit's queue: writes share commits, and each writer gets its own outcome.

The commit here is a stand-in that records its batches and fails on demand, so what is checked
is the queue's promise alone: a write returns after a commit that holds it, a failed batch is
committed again one write at a time, and each error reaches exactly the writer whose write
failed. The savers built on it are tested against real databases in their own files.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sagagraph.checkpoints.commit_batches import CommitBatches


class Store:
    """A commit that takes a while, stores its batch, and rejects the writes named bad."""

    def __init__(self, *, bad: set[str] | None = None, cancel_on: str | None = None) -> None:
        self.batches: list[list[str]] = []
        self.stored: list[str] = []
        self.bad = bad or set()
        self.cancel_on = cancel_on

    async def commit(self, batch: list[str]) -> None:
        self.batches.append(list(batch))
        await asyncio.sleep(0.01)
        if self.cancel_on in batch:
            raise asyncio.CancelledError
        failing = sorted(self.bad & set(batch))
        if failing:
            raise ValueError(f"cannot store {', '.join(failing)}")
        self.stored.extend(batch)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_concurrent_writes_share_commits_and_return_after_theirs() -> None:
    store = Store()
    queue: CommitBatches[str] = CommitBatches(store.commit, name="test")

    async def write(i: int) -> bool:
        await asyncio.sleep(0.004 * (i % 5))  # arriving while earlier commits run
        await queue.write(f"w{i}")
        return f"w{i}" in store.stored

    async def scenario() -> list[bool]:
        return await asyncio.gather(*(write(i) for i in range(50)))

    assert run(scenario()) == [True] * 50
    assert sorted(store.stored) == sorted(f"w{i}" for i in range(50))
    assert 1 < queue.commits == len(store.batches) < 50


def test_a_failed_batch_fails_only_the_writes_that_fail() -> None:
    store = Store(bad={"w3", "w7"})
    queue: CommitBatches[str] = CommitBatches(store.commit, name="test")

    async def scenario() -> list[Any]:
        await queue.write("w0")  # the next writes gather into one batch behind nothing
        return await asyncio.gather(
            *(queue.write(f"w{i}") for i in range(1, 10)), return_exceptions=True
        )

    outcomes = run(scenario())

    errors = {f"w{i + 1}": o for i, o in enumerate(outcomes) if o is not None}
    assert set(errors) == {"w3", "w7"}
    assert str(errors["w3"]) == "cannot store w3"
    assert str(errors["w7"]) == "cannot store w7"
    assert sorted(store.stored) == sorted(f"w{i}" for i in range(10) if i not in (3, 7))


def test_a_lone_failed_write_is_not_tried_twice() -> None:
    store = Store(bad={"w0"})
    queue: CommitBatches[str] = CommitBatches(store.commit, name="test")

    with pytest.raises(ValueError, match="cannot store w0"):
        run(queue.write("w0"))
    assert store.batches == [["w0"]]


def test_a_cancelled_writer_leaves_the_others_and_its_rows_in_the_batch() -> None:
    store = Store()
    queue: CommitBatches[str] = CommitBatches(store.commit, name="test")

    async def scenario() -> None:
        first = asyncio.create_task(queue.write("w0"))
        await asyncio.sleep(0)
        impatient = asyncio.create_task(queue.write("w1"))
        patient = asyncio.create_task(queue.write("w2"))
        await asyncio.sleep(0)
        impatient.cancel()
        await asyncio.gather(first, patient)
        with pytest.raises(asyncio.CancelledError):
            await impatient
        await queue.drain()

    run(scenario())
    assert store.stored == ["w0", "w1", "w2"]


def test_when_the_flusher_is_cancelled_no_writer_waits_forever() -> None:
    store = Store(cancel_on="w1")
    queue: CommitBatches[str] = CommitBatches(store.commit, name="test")

    async def scenario() -> list[Any]:
        await queue.write("w0")
        return await asyncio.gather(queue.write("w1"), queue.write("w2"), return_exceptions=True)

    outcomes = run(scenario())
    assert store.stored == ["w0"]
    assert all(isinstance(o, asyncio.CancelledError) for o in outcomes)


def test_drain_waits_for_every_write_handed_over() -> None:
    store = Store()
    queue: CommitBatches[str] = CommitBatches(store.commit, name="test")

    async def scenario() -> list[str]:
        tasks = [asyncio.create_task(queue.write(f"w{i}")) for i in range(5)]
        await asyncio.sleep(0)
        await queue.drain()
        assert all(t.done() for t in tasks)
        return list(store.stored)

    assert run(scenario()) == [f"w{i}" for i in range(5)]
