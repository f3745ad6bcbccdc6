"""3. Footprint: checkpoint bytes per saga, and peak memory with 1,000 sagas in flight.

Checkpoint bytes: the real paper saga (offline engine) on a real paper, in SQLite, against a
plain LangGraph graph that carries the paper's text in its state, as LangGraph tutorials do,
and returns the same results. Each side's bytes are what its checkpoints and pending writes
take in the database, per saga. sagagraph's state holds the paper's path, not its text: the
check below looks for a slice of the text in every stored blob.

Peak memory: 1,000 sagas started at once on one event loop, each step a 2 s simulated model
call, so that all of them are in flight together; a fresh process per side and run (five
runs, alternating), whose peak resident memory is the measurement: median and range.

    python -m bench.footprint --engine sagagraph --sagas 1000 --db /tmp/x.sqlite
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from bench.common import ROOT, current_rss_mb, emit, peak_rss_mb, run_child, spread
from bench.fake_saga import (
    PAPER_INPUT,
    FakeAgent,
    fake_definition,
    plain_graph,
    plain_input,
    thread,
)
from sagagraph import build_saga_graph, open_checkpointer, run_saga
from sagagraph.agents.paper_saga import PAPER_STEPS, paper_saga_definition
from sagagraph.agents.pdf.loader import load_paper

IN_FLIGHT_LATENCY = 2.0


def sample_paper() -> Path:
    """A real paper from the shared corpus when it is there, else the repository's example."""
    from tests.support.services import CORPUS

    corpus_paper = CORPUS / "papers" / "attention_1706.03762v7.pdf"
    if corpus_paper.exists():
        return corpus_paper
    return ROOT / "examples" / "papers" / "complete_paper.md"


def _bytes_per_thread(db: Path, needle: bytes) -> dict[str, dict[str, Any]]:
    """Checkpoint and write bytes of each thread, and whether ``needle`` is in any of them."""
    out: dict[str, dict[str, Any]] = {}
    with closing(sqlite3.connect(db)) as conn:
        for thread, checkpoint, meta in conn.execute(
            "SELECT thread_id, checkpoint, metadata FROM checkpoints"
        ):
            row = out.setdefault(thread, {"bytes": 0, "checkpoints": 0, "has_text": False})
            row["bytes"] += len(checkpoint or b"") + len(meta or b"")
            row["checkpoints"] += 1
            row["has_text"] |= needle in (checkpoint or b"")
        for thread, value in conn.execute("SELECT thread_id, value FROM writes"):
            row = out.setdefault(thread, {"bytes": 0, "checkpoints": 0, "has_text": False})
            row["bytes"] += len(value or b"")
            row["has_text"] |= needle in (value or b"")
    return out


class _PaperState(TypedDict, total=False):
    paper_text: str
    results: dict[str, Any]


def _plain_paper_graph(
    results: dict[str, Any],
) -> StateGraph[_PaperState, None, _PaperState, _PaperState]:
    """Three nodes that return the results sagagraph's agents produced; the text is in state."""
    graph: StateGraph[_PaperState, None, _PaperState, _PaperState] = StateGraph(_PaperState)

    def node(step: str) -> Any:
        def run(state: _PaperState) -> dict[str, Any]:
            return {"results": {**(state.get("results") or {}), step: results[step]}}

        return run

    for step in PAPER_STEPS:
        graph.add_node(step, node(step))
    graph.add_edge(START, PAPER_STEPS[0])
    for a, b in zip(PAPER_STEPS, (*PAPER_STEPS[1:], END), strict=True):
        graph.add_edge(a, b)
    return graph


