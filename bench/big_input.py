"""5. Big input: a generated 500-page PDF through the offline pipeline.

A fresh process generates the paper (:mod:`bench.pdfgen`), loads it on its own ``--runs``
times (at least 5; pages per second of loading: the median, with the slowest and fastest run,
by the wall clock and by the process's CPU time, which a busy machine inflates less), then runs
the whole paper saga with the offline engine on a SQLite checkpointer: wall time, and the
process's peak resident memory over all of it. pypdf is imported before the first load, so
the figures are the loading's own, not the import's. ``make bench`` runs five such processes
(each on a fresh PDF, one timed load each) and reports every figure's median and range.

    python -m bench.big_input --pages 500 [--runs 5] [--dir /tmp/somewhere]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from bench.common import emit, median, peak_rss_mb, run_child, spread

PAGES = 500
TARGET_MB = 500
RUNS = 5
"""Loads measured per benchmark: the median and the spread are over these."""


def measure_loading(pdf: Path, pages: int, runs: int = RUNS) -> dict[str, Any]:
    """Load ``pdf`` ``runs`` times: pages per second, median and range, wall and CPU."""
    import pypdf  # noqa: F401  (imported before timing: start-up is not loading)

    from sagagraph.agents.pdf.loader import load_paper

    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(max(runs, 1)):
        start, start_cpu = time.perf_counter(), time.process_time()
        paper = load_paper(pdf)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        assert len(paper.pages) == pages, len(paper.pages)
        del paper
    rates = [pages / s for s in wall]
    return {
        "load_runs": len(wall),
        "load_s": median(wall),
        "pages_per_s": median(rates),
        "pages_per_s_min": min(rates),
        "pages_per_s_max": max(rates),
        "cpu_pages_per_s": median([pages / s for s in cpu]),
    }


def measure(pages: int, folder: Path, runs: int = RUNS) -> dict[str, Any]:
    from bench.pdfgen import write_paper_pdf
    from sagagraph import build_saga_graph, open_checkpointer, run_saga
    from sagagraph.agents.paper_saga import paper_saga_definition

    pdf = write_paper_pdf(folder / f"paper-{pages}p.pdf", pages)
    loading = measure_loading(pdf, pages, runs)

    definition = paper_saga_definition(outputs_dir=folder / "outputs")
    with open_checkpointer(f"sqlite:///{folder / 'big.sqlite'}") as checkpointer:
        app = build_saga_graph(definition).compile(checkpointer=checkpointer)
        start = time.perf_counter()
        view = run_saga(app, {"paper": str(pdf)}, saga_id="big")
        saga_s = time.perf_counter() - start
    summary = (folder / "outputs" / "big" / "summary.txt").read_text()
    return {
        "pages": pages,
        "pdf_mb": pdf.stat().st_size / 2**20,
        **loading,
        "saga_s": saga_s,
        "status": view["status"],
        "summary_words": len(summary.split()),
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.big_input")
    parser.add_argument("--pages", type=int, default=PAGES)
    parser.add_argument("--dir", type=Path, help="work folder (default: a temporary one)")
    parser.add_argument("--runs", type=int, default=RUNS, help=f"loads timed (default {RUNS})")
    args = parser.parse_args()
    if args.dir is not None:
        result = measure(args.pages, args.dir, max(args.runs, 1))
    else:
        with TemporaryDirectory(prefix="sagagraph-bench-") as tmp:
            result = measure(args.pages, Path(tmp), max(args.runs, 1))
    print(
        f"loading {result['pages']} pages, {result['load_runs']} runs: "
        f"{result['pages_per_s']:.0f} pages/s median "
        f"({result['pages_per_s_min']:.0f}–{result['pages_per_s_max']:.0f}), "
        f"{result['cpu_pages_per_s']:.0f} pages/s of CPU time; saga {result['saga_s']:.2f} s; "
        f"peak {result['peak_rss_mb']:.0f} MB",
        file=sys.stderr,
    )
    emit(result)


def run(*, quick: bool = False, runs: int = 5) -> dict[str, Any]:
    """``runs`` fresh processes, each on a fresh PDF: every figure's median and range."""
    pages = 50 if quick else PAGES
    runs = 2 if quick else max(runs, 5)
    outs = []
    for _ in range(runs):
        with TemporaryDirectory(prefix="sagagraph-bench-") as tmp:
            outs.append(run_child("big_input", "--pages", str(pages), "--dir", tmp, "--runs", "1"))
    result: dict[str, Any] = {
        "pages": pages,
        "pdf_mb": outs[0]["pdf_mb"],
        "status": "completed" if all(o["status"] == "completed" for o in outs) else "failed",
        "target_mb": TARGET_MB,
        "runs": outs,
    }
    for key in ("load_s", "pages_per_s", "saga_s", "peak_rss_mb"):
        result[key] = spread([o[key] for o in outs])
    return result


if __name__ == "__main__":
    main()
