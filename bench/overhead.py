"""1. Engine overhead: time per saga with instant agents, sagagraph against a plain LangGraph graph.

Each backend (memory, SQLite, PostgreSQL), each driver (sync: ``run_saga`` against ``invoke``;
async: ``arun_saga`` against ``ainvoke``) and each path (success; failure at the summarizer, so
two committed steps are compensated, stepwise and in one batch) runs in rounds. A round times
``per_round`` sagas of each side back to back, the order rotating between rounds. The sides:

- sagagraph on its own saver (``open_checkpointer`` / ``open_async_checkpointer``);
- plain LangGraph, the same nodes, on LangGraph's stock saver for the same database
  (``InMemorySaver``, ``SqliteSaver`` / ``AsyncSqliteSaver``, ``PostgresSaver`` /
  ``AsyncPostgresSaver``): what a LangGraph user runs, and the baseline of the target;
- plain LangGraph on sagagraph's own saver (SQLite and PostgreSQL only; on memory both are
  ``InMemorySaver``), so the reader sees how much of the difference is the saver.

Within a round the sides take turns in slices of ``per_round / SLICES`` sagas, so a slow spell
of a shared machine falls on every side of the round alike.

Every side uses ``durability="sync"``. Each database is fresh per measurement. The ratio is
taken per round; every figure is reported as the median over rounds with its range.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from bench.common import postgres_database, spread
from bench.fake_saga import (
    PAPER_INPUT,
    fake_agents,
    fake_definition,
    plain_graph,
    plain_input,
    thread,
)
from sagagraph import (
    arun_saga,
    build_saga_graph,
    open_async_checkpointer,
    open_checkpointer,
    run_saga,
)

TARGET = 1.3
BACKENDS = ("memory", "sqlite", "postgres")
DRIVERS = ("sync", "async")
PATHS: dict[str, str | None] = {"success": None, "failure": "summarizer"}
"""Path name -> failing step. Each compensation is a checkpointed superstep of its own."""

SIDES = ("sagagraph", "plain_stock", "plain_own")
Timer = Callable[[str, int], float]
ATimer = Callable[[str, int], Awaitable[float]]


def _check(view: dict[str, Any], fail_at: str | None) -> None:
    expected = "rolled_back" if fail_at else "completed"
    assert view["status"] == expected, view["status"]


def _sync_timers(ours: Any, plains: dict[str, Any], fail_at: str | None) -> dict[str, Timer]:
    def sagagraph(tag: str, n: int) -> float:
        start = time.perf_counter()
        for i in range(n):
            _check(run_saga(ours, PAPER_INPUT, saga_id=f"sg-{tag}-{i}", fail_at=fail_at), fail_at)
        return (time.perf_counter() - start) / n

    def plain(app: Any) -> Timer:
        def timer(tag: str, n: int) -> float:
            start = time.perf_counter()
            for i in range(n):
                out = app.invoke(plain_input(fail_at), thread(f"p-{tag}-{i}"), durability="sync")
                assert bool(out.get("compensated")) == bool(fail_at), out
            return (time.perf_counter() - start) / n

        return timer

    return {"sagagraph": sagagraph} | {side: plain(app) for side, app in plains.items()}


def _async_timers(ours: Any, plains: dict[str, Any], fail_at: str | None) -> dict[str, ATimer]:
    async def sagagraph(tag: str, n: int) -> float:
        start = time.perf_counter()
        for i in range(n):
            view = await arun_saga(ours, PAPER_INPUT, saga_id=f"sg-{tag}-{i}", fail_at=fail_at)
            _check(view, fail_at)
        return (time.perf_counter() - start) / n

    def plain(app: Any) -> ATimer:
        async def timer(tag: str, n: int) -> float:
            start = time.perf_counter()
            for i in range(n):
                config = thread(f"p-{tag}-{i}")
                out = await app.ainvoke(plain_input(fail_at), config, durability="sync")
                assert bool(out.get("compensated")) == bool(fail_at), out
            return (time.perf_counter() - start) / n

        return timer

    return {"sagagraph": sagagraph} | {side: plain(app) for side, app in plains.items()}


def _order(r: int, sides: list[str]) -> list[str]:
    """Round ``r``'s order: rotated, so no side always runs first (or after the same one)."""
    k = r % len(sides)
    return sides[k:] + sides[:k]


def _summary(samples: dict[str, list[float]]) -> dict[str, Any]:
    out: dict[str, Any] = {f"{side}_s": spread(v) for side, v in samples.items()}
    for side in samples:
        if side != "sagagraph":
            ratios = [a / b for a, b in zip(samples["sagagraph"], samples[side], strict=True)]
            out[f"ratio_{side.removeprefix('plain_')}"] = spread(ratios)
    return out


SLICES = 10
"""A round's sagas of each side run in this many slices, the sides taking turns slice by slice,
so that a slow spell of the machine (other tenants, a scheduler hiccup) falls on every side of
the round alike instead of on whichever side was running."""


