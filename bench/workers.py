"""6. Workers: wall time for submitted sagas run by 1, 2 and 4 ``sagagraph worker`` processes
(Celery workers, thread pool, ``--concurrency 16``).

Each saga is the paper pipeline with the ``openai`` engine (the real ``ChatOpenAI`` client)
against the scripted local server, which answers every step's one model call after
``latency`` (200 ms). The workers are started first and wait on a fresh queue; then the sagas
are submitted (recorded ``queued``, then published). The clock runs from the first saga a
worker takes to the last one that ends, read from the workers' log lines.

The shared state is PostgreSQL, what workers on several machines use; the same runs on one
SQLite file (workers on one machine only) are shown beside it. The ideal is what the workers'
slots allow with no engine at all: ``ceil(sagas / (workers * concurrency)) * 3 * latency``.
Each configuration runs five times on a fresh database (``--quick``: once): median and range.

    python -m bench.workers --sagas 500 --workers 1,2,4 --runs 5
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
import uuid
from contextlib import nullcontext
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from bench.common import ROOT, emit, postgres_database, spread

LATENCY = 0.2
CONCURRENCY = 16
WORKERS = (1, 2, 4)
STEPS = 3
AMQP_URL = os.environ.get("SAGAGRAPH_TEST_AMQP", "amqp://guest:guest@127.0.0.1:5672/")


_ENDED = re.compile(r"worker: saga \S+ \S+ in [\d.]+ s")
"""A worker's line for a saga that ended (completed, rolled back...)."""


def _ended(pool: list[Any]) -> list[str]:
    """The workers' lines for the sagas that ended so far."""
    return [line for w in pool for line in list(w.lines) if _ENDED.search(line)]


def ideal(sagas: int, workers: int, concurrency: int, latency: float) -> float:
    return math.ceil(sagas / (workers * concurrency)) * STEPS * latency


def one_run(db: str, sagas: int, workers: int, concurrency: int, latency: float) -> dict[str, Any]:
    from sagagraph.agents.paper_app import PAPER_APP, PaperSettings
    from sagagraph.workers import SagaRequest, submit_sagas
    from tests.support.queue_support import (
        WorkerProcess,
        counting_server,
        delete_queue,
        wait_for,
        write_papers,
    )

    queue = f"{AMQP_URL}?queue=sagagraph-bench-{uuid.uuid4().hex[:8]}"
    with (
        TemporaryDirectory(prefix="sagagraph-workers-") as tmp,
        counting_server(sagas, delay=latency) as (server, _model),
    ):
        folder = Path(tmp)
        papers = write_papers(folder / "papers", sagas)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
        env |= {"PYTHONPATH": str(ROOT), "OPENAI_BASE_URL": server.base_url}
        env |= {"OPENAI_API_KEY": "sk-bench"}
        flags = ["--db", db, "--queue", queue, "--concurrency", str(concurrency)]
        pool = [WorkerProcess(flags, cwd=folder, env=env) for _ in range(workers)]
        try:
            try:
                wait_for(
                    lambda: all(w.count("worker: consuming") for w in pool),
                    timeout=120,
                    what="the workers to start",
                )
            except AssertionError:
                raise RuntimeError("\n".join(line for w in pool for line in w.lines)) from None
            settings = PaperSettings.resolve(outputs=str(folder / "outputs"), llm="openai")
            recorded = settings.recorded()
            os.environ |= {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-bench"}
            submitted = time.perf_counter()
            submit_sagas(
                [SagaRequest({"paper": str(p), "settings": recorded}) for p in papers],
                app=PAPER_APP,
                queue=queue,
                db=db,
            )
            submit_s = time.perf_counter() - submitted
            wait_for(
                lambda: len(_ended(pool)) >= sagas,
                timeout=1800,
                what="every saga to end",
            )
            # A saga that rolled back ends the wait too: say so, instead of waiting for a
            # completion that never comes.
            others = [line for line in _ended(pool) if " completed in " not in line]
            if others:
                raise RuntimeError(f"{len(others)} saga(s) did not complete: {others[0]}")
            first = min(w.first_seen("took saga") for w in pool if w.count("took saga"))
            last = max(w.last_seen(" completed in ") for w in pool if w.count(" completed in "))
        finally:
            codes = [w.terminate() for w in pool]
        delete_queue(queue)
    wall = last - first
    best = ideal(sagas, workers, concurrency, latency)
    return {
        "workers": workers,
        "sagas": sagas,
        "concurrency": concurrency,
        "latency_s": latency,
        "wall_s": wall,
        "ideal_s": best,
        "vs_ideal": wall / best,
        "submit_s": submit_s,
        "exit_codes": codes,
    }


def run(
    *, sagas: int = 500, quick: bool = False, runs: int = 5, workers: tuple[int, ...] = WORKERS
) -> list[dict[str, Any]]:
    """Every worker count on PostgreSQL (skipped when unreachable), then on SQLite.

    Each configuration runs ``runs`` times on a fresh database: the wall time's median and range.
    """
    sagas = 48 if quick else sagas
    runs = 1 if quick else max(runs, 1)
    rows: list[dict[str, Any]] = []
    for backend in ("postgres", "sqlite"):
        for count in workers:
            outs: list[dict[str, Any]] = []
            for r in range(runs):
                print(
                    f"bench: workers: {backend}, {count} worker(s), run {r + 1}/{runs} ...",
                    file=sys.stderr,
                )
                shared = postgres_database() if backend == "postgres" else nullcontext(None)
                with TemporaryDirectory() as tmp, shared as pg:
                    db = pg if backend == "postgres" else f"sqlite:///{Path(tmp) / 'sagas.sqlite'}"
                    if db is None:
                        break
                    outs.append(one_run(db, sagas, count, CONCURRENCY, LATENCY))
            if not outs:
                rows.append({"backend": backend, "workers": count, "skipped": "no db"})
                continue
            wall = spread([o["wall_s"] for o in outs])
            rows.append(
                {
                    "backend": backend,
                    **{k: outs[0][k] for k in ("workers", "sagas", "concurrency", "latency_s")},
                    "ideal_s": outs[0]["ideal_s"],
                    "wall_s": wall,
                    "vs_ideal": wall["median"] / outs[0]["ideal_s"],
                    "runs": outs,
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.workers", description=__doc__)
    parser.add_argument("--sagas", type=int, default=500)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int, default=5, help="runs of each configuration")
    parser.add_argument("--workers", default="1,2,4", help="worker process counts: 1,2,4")
    args = parser.parse_args(argv)
    counts = tuple(int(n) for n in args.workers.split(","))
    emit({"workers": run(sagas=args.sagas, quick=args.quick, runs=args.runs, workers=counts)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
