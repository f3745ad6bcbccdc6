"""Operators acting on one saga at the same moment: one action takes effect, the others are
refused, and the saga ends in one final state with one recorded action."""

from __future__ import annotations

import threading
from typing import Any

from tests.console.conftest import console, post, view
from tests.support.console_sagas import Stores


def race(stores: Stores, saga_id: str, actions: list[str]) -> list[Any]:
    """Every action posted by its own operator (own client), released together."""
    clients = [console(stores) for _ in actions]
    start = threading.Barrier(len(actions))
    replies: list[Any] = [None] * len(actions)

    def act(i: int) -> None:
        start.wait()
        replies[i] = post(clients[i], saga_id, actions[i], who=f"op{i}", why=f"ticket {i}")

    threads = [threading.Thread(target=act, args=(i,)) for i in range(len(actions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return replies


def test_concurrent_retry_and_skip_on_a_stuck_saga_take_effect_once(acted_on: Stores) -> None:
    replies = race(acted_on, "stuck", ["retry", "skip", "retry", "skip"])
    codes = [r.status_code for r in replies]
    assert all(c in (303, 409) for c in codes), [(r.status_code, r.text[-300:]) for r in replies]
    assert codes.count(303) >= 1, codes
    after = view(acted_on, "stuck")
    assert after["status"] in ("rolled_back", "resolved_by_operator"), after["status"]
    resolves = [e for e in after["events"] if e["action"] == "resolve"]
    assert len(resolves) == codes.count(303) == 1, (codes, resolves)


def test_concurrent_rollbacks_of_an_orphan_compensate_it_once(acted_on: Stores) -> None:
    replies = race(acted_on, "orphan", ["rollback"] * 4)
    codes = [r.status_code for r in replies]
    assert all(c in (303, 409) for c in codes), [(r.status_code, r.text[-300:]) for r in replies]
    after = view(acted_on, "orphan")
    assert after["status"] == "rolled_back"
    rollbacks = [e for e in after["events"] if str(e.get("detail", "")).startswith("rollback:")]
    assert len(rollbacks) == codes.count(303) == 1, (codes, rollbacks)
