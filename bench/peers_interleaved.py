"""The peer harness's seq workloads, sagagraph SQLite against plain LangGraph, interleaved.

``../shared/peers/run_all.sh`` (item 9) runs each peer in its own process, one after another:
on a shared host a slow spell then lands on one peer only (plain LangGraph's W2 ran at 156
sagas/s in one run and 242 in the next, 2026-12-01). Here both run in one process, with the
harness's own agents and graphs (``p1_langgraph.build``, ``px_sagagraph.definition``), taking
turns round by round, and the ratio is taken per round.

    python -m bench.peers_interleaved --rounds 10 --sagas 200
"""

from __future__ import annotations

import argparse
import logging
import sqlite3
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack, closing
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from bench.common import emit, spread
from bench.peers import HARNESS

Batch = Callable[[list[str], str], None]


def _sides(folder: Path, stack: ExitStack) -> tuple[Any, dict[str, Batch]]:
    """The harness's ``common`` module and a batch runner per side (closed with ``stack``)."""
    if str(HARNESS) not in sys.path:
        sys.path.insert(0, str(HARNESS))
    import common  # type: ignore[import-not-found]
    import p1_langgraph  # type: ignore[import-not-found]
    import px_sagagraph  # type: ignore[import-not-found]
    from langgraph.checkpoint.sqlite import SqliteSaver

    from sagagraph import build_saga_graph, open_checkpointer, run_saga

    logging.getLogger("sagagraph").setLevel(logging.ERROR)  # one warning per failed step
    conn = stack.enter_context(
        closing(sqlite3.connect(folder / "p1.sqlite", check_same_thread=False))
    )
    plain = p1_langgraph.build(False).compile(checkpointer=SqliteSaver(conn))
    saver = stack.enter_context(open_checkpointer(f"sqlite:///{folder / 'px.sqlite'}"))
    ours = build_saga_graph(px_sagagraph.definition(False)).compile(checkpointer=saver)

    def p1(ids: list[str], workload: str) -> None:
        for i in ids:
            config = {"configurable": {"thread_id": i}}
            out = plain.invoke(p1_langgraph._inp(i, workload, 0), config, durability="sync")
            p1_langgraph._check(out, workload)

    def px(ids: list[str], workload: str) -> None:
        for i in ids:
            px_sagagraph._check(
                run_saga(ours, {"workload": workload, "latency_ms": 0}, saga_id=i), workload
            )

    return common, {"p1": p1, "px": px}


def measure(workload: str, rounds: int, sagas: int, folder: Path) -> dict[str, Any]:
    """Throughput (sagas/s) of each side per round, and sagagraph's ratio to plain LangGraph."""
    with ExitStack() as stack:
        common, sides = _sides(folder, stack)
        samples: dict[str, list[float]] = {side: [] for side in sides}
        for r in range(-1, rounds):  # round -1 warms both up
            order = list(sides) if r % 2 else list(reversed(sides))
            for side in order:
                ids = [f"{side}-{workload}-{r}-{i}" for i in range(sagas)]
                common.reset_stores()
                start = time.perf_counter()
                sides[side](ids, workload)
                elapsed = time.perf_counter() - start
                common.verify(workload, ids)
                if r >= 0:
                    samples[side].append(sagas / elapsed)
    ratios = [a / b for a, b in zip(samples["px"], samples["p1"], strict=True)]
    return {
        "workload": workload,
        "rounds": rounds,
        "sagas": sagas,
        "sagagraph_sps": spread(samples["px"]),
        "plain_sps": spread(samples["p1"]),
        "ratio": spread(ratios),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.peers_interleaved")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--sagas", type=int, default=200)
    args = parser.parse_args()
    if not (HARNESS / "common.py").is_file():
        raise SystemExit(f"bench.peers_interleaved: peer harness not found at {HARNESS}")
    for workload in ("W1", "W2"):
        with TemporaryDirectory(prefix="sagagraph-peers-") as tmp:
            result = measure(workload, args.rounds, args.sagas, Path(tmp))
        emit(result)
        ratio = result["ratio"]
        print(
            f"{workload}: sagagraph SQLite {result['sagagraph_sps']['median']:.0f}"
            f" sagas/s, plain LangGraph sync SQLite "
            f"{result['plain_sps']['median']:.0f}; ratio {ratio['median']:.2f} "
            f"[{ratio['min']:.2f}-{ratio['max']:.2f}]",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
