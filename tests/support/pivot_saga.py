"""A saga with a pivot for the pivot tests, and a worker process that kills itself in a step.

``reserve`` (compensatable) -> ``charge`` (the pivot) -> ``ship`` -> ``notify`` (retriable).
Each step's effect is a row of a SQLite journal keyed by its idempotency key, so a test can
see what was done and undone across processes. The saga's input scripts the faults:
``fail_at`` (the engine's injected failure), ``ship_failures`` (how many times ``ship`` fails
before it works), ``item`` (``reserve`` locks ``stock:<item>``, doing ``on_busy`` when it is
held), ``kill_at`` (the step in which the worker SIGKILLs itself, once).

::

    python -m tests.support.pivot_saga run --db URL --journal PATH --saga-id ID --kill-at STEP
        [--item ITEM]
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
from contextlib import closing
from pathlib import Path
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


class Journal:
    """Effects (``done``/``undone`` by key) and call counts, in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with closing(sqlite3.connect(path, timeout=30)) as conn, conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE IF NOT EXISTS effects (key TEXT PRIMARY KEY, state TEXT)")
            conn.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, n INTEGER)")

    def _do(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with closing(sqlite3.connect(self.path, timeout=30)) as conn, conn:
            return list(conn.execute(sql, params).fetchall())

    def call(self, key: str) -> int:
        """Count one call of ``key``; the count so far."""
        self._do(
            "INSERT INTO calls VALUES (?, 1) ON CONFLICT (key) DO UPDATE SET n = n + 1", (key,)
        )
        return int(self._do("SELECT n FROM calls WHERE key = ?", (key,))[0][0])

    def calls_of(self, key: str) -> int:
        """How many times ``key`` was called (0: never)."""
        found = self._do("SELECT n FROM calls WHERE key = ?", (key,))
        return int(found[0][0]) if found else 0

    def set(self, key: str, state: str) -> None:
        self._do(
            "INSERT INTO effects VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET state = ?",
            (key, state, state),
        )

    def effects(self) -> dict[str, str]:
        return dict(self._do("SELECT key, state FROM effects ORDER BY key", ()))  # type: ignore[arg-type]


class Effect:
    """A step whose effect is a journal row; it dies (SIGKILL) on its first call when the
    saga's ``kill_at`` names it, and ``ship`` fails its first ``ship_failures`` calls."""

    def __init__(self, name: str) -> None:
        self.name = name

    def execute(self, ctx: StepContext[Journal]) -> StepResult:
        if self.name == "reserve" and ctx.input.get("item"):
            ctx.lock(f"stock:{ctx.input['item']}", on_busy=ctx.input.get("on_busy", "wait"))
        calls = ctx.deps.call(ctx.idempotency_key)
        if ctx.input.get("kill_at") == self.name and calls == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        if self.name == "ship" and calls <= int(ctx.input.get("ship_failures", 0)):
            raise ConnectionError(f"carrier unavailable (call {calls})")
        ctx.deps.set(ctx.idempotency_key, "done")
        return StepResult(data={"calls": calls})

    def compensate(self, ctx: StepContext[Journal], result: StepResult | None) -> None:
        ctx.deps.set(ctx.idempotency_key, "undone")


PATIENT = Retry(max_attempts=4, backoff=0.01, max_backoff=0.05)


def pivot_saga(journal: Journal) -> SagaDefinition[Journal]:
    """reserve -> charge (pivot) -> ship, notify (retriable)."""
    return SagaDefinition.of(
        "pivot_order",
        [
            Step(Effect("reserve")),
            Step(Effect("charge"), kind="pivot"),
            Step(Effect("ship"), kind="retriable", retry=PATIENT),
            Step(Effect("notify"), kind="retriable", retry=PATIENT),
        ],
        deps=journal,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["run"])
    parser.add_argument("--db", required=True)
    parser.add_argument("--journal", required=True)
    parser.add_argument("--saga-id", required=True)
    parser.add_argument("--kill-at", required=True)
    parser.add_argument("--item", help="reserve locks stock:ITEM")
    args = parser.parse_args()
    definition = pivot_saga(Journal(Path(args.journal)))
    saga_input = {"kill_at": args.kill_at} | ({"item": args.item} if args.item else {})
    with open_checkpointer(args.db) as saver:
        app = build_saga_graph(definition).compile(checkpointer=saver)
        run_saga(app, saga_input, saga_id=args.saga_id)


if __name__ == "__main__":
    main()


def pivot_app() -> SagaDefinition[Journal]:
    """The pivot saga over a journal in the temporary folder (``sagagraph graph --app``)."""
    import tempfile

    return pivot_saga(Journal(Path(tempfile.gettempdir()) / "sagagraph-pivot-journal.sqlite"))