def checkpoint_bytes(sagas: int = 3) -> dict[str, Any]:
    """Median bytes per saga of both sides, on one real paper."""
    paper_path = sample_paper()
    text = load_paper(paper_path).text
    needle = text[len(text) // 2 : len(text) // 2 + 200].encode()
    with TemporaryDirectory(prefix="sagagraph-bench-") as tmp:
        db = Path(tmp) / "bytes.sqlite"
        with open_checkpointer(f"sqlite:///{db}") as checkpointer:
            definition = paper_saga_definition(outputs_dir=Path(tmp) / "outputs")
            app = build_saga_graph(definition).compile(checkpointer=checkpointer)
            views = [
                run_saga(app, {"paper": str(paper_path)}, saga_id=f"paper-{i}")
                for i in range(sagas)
            ]
            assert all(v["status"] == "completed" for v in views), views[0]["reason"]
            plain = _plain_paper_graph(views[0]["results"]).compile(checkpointer=checkpointer)
            for i in range(sagas):
                plain.invoke(
                    {"paper_text": text},
                    {"configurable": {"thread_id": f"plain-{i}"}},
                    durability="sync",
                )
        per_thread = _bytes_per_thread(db, needle)
    ours = [v for k, v in per_thread.items() if k.startswith("paper-")]
    theirs = [v for k, v in per_thread.items() if k.startswith("plain-")]
    return {
        "paper": paper_path.name,
        "paper_text_bytes": len(text.encode()),
        "sagagraph_bytes": sorted(r["bytes"] for r in ours)[len(ours) // 2],
        "sagagraph_checkpoints": ours[0]["checkpoints"],
        "sagagraph_text_in_checkpoints": any(r["has_text"] for r in ours),
        "plain_bytes": sorted(r["bytes"] for r in theirs)[len(theirs) // 2],
        "plain_checkpoints": theirs[0]["checkpoints"],
        "plain_text_in_checkpoints": any(r["has_text"] for r in theirs),
    }


class _CountingAgent(FakeAgent):
    """A fake agent that counts the sagas inside a model call right now, and the most seen."""

    inside = 0
    most = 0

    async def aexecute(self, ctx: Any) -> Any:
        cls = _CountingAgent
        cls.inside += 1
        cls.most = max(cls.most, cls.inside)
        try:
            return await super().aexecute(ctx)
        finally:
            cls.inside -= 1


async def _in_flight(engine: str, sagas: int, db: str) -> dict[str, Any]:
    agents: list[FakeAgent] = [
        _CountingAgent(name, IN_FLIGHT_LATENCY) for name in ("validator", "reviewer", "summarizer")
    ]
    if engine == "sagagraph":
        from sagagraph.checkpoints.async_factory import open_async_checkpointer
        from sagagraph.graph.async_runner import arun_saga

        async with open_async_checkpointer(f"sqlite:///{db}") as checkpointer:
            app = build_saga_graph(fake_definition(agents)).compile(checkpointer=checkpointer)
            before = current_rss_mb()
            start = time.perf_counter()
            views = await asyncio.gather(
                *(arun_saga(app, PAPER_INPUT, saga_id=f"saga-{i}") for i in range(sagas))
            )
            done = sum(v["status"] == "completed" for v in views)
    else:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(db) as checkpointer:
            plain = plain_graph(agents, asynchronous=True).compile(checkpointer=checkpointer)
            before = current_rss_mb()
            start = time.perf_counter()
            outs = await asyncio.gather(
                *(
                    plain.ainvoke(
                        plain_input(),
                        thread(f"saga-{i}"),
                        durability="sync",
                    )
                    for i in range(sagas)
                )
            )
            done = sum(len(o.get("results") or {}) == 3 for o in outs)
    return {
        "engine": engine,
        "sagas": sagas,
        "completed": done,
        "most_in_flight": _CountingAgent.most,
        "wall_s": time.perf_counter() - start,
        "rss_before_mb": before,
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.footprint")
    parser.add_argument("--engine", choices=["sagagraph", "plain"], required=True)
    parser.add_argument("--sagas", type=int, default=1000)
    parser.add_argument("--db", required=True)
    args = parser.parse_args()
    emit(asyncio.run(_in_flight(args.engine, args.sagas, args.db)))


def run(*, quick: bool = False, runs: int = 5) -> dict[str, Any]:
    """Checkpoint bytes (deterministic: one count), and peak memory over ``runs`` processes."""
    sagas = 200 if quick else 1000
    runs = 2 if quick else max(runs, 5)
    result: dict[str, Any] = {"checkpoint_bytes": checkpoint_bytes(2 if quick else 3)}
    samples: dict[str, list[dict[str, Any]]] = {"sagagraph": [], "plain": []}
    with TemporaryDirectory(prefix="sagagraph-bench-") as tmp:
        for r in range(runs):
            for engine in ("sagagraph", "plain") if r % 2 == 0 else ("plain", "sagagraph"):
                db = Path(tmp) / f"{engine}-{r}.sqlite"
                samples[engine].append(
                    run_child(
                        "footprint", "--engine", engine, "--sagas", str(sagas), "--db", str(db)
                    )
                )
    for engine, outs in samples.items():
        result[f"in_flight_{engine}"] = {
            "sagas": sagas,
            "peak_rss_mb": spread([o["peak_rss_mb"] for o in outs]),
            "per_saga_kb": spread(
                [(o["peak_rss_mb"] - o["rss_before_mb"]) * 1024 / sagas for o in outs]
            ),
            "most_in_flight": min(o["most_in_flight"] for o in outs),
            "runs": outs,
        }
    return result


if __name__ == "__main__":
    main()
