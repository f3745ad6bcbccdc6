"""The engine's own CPU per saga on memory: sagagraph beside plain LangGraph, rounds interleaved.

    python -m bench.cpu_per_saga                       # 7 rounds of 200 sagas, each path
    python -m bench.cpu_per_saga --rounds 5 --sagas 300 --json

Each round runs ``--sagas`` sagas one at a time (instant agents, no disk: ``memory://`` for
sagagraph, LangGraph's ``InMemorySaver`` for the plain graph of :mod:`bench.fake_saga`, both
``durability="sync"``), sagagraph then plain, success path then failure path, so the two
sides see the same load. It reports, a saga, the process's CPU time (``time.process_time``:
every thread, LangGraph's executor's included) and the wall time, as the median and range
over the rounds, with the ratio taken in each round. On a shared machine the CPU time moves
less than the wall time; read the ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.fake_saga import (
    PAPER_INPUT,
    fake_agents,
    fake_definition,
    plain_graph,
    plain_input,
    thread,
)

PATHS = (("success", None), ("failure", "summarizer"))


def _timed(run: Callable[[int], Any], sagas: int) -> tuple[float, float]:
    """CPU and wall milliseconds a saga over ``sagas`` calls of ``run``."""
    cpu, wall = time.process_time(), time.perf_counter()
    for i in range(sagas):
        run(i)
    return (
        (time.process_time() - cpu) / sagas * 1000,
        (time.perf_counter() - wall) / sagas * 1000,
    )


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure(*, rounds: int = 7, sagas: int = 200) -> list[dict[str, Any]]:
    """One row a path: CPU and wall ms a saga of each side, and their per-round ratios."""
    from langgraph.checkpoint.memory import InMemorySaver

    from sagagraph import build_saga_graph, open_checkpointer, run_saga

    agents = fake_agents()
    rows = []
    with open_checkpointer("memory://") as saver:
        app = build_saga_graph(fake_definition(agents)).compile(checkpointer=saver)
        plain = plain_graph(agents).compile(checkpointer=InMemorySaver())
        for path, fail_at in PATHS:
            tag = path[0]

            def ours(i: int, r: int, fail_at: str | None = fail_at, tag: str = tag) -> None:
                run_saga(app, PAPER_INPUT, saga_id=f"{tag}{r}-{i}", fail_at=fail_at)

            def theirs(i: int, r: int, fail_at: str | None = fail_at, tag: str = tag) -> None:
                plain.invoke(plain_input(fail_at), thread(f"{tag}{r}-{i}"), durability="sync")

            for i in range(20):  # warm: imports, caches, the executor's first threads
                ours(i, -1)
                theirs(i, -1)
            samples: dict[str, list[tuple[float, float]]] = {"sagagraph": [], "plain": []}
            for r in range(rounds):
                samples["sagagraph"].append(_timed(lambda i, r=r: ours(i, r), sagas))
                samples["plain"].append(_timed(lambda i, r=r: theirs(i, r), sagas))
            row: dict[str, Any] = {"path": path, "sagas": sagas, "rounds": rounds}
            for k, name in ((0, "cpu"), (1, "wall")):
                ours_ms = [s[k] for s in samples["sagagraph"]]
                theirs_ms = [s[k] for s in samples["plain"]]
                row[f"sagagraph_{name}_ms"] = _spread(ours_ms)
                row[f"plain_{name}_ms"] = _spread(theirs_ms)
                row[f"{name}_ratio"] = _spread(
                    [a / b for a, b in zip(ours_ms, theirs_ms, strict=True)]
                )
            rows.append(row)
    return rows


def _fmt(s: dict[str, float], unit: str = "") -> str:
    return f"{s['median']:.2f}{unit} [{s['min']:.2f}–{s['max']:.2f}]"


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| path | sagagraph CPU ms | plain CPU ms | CPU ratio "
        "| sagagraph wall ms | plain wall ms | wall ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['path']} | {_fmt(r['sagagraph_cpu_ms'])} | {_fmt(r['plain_cpu_ms'])} "
            f"| {_fmt(r['cpu_ratio'], '×')} | {_fmt(r['sagagraph_wall_ms'])} "
            f"| {_fmt(r['plain_wall_ms'])} | {_fmt(r['wall_ratio'], '×')} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sagas", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    rows = measure(rounds=args.rounds, sagas=args.sagas)
    print(json.dumps(rows, indent=2) if args.json else markdown(rows))


if __name__ == "__main__":
    main()
