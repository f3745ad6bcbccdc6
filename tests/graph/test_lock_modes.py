"""What a saga's step does when another saga holds its lock, as the step chose, run by whole
sagas on SQLite and PostgreSQL: it waits and times out (a step failure its retry policy
retries, then the saga compensates), proceeds seeing the resource pending, or, when waiting
would close a cycle, fails at once with DeadlockError (never retried) and compensates, so the
other saga goes on; no lock is left once both are final.

The lock tables' own rules are tested in ``tests/checkpoints/test_lock_tables.py``; these
tests hold the engine to them: ``Step(locks=..., on_busy=..., lock_timeout=...)`` and
``ctx.lock(..., on_busy=...)`` inside a saga.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from sagagraph import (
    Retry,
    SagaDefinition,
    Step,
    StepContext,
    StepResult,
    build_saga_graph,
    open_checkpointer,
    participant,
    resolve_saga,
    run_saga,
)
from sagagraph.graph.locking import held_locks, lock_table_for
from tests.support.pivot_saga import Effect, Journal

AGAIN = Retry(max_attempts=3, backoff=0.01, max_backoff=0.02)


def _tag() -> str:
    return uuid.uuid4().hex[:8]


def _holder_and_asker(journal: Journal, **lock: Any) -> SagaDefinition[Journal]:
    """reserve (locks ``stock:{sku}``, as ``lock`` says) -> charge (pivot) -> ship."""
    return SagaDefinition.of(
        "pivot_order",
        [
            Step(Effect("reserve"), locks=("stock:{sku}",), retry=AGAIN, **lock),
            Step(Effect("charge"), kind="pivot"),
            Step(Effect("ship"), kind="retriable"),
        ],
        deps=journal,
    )


def _outcomes(view: dict[str, Any], step: str) -> list[str]:
    return [e["outcome"] for e in view["events"] if e["step"] == step and e["action"] == "execute"]


def test_a_wait_that_times_out_is_retried_then_the_saga_compensates(
    durable_checkpointer_url: str, tmp_path: Path
) -> None:
    """The holder is stuck past its pivot (it keeps the lock until an operator acts); the
    asker waits 0.05 s per attempt, fails with LockTimeoutError, is retried, and rolls back."""
    journal = Journal(tmp_path / "journal.sqlite")
    tag = _tag()
    sku = f"lamp-{tag}"
    waiting = _holder_and_asker(journal, on_busy="wait", lock_timeout=0.05)
    with open_checkpointer(durable_checkpointer_url) as saver:
        app = build_saga_graph(waiting).compile(checkpointer=saver)
        holder = run_saga(app, {"sku": sku, "ship_failures": 9}, saga_id=f"holder-{tag}")
        asker = run_saga(app, {"sku": sku}, saga_id=f"asker-{tag}")
        left = held_locks(saver)
        # The store may be shared (PostgreSQL): the holder ends, and releases, before the test.
        assert resolve_saga(app, f"holder-{tag}", "skip", note="test over")["locks"] == []
    assert holder["status"] == "waiting_for_operator"
    assert asker["status"] == "rolled_back"
    assert asker["failure"]["error"].startswith(
        f"LockTimeoutError: lock 'stock:{sku}': held by saga 'holder-{tag}' for more than 0.05 s"
    )
    assert _outcomes(asker, "reserve") == ["retry", "retry", "error"]
    assert journal.calls_of(f"asker-{tag}:reserve") == 0  # its body never ran
    assert [(r["key"], r["saga_id"]) for r in left if tag in r["key"]] == [
        (f"stock:{sku}", f"holder-{tag}")
    ]


def test_a_step_may_proceed_seeing_the_resource_pending(
    durable_checkpointer_url: str, tmp_path: Path
) -> None:
    """``ctx.lock(key, on_busy="pending")``: the step runs at once, told who holds the key,
    and takes no lock; the holder's lock is untouched."""
    tag = _tag()
    key = f"seat:SG-101:{tag}"
    seen: dict[str, dict[str, Any]] = {}

    def look(ctx: StepContext[Any]) -> StepResult:
        grant = ctx.lock(key, on_busy="pending")
        seen[ctx.saga_id] = {"pending": grant.pending, "holder": grant.holder}
        return StepResult(data={"seat": "pending" if grant.pending else "yours"})

    def hold(ctx: StepContext[Any]) -> StepResult:
        if not ctx.input.get("finish"):
            raise ConnectionError("ticketing down")
        return StepResult()

    definition = SagaDefinition.of(
        "seat_watch",
        [
            Step(participant("look", look, lambda ctx, result: None)),
            Step(participant("pay", lambda ctx: StepResult()), kind="pivot"),
            Step(participant("ticket", hold), kind="retriable"),
        ],
    )
    with open_checkpointer(durable_checkpointer_url) as saver:
        app = build_saga_graph(definition).compile(checkpointer=saver)
        first = run_saga(app, {}, saga_id=f"first-{tag}")
        second = run_saga(app, {"finish": True}, saga_id=f"second-{tag}")
        left = [r["saga_id"] for r in held_locks(saver) if r["key"] == key]
        assert resolve_saga(app, f"first-{tag}", "skip", note="test over")["locks"] == []
    assert first["status"] == "waiting_for_operator"
    assert second["status"] == "completed"
    assert second["results"]["look"] == {"seat": "pending"}
    assert seen == {
        f"first-{tag}": {"pending": False, "holder": f"first-{tag}"},
        f"second-{tag}": {"pending": True, "holder": f"first-{tag}"},
    }
    assert left == [f"first-{tag}"]


