"""Semantic locks over every lock table: in memory, SQLite and PostgreSQL tables of their own.

The rules (wait, fail fast, pending; deadlock detection; release at the saga's end) are the
kernel's; each table must keep them across connections, as processes sharing a store do.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sagagraph.checkpoints.locks import SqlLockTable, postgres_lock_table, sqlite_lock_table
from sagagraph.errors import DeadlockError, LockBusyError, LockTimeoutError
from sagagraph.saga.locks import LockTable, MemoryLockTable, SagaLocks, declared_keys

Opener = Callable[[], LockTable]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def tables(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens a new connection to one lock store each call (memory: the same table)."""
    if request.param == "memory":
        table = MemoryLockTable()
        yield lambda: table
        return
    url: str = request.getfixturevalue("postgres_url") if request.param == "postgres" else ""
    opened: list[SqlLockTable] = []

    def open_table() -> LockTable:
        if url:
            opened.append(postgres_lock_table(url))
        else:
            opened.append(sqlite_lock_table(tmp_path / "sagas.sqlite"))
        return opened[-1]

    yield open_table
    for table in opened:
        table.close()


def _ids() -> tuple[str, str, str]:
    tag = uuid.uuid4().hex[:8]
    return f"a-{tag}", f"b-{tag}", f"seat:{tag}"


def test_a_held_key_fails_fast_or_shows_pending(tables: Opener) -> None:
    a_id, b_id, key = _ids()
    a, b = SagaLocks(tables(), a_id), SagaLocks(tables(), b_id)
    assert a.acquire(key, "book").held
    assert a.acquire(key, "book").held  # again (a step run again after a crash): still its own
    with pytest.raises(LockBusyError, match=f"held by saga '{a_id}'"):
        b.acquire(key, "book", on_busy="fail")
    grant = b.acquire(key, "book", on_busy="pending")
    assert grant.pending and grant.holder == a_id
    with pytest.raises(LockTimeoutError, match="for more than 0 s"):
        b.acquire(key, "book", timeout=0)
    assert [r["saga_id"] for r in a.held()] == [a_id]
    assert a.release() == 1
    assert b.acquire(key, "book", on_busy="fail").held
    assert b.release() == 1 and tables().held(b_id) == []


def test_a_waiting_saga_gets_the_key_when_its_holder_ends(tables: Opener) -> None:
    a_id, b_id, key = _ids()
    a, b = SagaLocks(tables(), a_id), SagaLocks(tables(), b_id)
    a.acquire(key, "book")
    got: list[bool] = []
    waiter = threading.Thread(target=lambda: got.append(b.acquire(key, "book").held))
    waiter.start()
    while tables().waiting_for(b_id) is None and waiter.is_alive():
        threading.Event().wait(0.01)
    a.release()
    waiter.join(timeout=60)
    assert got == [True]
    assert tables().waiting_for(b_id) is None
    b.release()


def test_a_wait_that_would_close_a_cycle_is_refused(tables: Opener) -> None:
    a_id, b_id, key = _ids()
    a, b = SagaLocks(tables(), a_id), SagaLocks(tables(), b_id)
    a.acquire(f"{key}:1", "s")
    b.acquire(f"{key}:2", "s")
    got: list[bool] = []
    waiter = threading.Thread(target=lambda: got.append(a.acquire(f"{key}:2", "s").held))
    waiter.start()
    while tables().waiting_for(a_id) is None and waiter.is_alive():
        threading.Event().wait(0.01)
    with pytest.raises(DeadlockError, match=f"deadlock between sagas {b_id} -> {a_id} -> {b_id}"):
        b.acquire(f"{key}:1", "s")
    b.release()  # b gives up (its saga compensates): a goes on
    waiter.join(timeout=60)
    assert got == [True]
    a.release()


def test_declared_keys_are_filled_from_the_input_and_sorted() -> None:
    keys = declared_keys(
        ("seat:{flight}:{seat}", "room:{hotel}"), {"flight": "SG-1", "seat": "2A", "hotel": "h"}
    )
    assert keys == ["room:h", "seat:SG-1:2A"]


def test_an_approved_call_is_marked_across_connections_until_its_saga_ends(
    tables: Opener,
) -> None:
    a_id, b_id, _ = _ids()
    a, b = SagaLocks(tables(), a_id), SagaLocks(tables(), b_id)
    assert not tables().approved(f"{a_id}:pay:call-2")  # no mark yet (no table, in SQL)
    a.note_approved(f"{a_id}:pay:call-2")
    a.note_approved(f"{a_id}:pay:call-2")  # approved again after a crash: one mark
    b.note_approved(f"{b_id}:pay:call-1")
    assert tables().approved(f"{a_id}:pay:call-2") and not a.approved(f"{a_id}:pay:call-3")
    assert a.held() == []  # a mark is no lock
    a.release()
    assert not tables().approved(f"{a_id}:pay:call-2")
    assert b.approved(f"{b_id}:pay:call-1")
    b.release()
