"""2. Concurrency: many sagas started at once, each step a simulated model call of fixed latency.

sagagraph runs ``arun_saga`` on :func:`~sagagraph.checkpoints.async_factory.open_async_checkpointer`
(SQLite with group commit); the plain LangGraph graph runs ``ainvoke`` on LangGraph's
``AsyncSqliteSaver``, with async nodes and async edges (the strongest plain baseline: no
thread hops). Both use ``durability="sync"``. The ideal is three latencies: every saga's three
model calls back to back, with no engine in between.

Each run is a fresh process on a fresh database file, and each side is run several times,
alternating; the median wall time is reported.

    python -m bench.concurrency --engine sagagraph --latency 1 --sagas 500 --db /tmp/x.sqlite
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from bench.common import current_rss_mb, emit, median, peak_rss_mb, run_child
from bench.fake_saga import (
    PAPER_INPUT,
    fake_agents,
    fake_definition,
    plain_graph,
    plain_input,
    thread,
)

LATENCIES = (0.05, 1.0)
TARGET_IDEAL_AT_1S = 1.3
TARGET_PLAIN_AT_50MS = 0.5


async def run_sagagraph(url: str, sagas: int, latency: float) -> dict[str, Any]:
    from sagagraph import build_saga_graph
    from sagagraph.checkpoints.async_factory import open_async_checkpointer
    from sagagraph.graph.async_runner import arun_saga

    async with open_async_checkpointer(url) as checkpointer:
        app = build_saga_graph(fake_definition(fake_agents(latency))).compile(
            checkpointer=checkpointer
        )
        before = current_rss_mb()
        start = time.perf_counter()
        views = await asyncio.gather(
            *(arun_saga(app, PAPER_INPUT, saga_id=f"saga-{i}") for i in range(sagas))
        )
        wall = time.perf_counter() - start
        commits = getattr(checkpointer, "commits", None)
    return {
        "wall_s": wall,
        "completed": sum(v["status"] == "completed" for v in views),
        "commits": commits,
        "rss_before_mb": before,
    }


async def run_plain(path: str, sagas: int, latency: float) -> dict[str, Any]:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(path) as checkpointer:
        app = plain_graph(fake_agents(latency), asynchronous=True).compile(
            checkpointer=checkpointer
        )
        before = current_rss_mb()
        start = time.perf_counter()
        outs = await asyncio.gather(
            *(
                app.ainvoke(
                    plain_input(),
                    thread(f"saga-{i}"),
                    durability="sync",
                )
                for i in range(sagas)
            )
        )
        wall = time.perf_counter() - start
    return {
        "wall_s": wall,
        "completed": sum(len(o.get("results") or {}) == 3 for o in outs),
        "commits": None,
        "rss_before_mb": before,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.concurrency")
    parser.add_argument("--engine", choices=["sagagraph", "plain"], required=True)
    parser.add_argument("--latency", type=float, required=True)
    parser.add_argument("--sagas", type=int, required=True)
    parser.add_argument("--db", required=True, help="SQLite file (created)")
    args = parser.parse_args()
    if args.engine == "sagagraph":
        coro = run_sagagraph(f"sqlite:///{args.db}", args.sagas, args.latency)
    else:
        coro = run_plain(args.db, args.sagas, args.latency)
    result = asyncio.run(coro)
    result |= {"peak_rss_mb": peak_rss_mb(), "engine": args.engine}
    emit(result)


def run(*, runs: int = 3, sagas: int = 500, quick: bool = False) -> list[dict[str, Any]]:
    """Median wall time per latency and engine, over ``runs`` alternating fresh processes."""
    if quick:
        runs, sagas = 1, 100
    rows = []
    with TemporaryDirectory(prefix="sagagraph-bench-") as tmp:
        for latency in LATENCIES:
            walls: dict[str, list[float]] = {"sagagraph": [], "plain": []}
            details: dict[str, list[dict[str, Any]]] = {"sagagraph": [], "plain": []}
            for r in range(runs):
                order = ("sagagraph", "plain") if r % 2 == 0 else ("plain", "sagagraph")
                for engine in order:
                    db = Path(tmp) / f"{engine}-{latency}-{r}.sqlite"
                    args = ["--engine", engine, "--latency", str(latency)]
                    out = run_child("concurrency", *args, "--sagas", str(sagas), "--db", str(db))
                    if out["completed"] != sagas:
                        raise RuntimeError(f"{engine}: {out['completed']} of {sagas} completed")
                    walls[engine].append(out["wall_s"])
                    details[engine].append(out)
            ideal = 3 * latency
            ours, theirs = median(walls["sagagraph"]), median(walls["plain"])
            rows.append(
                {
                    "latency_s": latency,
                    "sagas": sagas,
                    "ideal_s": ideal,
                    "sagagraph_s": ours,
                    "plain_s": theirs,
                    "vs_ideal": ours / ideal,
                    "vs_plain": ours / theirs,
                    "plain_vs_ideal": theirs / ideal,
                    "commits": median([d["commits"] for d in details["sagagraph"]]),
                    "samples": walls,
                }
            )
    return rows


if __name__ == "__main__":
    main()