@pytest.mark.parametrize("a_waits_first", [True, False], ids=["a-waits-first", "at-once"])
def test_two_sagas_locking_in_opposite_orders_do_not_deadlock(
    durable_checkpointer_url: str, tmp_path: Path, a_waits_first: bool
) -> None:
    """Saga A takes key 1 then asks for key 2; saga B took key 2 and asks for key 1 (once A
    waits, or at the same moment). The cycle's saga with the greatest id, B, fails at once
    with DeadlockError, is not retried (its step has three attempts), compensates and
    releases key 2; A, still waiting, then gets it and completes. No lock left."""
    tag = _tag()
    one, two = f"room:{tag}:1", f"room:{tag}:2"
    a_id, b_id = f"a-{tag}", f"b-{tag}"
    both_hold = threading.Barrier(2, timeout=60)
    undone: list[str] = []

    def first(ctx: StepContext[Any]) -> StepResult:
        ctx.lock(ctx.input["first"])
        both_hold.wait()
        return StepResult()

    def second(ctx: StepContext[Any]) -> StepResult:
        if ctx.saga_id == b_id and ctx.input["a_waits_first"]:  # B asks once A waits
            deadline = time.monotonic() + 60
            while table.waiting_for(a_id) != two:
                assert time.monotonic() < deadline, "saga A never waited for key 2"
                time.sleep(0.01)
        ctx.lock(ctx.input["second"])
        return StepResult()

    definition = SagaDefinition.of(
        "two_rooms",
        [
            Step(participant("first", first, lambda ctx, r: undone.append(ctx.saga_id))),
            Step(participant("second", second), retry=AGAIN),
        ],
    )
    with open_checkpointer(durable_checkpointer_url) as saver:
        table = lock_table_for(saver)
        app = build_saga_graph(definition).compile(checkpointer=saver)
        views: dict[str, dict[str, Any]] = {}

        def run(saga_id: str, keys: tuple[str, str]) -> None:
            saga_input = {"first": keys[0], "second": keys[1], "a_waits_first": a_waits_first}
            views[saga_id] = run_saga(app, saga_input, saga_id=saga_id)

        racers = [
            threading.Thread(target=run, args=(a_id, (one, two))),
            threading.Thread(target=run, args=(b_id, (two, one))),
        ]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join(timeout=120)
        assert not any(racer.is_alive() for racer in racers), "a saga is still waiting"
        left = [r for r in held_locks(saver) if tag in r["key"]]
    assert views[a_id]["status"] == "completed"
    assert views[b_id]["status"] == "rolled_back"
    error = views[b_id]["failure"]["error"]
    assert error.startswith(f"DeadlockError: lock '{one}': deadlock between sagas {b_id} -> ")
    assert _outcomes(views[b_id], "second") == ["error"]  # not retried
    assert undone == [b_id]
    assert left == []