def _slices(per_round: int) -> list[int]:
    slices = min(SLICES, per_round)
    return [per_round // slices + (1 if j < per_round % slices else 0) for j in range(slices)]


def _sync_rounds(timers: dict[str, Timer], rounds: int, per_round: int) -> dict[str, Any]:
    for side, timer in timers.items():
        timer(f"{side}-warmup", 5)
    samples: dict[str, list[float]] = {side: [] for side in timers}
    for r in range(rounds):
        spent = dict.fromkeys(timers, 0.0)
        for j, n in enumerate(_slices(per_round)):
            for side in _order(r + j, list(timers)):
                spent[side] += timers[side](f"{r}-{j}", n) * n
        for side in timers:
            samples[side].append(spent[side] / per_round)
    return _summary(samples)


async def _async_rounds(timers: dict[str, ATimer], rounds: int, per_round: int) -> dict[str, Any]:
    for side, timer in timers.items():
        await timer(f"{side}-warmup", 5)
    samples: dict[str, list[float]] = {side: [] for side in timers}
    for r in range(rounds):
        spent = dict.fromkeys(timers, 0.0)
        for j, n in enumerate(_slices(per_round)):
            for side in _order(r + j, list(timers)):
                spent[side] += await timers[side](f"{r}-{j}", n) * n
        for side in timers:
            samples[side].append(spent[side] / per_round)
    return _summary(samples)


@contextmanager
def _stock_saver(backend: str, where: str) -> Iterator[Any]:
    """LangGraph's own saver for the database ``where`` names (a file path or a URL)."""
    if backend == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
    elif backend == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(where) as saver:
            saver.setup()
            yield saver
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(where) as pg_saver:
            pg_saver.setup()
            yield pg_saver


@asynccontextmanager
async def _astock_saver(backend: str, where: str) -> AsyncIterator[Any]:
    if backend == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
    elif backend == "sqlite":
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(where) as saver:
            await saver.setup()
            yield saver
    else:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with AsyncPostgresSaver.from_conn_string(where) as pg_saver:
            await pg_saver.setup()
            yield pg_saver


@contextmanager
def _databases(backend: str, tmp: Path, label: str) -> Iterator[tuple[str, str, str]]:
    """Fresh databases for one measurement: (sagagraph URL, stock saver's path or URL, kind)."""
    if backend == "memory":
        yield "memory://", "", "memory"
        return
    if backend == "sqlite":
        own, stock = tmp / f"{label}-own.sqlite", tmp / f"{label}-stock.sqlite"
        yield f"sqlite:///{own}", str(stock), "sqlite"
        return
    with postgres_database() as own_url, postgres_database() as stock_url:
        if own_url is None or stock_url is None:
            raise LookupError("PostgreSQL unreachable at 127.0.0.1:5432")
        yield own_url, stock_url, "postgres"


def measure(
    backend: str,
    driver: str,
    fail_at: str | None,
    rounds: int,
    per_round: int,
    tmp: Path,
) -> dict[str, Any]:
    """Seconds per saga of every side (median and range over rounds) and the per-round ratios."""
    label = f"{backend}-{driver}-{fail_at or 'ok'}"
    agents = fake_agents()
    definition = fake_definition(agents)
    with _databases(backend, tmp, label) as (own_url, stock_where, kind):
        if driver == "sync":
            with ExitStack() as stack:
                own = stack.enter_context(open_checkpointer(own_url))
                plains = {"plain_stock": stack.enter_context(_stock_saver(kind, stock_where))}
                if backend != "memory":
                    plains["plain_own"] = own
                graph = plain_graph(agents)
                apps = {side: graph.compile(checkpointer=saver) for side, saver in plains.items()}
                ours = build_saga_graph(definition)
                timers = _sync_timers(ours.compile(checkpointer=own), apps, fail_at)
                return _sync_rounds(timers, rounds, per_round)

        async def amain() -> dict[str, Any]:
            async with AsyncExitStack() as stack:
                own = await stack.enter_async_context(open_async_checkpointer(own_url))
                stock = await stack.enter_async_context(_astock_saver(kind, stock_where))
                plains = {"plain_stock": stock} | (
                    {} if backend == "memory" else {"plain_own": own}
                )
                graph = plain_graph(agents, asynchronous=True)
                apps = {side: graph.compile(checkpointer=saver) for side, saver in plains.items()}
                ours = build_saga_graph(definition)
                timers = _async_timers(ours.compile(checkpointer=own), apps, fail_at)
                return await _async_rounds(timers, rounds, per_round)

        return asyncio.run(amain())


def run(*, rounds: int = 7, quick: bool = False) -> list[dict[str, Any]]:
    """Every backend, driver and path; PostgreSQL is skipped (and said so) when unreachable."""
    rows: list[dict[str, Any]] = []
    # Rounds long enough (0.3-0.6 s a side) that one scheduler hiccup moves a ratio little.
    per_round = {"memory": 200, "sqlite": 80, "postgres": 80}
    rounds = max(rounds, 5)
    if quick:
        per_round = {k: 5 for k in per_round}
    with TemporaryDirectory(prefix="sagagraph-bench-") as tmp:
        for backend in BACKENDS:
            for driver in DRIVERS:
                for path, fail_at in PATHS.items():
                    row: dict[str, Any] = {
                        "backend": backend,
                        "driver": driver,
                        "path": path,
                        "target": TARGET,
                        "rounds": rounds,
                        "per_round": per_round[backend],
                    }
                    try:
                        row |= measure(
                            backend,
                            driver,
                            fail_at,
                            rounds,
                            per_round[backend],
                            Path(tmp),
                        )
                    except LookupError as error:
                        row["skipped"] = str(error)
                    rows.append(row)
    return rows
