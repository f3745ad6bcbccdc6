"""1. Engine overhead: time per saga with instant agents, sagagraph against a plain LangGraph graph.

Each backend (memory, SQLite, PostgreSQL) and each path (success; failure at the summarizer,
so two committed steps are compensated) runs in rounds. A round times ``per_round`` sagas of
each side back to back, the order alternating between rounds; the ratio is taken per round,
and the medians over rounds are reported. sagagraph runs through ``run_saga`` (what the CLI
calls: it also reads the saga's view before and after); the plain graph through ``invoke``.
Both use ``durability="sync"``.
"""

from __future__ import annotations

import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from bench.common import median, postgres_database
from bench.fake_saga import (
    PAPER_INPUT,
    fake_agents,
    fake_definition,
    plain_graph,
    plain_input,
    thread,
)
from sagagraph import CompensationMode, build_saga_graph, open_checkpointer, run_saga

TARGET = 1.25
PATHS: dict[str, tuple[str | None, CompensationMode]] = {
    "success": (None, "stepwise"),
    "failure": ("summarizer", "stepwise"),
    "failure, batch compensation": ("summarizer", "batch"),
}
"""Path name -> (failing step, compensation mode). Stepwise (the default) checkpoints each
compensation; batch undoes everything in one superstep, like the plain graph's one node."""


def _time_sagagraph(app: Any, tag: str, n: int, fail_at: str | None) -> float:
    expected = "rolled_back" if fail_at else "completed"
    start = time.perf_counter()
    for i in range(n):
        view = run_saga(app, PAPER_INPUT, saga_id=f"sg-{tag}-{i}", fail_at=fail_at)
        assert view["status"] == expected, view["status"]
    return (time.perf_counter() - start) / n


def _time_plain(app: Any, tag: str, n: int, fail_at: str | None) -> float:
    start = time.perf_counter()
    for i in range(n):
        out = app.invoke(plain_input(fail_at), thread(f"plain-{tag}-{i}"), durability="sync")
        assert bool(out.get("compensated")) == bool(fail_at), out
    return (time.perf_counter() - start) / n


def measure(
    url: str,
    fail_at: str | None,
    rounds: int,
    per_round: int,
    compensation: CompensationMode = "stepwise",
) -> dict[str, Any]:
    """Median seconds per saga of each side, and the median of the per-round ratios."""
    agents = fake_agents()
    with open_checkpointer(url) as checkpointer:
        graph = build_saga_graph(fake_definition(agents), compensation=compensation)
        sagagraph = graph.compile(checkpointer=checkpointer)
        plain = plain_graph(agents).compile(checkpointer=checkpointer)
        # One database holds every path: keep their ids apart.
        prefix = f"{fail_at or 'ok'}-{compensation}"
        _time_sagagraph(sagagraph, f"{prefix}-warmup", 5, fail_at)
        _time_plain(plain, f"{prefix}-warmup", 5, fail_at)
        ours: list[float] = []
        theirs: list[float] = []
        for r in range(rounds):
            tag = f"{prefix}-{r}"
            if r % 2:
                theirs.append(_time_plain(plain, tag, per_round, fail_at))
                ours.append(_time_sagagraph(sagagraph, tag, per_round, fail_at))
            else:
                ours.append(_time_sagagraph(sagagraph, tag, per_round, fail_at))
                theirs.append(_time_plain(plain, tag, per_round, fail_at))
    ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
    return {
        "sagagraph_s": median(ours),
        "plain_s": median(theirs),
        "ratio": median(ratios),
        "samples": {"sagagraph_s": ours, "plain_s": theirs},
    }


def run(*, rounds: int = 7, quick: bool = False) -> list[dict[str, Any]]:
    """Every backend and path; PostgreSQL is skipped (and said so) when it is unreachable."""
    rows: list[dict[str, Any]] = []
    per_round = {"memory": 100, "sqlite": 25, "postgres": 25}
    if quick:
        rounds, per_round = 3, {k: max(5, v // 5) for k, v in per_round.items()}
    with TemporaryDirectory(prefix="sagagraph-bench-") as tmp, postgres_database() as pg_url:
        urls = {
            "memory": "memory://",
            "sqlite": f"sqlite:///{Path(tmp) / 'overhead.sqlite'}",
            "postgres": pg_url,
        }
        for backend, url in urls.items():
            for path, (fail_at, compensation) in PATHS.items():
                row: dict[str, Any] = {"backend": backend, "path": path, "target": TARGET}
                if url is None:
                    row["skipped"] = "PostgreSQL unreachable at 127.0.0.1:5432"
                else:
                    row |= measure(url, fail_at, rounds, per_round[backend], compensation)
                rows.append(row)
    return rows
