"""Isolation anomalies of concurrent sagas, with and without countermeasures.

N travel sagas run at once over K seats of one flight, each wanting one seat (drawn at
random, so several sagas contend for each) and paying from one shared corporate wallet;
a fraction of the travellers' cards refuse (the wallet step fails and the saga compensates
its booking). Each saga is ``book_seat`` (compensatable) -> ``charge_wallet`` (the pivot) ->
``issue_ticket`` (retriable). Two variants run the same sagas:

- ``naive``: the stores read a value, think (``--think`` seconds), then write what they
  computed: a seat is taken when it was read free, the wallet's balance is written back less
  the price. Nothing is locked.
- ``countermeasures``: the seat is locked for the saga (``ctx.lock("seat:<n>")``, waiting)
  and booked with a conditional update (the value reread in the write); the wallet is
  debited with a commutative update (``balance = balance - price``).

Counted once every saga is final: **overbooked** seats (more than one completed saga holds
the seat), **lost updates** (debits missing from the wallet: its balance against the sum of
the completed sagas' charges), **failed for nothing** (a saga refused "sold out" by a saga
that then rolled back: a dirty read), and **throughput** (sagas per second of wall time).

    python -m bench.isolation                       # 60 sagas, 12 seats, 12 threads
    python -m bench.isolation --sagas 30 --seats 6 --json
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from sagagraph import (
    Retry,
    SagaDefinition,
    Step,
    StepContext,
    StepResult,
    build_saga_graph,
    open_checkpointer,
    run_saga,
)

PRICE = 100
FLIGHT = "SG-101"


class SoldOut(Exception):
    """The seat is taken."""


class CardRefused(Exception):
    """The traveller's card refuses: the saga rolls back."""


@dataclass
class Stores:
    """Seats and the corporate wallet in one SQLite file; ``naive`` picks the variant."""

    path: Path
    naive: bool
    think: float
    refusals: dict[str, str]
    """Saga id -> the saga whose booking made it sold out (to tell dirty reads later)."""

    def __post_init__(self) -> None:
        self._mutex = threading.Lock()

    @contextmanager
    def conn(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.path, timeout=60, isolation_level=None)) as conn:
            yield conn

    def seed(self, seats: int, balance: int) -> None:
        with self.conn() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE seats (seat TEXT PRIMARY KEY, holder TEXT)")
            conn.execute("CREATE TABLE wallet (id INTEGER PRIMARY KEY, balance INTEGER)")
            conn.execute("CREATE TABLE debits (key TEXT PRIMARY KEY, state TEXT)")
            conn.executemany(
                "INSERT INTO seats VALUES (?, NULL)", [(str(n),) for n in range(seats)]
            )
            conn.execute("INSERT INTO wallet VALUES (1, ?)", (balance,))

    def book(self, saga_id: str, seat: str) -> None:
        with self.conn() as conn:
            if self.naive:
                (holder,) = conn.execute(
                    "SELECT holder FROM seats WHERE seat = ?", (seat,)
                ).fetchone()
                if holder not in (None, saga_id):
                    self._refused(saga_id, holder)
                time.sleep(self.think)
                conn.execute("UPDATE seats SET holder = ? WHERE seat = ?", (saga_id, seat))
                return
            # Reread value: the write takes the seat only if it is still free (or ours).
            taken = conn.execute(
                "UPDATE seats SET holder = ? WHERE seat = ? AND (holder IS NULL OR holder = ?)",
                (saga_id, seat, saga_id),
            ).rowcount
            if not taken:
                (holder,) = conn.execute(
                    "SELECT holder FROM seats WHERE seat = ?", (seat,)
                ).fetchone()
                self._refused(saga_id, holder)

    def _refused(self, saga_id: str, holder: str) -> None:
        with self._mutex:
            self.refusals[saga_id] = holder
        raise SoldOut(f"seat taken by {holder}")

    def unbook(self, saga_id: str, seat: str) -> None:
        with self.conn() as conn:
            conn.execute(
                "UPDATE seats SET holder = NULL WHERE seat = ? AND holder = ?", (seat, saga_id)
            )

    def debit(self, key: str, amount: int) -> None:
        with self.conn() as conn:
            if conn.execute("SELECT 1 FROM debits WHERE key = ?", (key,)).fetchone():
                return
            conn.execute("INSERT INTO debits VALUES (?, 'debited')", (key,))
            if self.naive:
                (balance,) = conn.execute("SELECT balance FROM wallet WHERE id = 1").fetchone()
                time.sleep(self.think)
                conn.execute("UPDATE wallet SET balance = ? WHERE id = 1", (balance - amount,))
            else:
                conn.execute("UPDATE wallet SET balance = balance - ? WHERE id = 1", (amount,))

    def seat_holders(self) -> dict[str, str | None]:
        with self.conn() as conn:
            return dict(conn.execute("SELECT seat, holder FROM seats").fetchall())

    def balance(self) -> int:
        with self.conn() as conn:
            return int(conn.execute("SELECT balance FROM wallet WHERE id = 1").fetchone()[0])


Ctx = StepContext[Stores]


