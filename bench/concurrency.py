"""2. Concurrency: many sagas started at once, each step a simulated model call of fixed latency.

sagagraph runs ``arun_saga`` on :func:`~sagagraph.open_async_checkpointer` (SQLite with group
commit, or PostgreSQL); plain LangGraph runs ``ainvoke``, with async nodes and async edges (the
strongest plain baseline: no thread hops), on LangGraph's ``AsyncSqliteSaver``,
``AsyncPostgresSaver`` or ``InMemorySaver`` (not durable: the floor of LangGraph itself). Every
side uses ``durability="sync"``. The ideal is three latencies: every saga's three model calls
back to back, with no engine in between.

Each run is a fresh process on a fresh database (file or PostgreSQL database); the engines of a
scenario alternate run by run, and each figure is the median of the runs with its range.

    python -m bench.concurrency --engine sagagraph --latency 1 --sagas 500 --db /tmp/x.sqlite
    python -m bench.concurrency --engine plain-postgres --latency 0.05 --sagas 500 --db postgresql://...
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from bench.common import current_rss_mb, emit, peak_rss_mb, postgres_database, run_child, spread
from bench.fake_saga import (
    PAPER_INPUT,
    fake_agents,
    fake_definition,
    plain_graph,
    plain_input,
    thread,
)

ENGINES = (
    "sagagraph",
    "sagagraph-group",
    "sagagraph-pg-group",
    "sagagraph-memory",
    "plain-sqlite",
    "plain-memory",
    "plain-postgres",
)
GROUP_SCHEMES = {"sagagraph-group": "sqlite+group", "sagagraph-pg-group": "postgresql+group"}
"""The engines that run sagagraph on a group-commit saver, and the URL scheme each opens;
``sagagraph-memory`` runs it on ``memory://`` (the engine's own CPU, beside ``plain-memory``)."""
TARGET_IDEAL_AT_1S = 1.3
TARGET_PLAIN_AT_1S = 1.02
"""At 1 s a step the engine's own work hides behind the model: within 1.02× of plain LangGraph
on the same durable saver."""
TARGET_PLAIN_AT_50MS = 0.5
TARGET_MEMORY_AT_50MS = 1.2
TARGET_POSTGRES = 1.0
BASELINES = {
    "plain-sqlite": "plain LangGraph + AsyncSqliteSaver",
    "plain-memory": "plain LangGraph + InMemorySaver",
    "plain-postgres": "plain LangGraph + AsyncPostgresSaver",
}


async def _together(runs: list[Coroutine[Any, Any, Any]], one_at_a_time: bool) -> list[Any]:
    """The runs' results: all at once, or (``--one-at-a-time``) each after the last."""
    if not one_at_a_time:
        return list(await asyncio.gather(*runs))
    return [await run for run in runs]


async def run_sagagraph(
    url: str, sagas: int, latency: float, one_at_a_time: bool = False
) -> dict[str, Any]:
    from sagagraph import arun_saga, build_saga_graph, open_async_checkpointer

    async with open_async_checkpointer(url) as checkpointer:
        app = build_saga_graph(fake_definition(fake_agents(latency))).compile(
            checkpointer=checkpointer
        )
        before = current_rss_mb()
        start = time.perf_counter()
        runs = [arun_saga(app, PAPER_INPUT, saga_id=f"saga-{i}") for i in range(sagas)]
        views = await _together(runs, one_at_a_time)
        wall = time.perf_counter() - start
        commits = getattr(checkpointer, "commits", None)
    return {
        "wall_s": wall,
        "completed": sum(v["status"] == "completed" for v in views),
        "commits": commits,
        "rss_before_mb": before,
    }


async def run_plain(
    engine: str, db: str, sagas: int, latency: float, one_at_a_time: bool = False
) -> dict[str, Any]:
    if engine == "plain-memory":
        from langgraph.checkpoint.memory import InMemorySaver

        return await _plain_on(InMemorySaver(), sagas, latency, one_at_a_time)
    if engine == "plain-postgres":
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with AsyncPostgresSaver.from_conn_string(db) as pg_saver:
            await pg_saver.setup()
            return await _plain_on(pg_saver, sagas, latency, one_at_a_time)
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(db) as sqlite_saver:
        return await _plain_on(sqlite_saver, sagas, latency, one_at_a_time)


