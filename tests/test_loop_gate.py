"""Turns on the event loop: a saga that waits holds no turn, so the loop never idles while
other sagas queue for one (issue 18: at 500 sagas at once, every turn was held by a saga
waiting for the commit in flight, and the loop sat idle for 0.3 s of a 2 s run)."""

from __future__ import annotations

import asyncio

from sagagraph.saga.loop_gate import _Turn, _Turns


def test_a_turn_granted_while_its_saga_began_another_wait_is_passed_on() -> None:
    """One task of a saga queues for a turn (its commit returned); meanwhile another task of
    the same saga starts waiting (its next commit). The turn it then gets is passed on, not
    held through that wait: a third saga gets it at once."""

    async def race() -> tuple[bool, bool]:
        turns = _Turns(1)
        holder = _Turn(turns)
        await holder.take()
        saga = _Turn(turns)
        queued = asyncio.create_task(saga.take())
        await asyncio.sleep(0)  # ``saga`` now queues for the turn
        saga.start_waiting()  # another of its tasks starts waiting for a commit
        holder.give_back()  # the turn goes to the queued take
        await queued
        other = _Turn(turns)
        await asyncio.wait_for(other.take(), 1)  # free: ``saga`` did not keep it
        held = saga._held, other._held
        other.give_back()
        await asyncio.wait_for(saga.stop_waiting(), 1)  # the wait ends: it takes the turn
        return held[0], held[1] and saga._held

    assert asyncio.run(race()) == (False, True)
