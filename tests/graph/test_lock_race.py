"""Two sagas racing for the last seat, each with a failing wallet in turn, with the seat locked.

Each saga runs in a worker process; one or both are SIGKILLed at a seeded random moment, and
a killed saga is recovered at once from the test's process, while the other worker still runs
(as workers' sweeps would; a saga waiting for a dead saga's lock waits until it is recovered).
Whatever the kills: never an overbooking, never a saga that failed because of a booking later
undone (the traveller who can pay always gets the seat), and no lock left once every saga is
final. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from sagagraph import (
    SagaBusyError,
    SagaNotFoundError,
    build_saga_graph,
    open_checkpointer,
    recover_saga,
    run_saga,
)
from sagagraph.graph.locking import held_locks
from tests.support.lock_race import FLIGHT, open_stores, race_saga, seed, trip

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 3


def _booked(stores_dir: Path) -> list[str]:
    """Saga ids holding a booking on the flight now."""
    path = open_stores(stores_dir).airline.path
    with closing(sqlite3.connect(path, timeout=30)) as conn:
        rows = conn.execute(
            "SELECT saga_id FROM bookings WHERE flight = ? AND status = 'booked'", (FLIGHT,)
        )
        return [str(r[0]) for r in rows]


def _launch(db: str, stores_dir: Path, saga_id: str, saga_input: dict[str, Any]) -> Any:
    command = [sys.executable, "-m", "tests.support.lock_race", "run", "--db", db]
    command += ["--stores", str(stores_dir), "--saga-id", saga_id]
    command += ["--input", json.dumps(saga_input)]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(app: Any, saga_id: str, saga_input: dict[str, Any]) -> dict[str, Any]:
    """Recover the saga, or run it when its process died before it was stored."""
    try:
        return recover_saga(app, saga_id)
    except SagaNotFoundError:
        return run_saga(app, saga_input, saga_id=saga_id)


def _finish_when_done(
    app: Any, worker: Any, saga_id: str, saga_input: dict[str, Any]
) -> dict[str, Any]:
    """Once ``worker`` ends (done, or killed), the saga's view, recovering it when it was
    left unfinished (its lease may stay held a moment after the kill)."""
    worker.communicate(timeout=120)
    deadline = time.monotonic() + 30
    while True:
        try:
            return _finish(app, saga_id, saga_input)
        except SagaBusyError:
            assert time.monotonic() < deadline, f"{saga_id}: its lease is still held"
            time.sleep(0.05)


@pytest.mark.parametrize("poor_first", [True, False], ids=["poor-books-first", "rich-first"])
def test_the_last_seat_is_never_overbooked_nor_lost_to_an_undone_booking(
    durable_checkpointer_url: str, tmp_path: Path, poor_first: bool
) -> None:
    rng = random.Random(f"{poor_first}-{durable_checkpointer_url.split(':')[0]}")
    kills = 0
    for round_ in range(ROUNDS):
        stores_dir = tmp_path / f"stores-{round_}"
        stores_dir.mkdir()
        seed(stores_dir, "ada", "bob")
        tag = uuid.uuid4().hex[:8]
        sagas = {
            "rich": (f"rich-{tag}", trip("ada", seat=True, pause=0.3)),
            "poor": (f"poor-{tag}", trip("bob", seat=True, pause=0.6)),
        }
        order = ["poor", "rich"] if poor_first else ["rich", "poor"]
        first_id, first_input = sagas[order[0]]
        workers = [_launch(durable_checkpointer_url, stores_dir, first_id, first_input)]
        # The first saga books the seat (or dies trying) before the second one starts.
        deadline = time.monotonic() + 60
        while not _booked(stores_dir) and workers[0].poll() is None:
            assert time.monotonic() < deadline, "the first saga never booked"
            time.sleep(0.02)
        second_id, second_input = sagas[order[1]]
        workers.append(_launch(durable_checkpointer_url, stores_dir, second_id, second_input))
        # At a seeded random moment, SIGKILL the first worker, the second, or both.
        delay, targets = rng.uniform(0.0, 1.5), rng.choice([(0,), (1,), (0, 1)])
        if round_ == ROUNDS - 1 and not kills:
            # Every earlier kill came after the sagas ended (a quiet machine runs them
            # fast): the last round kills the first worker at once, inside its wallet's
            # pause, so each case proves recovery from at least one kill.
            delay, targets = 0.0, (0,)
        time.sleep(delay)
        for index in targets:
            if workers[index].poll() is None:
                workers[index].send_signal(signal.SIGKILL)

        definition = race_saga(open_stores(stores_dir))
        with open_checkpointer(durable_checkpointer_url) as saver:
            app = build_saga_graph(definition).compile(checkpointer=saver)
            with ThreadPoolExecutor(2) as pool:
                # As a worker's sweep would, this process recovers a killed saga at once,
                # while the other worker still runs: a saga waiting for the dead one's seat
                # lock gets it once the dead one is carried to its end.
                futures = {
                    who: pool.submit(_finish_when_done, app, worker, *sagas[who])
                    for who, worker in zip(order, workers, strict=True)
                }
                views = {who: future.result() for who, future in futures.items()}
            left = [lock for lock in held_locks(saver) if lock["saga_id"].endswith(tag)]
        kills += sum(1 for worker in workers if worker.returncode == -signal.SIGKILL)

        assert views["rich"]["status"] == "completed", views["rich"]["failure"]
        assert views["poor"]["status"] == "rolled_back"
        # The poor traveller fails on their wallet, or on a seat sold for good; never on a
        # booking that was later undone.
        assert views["poor"]["failure"]["step"] in ("charge_wallet", "book_flight")
        assert _booked(stores_dir) == [sagas["rich"][0]]
        assert open_stores(stores_dir).airline.seats_free(FLIGHT) == 0
        assert left == []
    assert kills, "no worker was killed: the kills came after every saga ended"