async def _plain_on(
    checkpointer: Any, sagas: int, latency: float, one_at_a_time: bool = False
) -> dict[str, Any]:
    app = plain_graph(fake_agents(latency), asynchronous=True).compile(checkpointer=checkpointer)
    before = current_rss_mb()
    start = time.perf_counter()
    runs = [
        app.ainvoke(plain_input(), thread(f"saga-{i}"), durability="sync") for i in range(sagas)
    ]
    outs = await _together(runs, one_at_a_time)
    wall = time.perf_counter() - start
    return {
        "wall_s": wall,
        "completed": sum(len(o.get("results") or {}) == 3 for o in outs),
        "commits": None,
        "rss_before_mb": before,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.concurrency")
    parser.add_argument("--engine", choices=ENGINES, required=True)
    parser.add_argument("--latency", type=float, required=True)
    parser.add_argument("--sagas", type=int, required=True)
    parser.add_argument("--db", required=True, help="SQLite file (created) or postgresql:// URL")
    parser.add_argument(
        "--one-at-a-time", action="store_true", help="run the sagas one after another"
    )
    args = parser.parse_args()
    if args.engine.startswith("sagagraph"):
        scheme = GROUP_SCHEMES.get(args.engine, "sqlite")
        if args.engine == "sagagraph-memory":
            url = "memory://"
        elif not args.db.startswith("postgres"):
            url = f"{scheme}:///{args.db}"
        elif scheme == "postgresql+group":
            url = args.db.replace("postgresql://", "postgresql+group://", 1)
        else:
            url = args.db
        coro = run_sagagraph(url, args.sagas, args.latency, args.one_at_a_time)
    else:
        coro = run_plain(args.engine, args.db, args.sagas, args.latency, args.one_at_a_time)
    result = asyncio.run(coro)
    result |= {"peak_rss_mb": peak_rss_mb(), "engine": args.engine}
    emit(result)


SCENARIOS: tuple[tuple[str, float, int, tuple[str, ...]], ...] = (
    ("sqlite", 0.05, 1, ("sagagraph", "plain-sqlite", "plain-memory")),
    ("sqlite", 1.0, 1, ("sagagraph", "plain-sqlite", "plain-memory")),
    ("postgres", 0.05, 1, ("sagagraph", "plain-postgres", "sagagraph-pg-group")),
    ("postgres", 0.05, 10, ("sagagraph", "plain-postgres", "sagagraph-pg-group")),
)
"""(backend, latency per step, sagas as a multiple of ``sagas``, engines). The first is
sagagraph on the URL's default saver; a ``sagagraph-...`` engine after it is sagagraph on
another saver, set against the same baselines."""


@contextmanager
def _database(backend: str, tmp: Path, name: str) -> Iterator[str]:
    if backend == "sqlite":
        yield str(tmp / f"{name}.sqlite")
        return
    with postgres_database() as url:
        if url is None:
            raise LookupError("PostgreSQL unreachable at 127.0.0.1:5432")
        yield url


def scenario(
    backend: str, latency: float, sagas: int, engines: tuple[str, ...], runs: int, tmp: Path
) -> dict[str, Any]:
    """Wall time of every engine over ``runs`` fresh processes, the engines rotating per run."""
    walls: dict[str, list[float]] = {engine: [] for engine in engines}
    commits: list[float] = []
    for r in range(runs):
        k = r % len(engines)
        for engine in engines[k:] + engines[:k]:
            with _database(backend, tmp, f"{engine}-{backend}-{latency}-{sagas}-{r}") as db:
                args = ["--engine", engine, "--latency", str(latency), "--sagas", str(sagas)]
                out = run_child("concurrency", *args, "--db", db, timeout=1800)
            if out["completed"] != sagas:
                raise RuntimeError(f"{engine}: {out['completed']} of {sagas} completed")
            walls[engine].append(out["wall_s"])
            if engine == "sagagraph" and out.get("commits") is not None:
                commits.append(out["commits"])
    ideal = 3 * latency
    ours = spread(walls["sagagraph"])
    row: dict[str, Any] = {
        "backend": backend,
        "latency_s": latency,
        "sagas": sagas,
        "ideal_s": ideal,
        "sagagraph_s": ours,
        "vs_ideal": ours["median"] / ideal,
        "commits": spread(commits) if commits else None,
        "baselines": {},
    }
    baselines = [e for e in engines[1:] if not e.startswith("sagagraph")]
    for engine in baselines:
        theirs = spread(walls[engine])
        row["baselines"][engine] = {"wall_s": theirs, "ratio": ours["median"] / theirs["median"]}
    variants = [e for e in engines[1:] if e.startswith("sagagraph")]
    if variants:
        row["variants"] = {
            engine: {
                "wall_s": spread(walls[engine]),
                "ratios": {
                    b: spread(walls[engine])["median"] / spread(walls[b])["median"]
                    for b in baselines
                },
            }
            for engine in variants
        }
    return row


BACKENDS = ("sqlite", "postgres")


def run(
    *,
    runs: int = 5,
    sagas: int = 500,
    quick: bool = False,
    backends: tuple[str, ...] = BACKENDS,
) -> list[dict[str, Any]]:
    """Every scenario of ``backends``; PostgreSQL's are skipped (and said so) when unreachable."""
    if quick:
        runs, sagas = 2, 50
    runs = runs if quick else max(runs, 5)
    rows: list[dict[str, Any]] = []
    with TemporaryDirectory(prefix="sagagraph-bench-") as tmp:
        for backend, latency, times, engines in SCENARIOS:
            if backend not in backends:
                continue
            n = sagas * (4 if quick and times > 1 else times)
            try:
                rows.append(scenario(backend, latency, n, engines, runs, Path(tmp)))
            except LookupError as error:
                rows.append(
                    {"backend": backend, "latency_s": latency, "sagas": n, "skipped": str(error)}
                )
    return rows


if __name__ == "__main__":
    main()
