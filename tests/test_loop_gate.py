"""Turns on the event loop: a saga that waits holds no turn, so the loop never idles while
other sagas queue for one (issue 18: at 500 sagas at once, every turn was held by a saga
waiting for the commit in flight, and the loop sat idle for 0.2-0.7 s of a 2 s run)."""

from __future__ import annotations

import asyncio

import pytest

import sagagraph.graph.async_runner  # noqa: F401  # registers the commit-wait scope
from sagagraph.checkpoints.commit_batches import CommitBatches
from sagagraph.saga import loop_gate
from sagagraph.saga.loop_gate import _Turn, _Turns, saga_turn, waiting_for_io


def test_a_turn_granted_while_its_saga_began_another_wait_is_passed_on() -> None:
    """One task of a saga queues for a turn (its commit returned); meanwhile another task of
    the same saga starts waiting (its next commit). The turn it then gets is passed on, not
    held through that wait: another started saga gets it at once."""

    async def race() -> tuple[bool, bool]:
        turns = _Turns(1)
        holder = _Turn(turns)
        await holder.take()
        saga = _Turn(turns)
        saga._started = True
        queued = asyncio.create_task(saga.take())
        await asyncio.sleep(0)  # ``saga`` now queues for the turn
        saga.start_waiting(lend=True)  # another of its tasks starts waiting for a commit
        holder.give_back()  # the turn goes to the queued take
        await queued
        other = _Turn(turns)
        other._started = True
        await asyncio.wait_for(other.take(), 1)  # free: ``saga`` did not keep it
        held = saga._held, other._held
        other.give_back()
        await asyncio.wait_for(saga.stop_waiting(), 1)  # the wait ends: it takes the turn
        return held[0], held[1] and saga._held

    assert asyncio.run(race()) == (False, True)


def test_a_turn_lent_for_a_commit_goes_to_started_sagas_only() -> None:
    """A commit wait lets sagas that have started work meanwhile, but starts no new saga:
    every saga in flight is memory the garbage collector walks."""

    async def scenario() -> list[str]:
        turns = _Turns(1)
        order: list[str] = []
        lender = _Turn(turns)
        await lender.take()
        new, started = _Turn(turns), _Turn(turns)
        started._started = True

        async def take(turn: _Turn, name: str) -> None:
            await turn.take()
            order.append(name)

        tasks = [asyncio.create_task(take(new, "new"))]
        await asyncio.sleep(0)
        lender.start_waiting(lend=True)
        await asyncio.sleep(0)
        assert order == []  # the new saga is not let in by a commit wait
        tasks.append(asyncio.create_task(take(started, "started")))
        await asyncio.sleep(0)
        started.give_back()  # a plain release (a model call) lets the new saga in
        await asyncio.wait_for(asyncio.gather(*tasks), 1)
        return order

    assert asyncio.run(scenario()) == ["started", "new"]


def test_a_saga_waiting_for_its_commit_lets_another_saga_take_the_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With one turn, saga A's commit finishes only once saga B (started, back from its model
    call) has had a turn: B must get it while A waits for the commit (before, it waited
    forever: A kept the turn)."""
    monkeypatch.setattr(loop_gate, "DEFAULT_TURNS", 1)

    async def scenario() -> list[str]:
        a_committing, b_ran = asyncio.Event(), asyncio.Event()

        async def commit(batch: list[str]) -> None:
            a_committing.set()
            await b_ran.wait()

        queue: CommitBatches[str] = CommitBatches(commit, name="test")
        order: list[str] = []

        async def saga_a() -> None:
            async with saga_turn():
                await queue.write("a")
                order.append("a committed")

        async def saga_b() -> None:
            async with saga_turn():
                async with waiting_for_io():  # its model call: A takes the turn
                    await a_committing.wait()
                order.append("b ran")
                b_ran.set()

        b = asyncio.create_task(saga_b())
        await asyncio.sleep(0)
        await asyncio.wait_for(asyncio.gather(saga_a(), b), 5)
        return order

    assert asyncio.run(scenario()) == ["b ran", "a committed"]