def book_seat(ctx: Ctx) -> StepResult:
    seat = str(ctx.input["seat"])
    if not ctx.deps.naive:
        ctx.lock(f"seat:{FLIGHT}:{seat}", timeout=120)
    ctx.deps.book(ctx.saga_id, seat)
    return StepResult(data={"seat": seat})


def unbook_seat(ctx: Ctx, result: StepResult | None) -> None:
    ctx.deps.unbook(ctx.saga_id, str(ctx.input["seat"]))


def charge_wallet(ctx: Ctx) -> StepResult:
    # The card is checked while the booking is held: the window in which others read it.
    time.sleep(ctx.deps.think)
    if ctx.input["card_refuses"]:
        raise CardRefused("card refused")
    ctx.deps.debit(ctx.idempotency_key, PRICE)
    return StepResult(data={"charged": PRICE})


def issue_ticket(ctx: Ctx) -> StepResult:
    return StepResult(data={"ticket": f"{FLIGHT}/{ctx.input['seat']}"})


class Fn:
    """A participant of two functions (``participant()`` with a class name for the graph)."""

    def __init__(self, name: str, execute: Any, compensate: Any = None) -> None:
        self.name, self._execute, self._compensate = name, execute, compensate

    def execute(self, ctx: Ctx) -> StepResult:
        result: StepResult = self._execute(ctx)
        return result

    def compensate(self, ctx: Ctx, result: StepResult | None) -> None:
        if self._compensate is not None:
            self._compensate(ctx, result)


def definition(stores: Stores) -> SagaDefinition[Stores]:
    return SagaDefinition.of(
        "isolation_trip",
        [
            Step(Fn("book_seat", book_seat, unbook_seat)),
            Step(Fn("charge_wallet", charge_wallet), kind="pivot"),
            Step(Fn("issue_ticket", issue_ticket), kind="retriable", retry=Retry(max_attempts=3)),
        ],
        deps=stores,
    )


def run_variant(naive: bool, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    rng = random.Random(args.seed)
    trips = [
        {"seat": rng.randrange(args.seats), "card_refuses": rng.random() < args.fail}
        for _ in range(args.sagas)
    ]
    name = "naive" if naive else "countermeasures"
    stores = Stores(folder / f"{name}-stores.sqlite", naive, args.think, {})
    stores.seed(args.seats, balance=PRICE * args.sagas)
    views: dict[str, dict[str, Any]] = {}
    with open_checkpointer(f"sqlite:///{folder / f'{name}-sagas.sqlite'}") as saver:
        app = build_saga_graph(definition(stores)).compile(checkpointer=saver)
        started = time.perf_counter()
        with ThreadPoolExecutor(args.threads) as pool:
            futures = {}
            for i, trip in enumerate(trips):
                futures[f"{name}-{i}"] = pool.submit(run_saga, app, trip, saga_id=f"{name}-{i}")
                time.sleep(args.gap)  # sagas arrive one after another, not all at once
            views = {saga_id: future.result() for saga_id, future in futures.items()}
        elapsed = time.perf_counter() - started
    completed = {s for s, v in views.items() if v["status"] == "completed"}
    holders = stores.seat_holders()
    seat_of = {f"{name}-{i}": str(t["seat"]) for i, t in enumerate(trips)}
    winners: dict[str, int] = {}
    for saga_id in completed:
        winners[seat_of[saga_id]] = winners.get(seat_of[saga_id], 0) + 1
    rolled_back = {s for s, v in views.items() if v["status"] == "rolled_back"}
    for_nothing = sum(1 for s, h in stores.refusals.items() if h in rolled_back)
    return {
        "variant": name,
        "sagas": args.sagas,
        "completed": len(completed),
        "rolled_back": len(rolled_back),
        "overbooked_seats": sum(1 for n in winners.values() if n > 1),
        "tickets_without_seat": sum(1 for s in completed if holders.get(seat_of[s]) != s),
        "lost_updates": (stores.balance() - (PRICE * args.sagas - PRICE * len(completed))) // PRICE,
        "failed_for_nothing": for_nothing,
        "sagas_per_s": round(args.sagas / elapsed, 1),
    }


COLUMNS = (
    "variant",
    "completed",
    "rolled_back",
    "overbooked_seats",
    "tickets_without_seat",
    "lost_updates",
    "failed_for_nothing",
    "sagas_per_s",
)


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(r[c]) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sagas", type=int, default=60)
    parser.add_argument("--seats", type=int, default=12)
    parser.add_argument("--threads", type=int, default=12)
    parser.add_argument("--fail", type=float, default=0.3, help="share of cards that refuse")
    parser.add_argument("--think", type=float, default=0.03, help="seconds between read and write")
    parser.add_argument("--gap", type=float, default=0.005, help="seconds between arrivals")
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with TemporaryDirectory() as folder:
        rows = [run_variant(naive, args, Path(folder)) for naive in (True, False)]
    settings = f"{args.sagas} sagas, {args.seats} seats, {args.threads} threads, "
    settings += f"{args.fail:.0%} cards refuse, think {args.think} s, "
    settings += f"{args.gap} s between arrivals, seed {args.seed}"
    if args.json:
        print(json.dumps({"settings": settings, "rows": rows}))
    else:
        print(f"{settings}\n\n{table(rows)}")


if __name__ == "__main__":
    main()
