"""5. Big input: a generated 500-page PDF through the offline pipeline.

A fresh process generates the paper (:mod:`bench.pdfgen`), loads it once on its own (pages
per second of loading), then runs the whole paper saga with the offline engine on a SQLite
checkpointer: wall time, and the process's peak resident memory over all of it. Five such
processes (each on a fresh PDF): medians and ranges.

    python -m bench.big_input --pages 500 --dir /tmp/somewhere
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from bench.common import emit, peak_rss_mb, run_child, spread

PAGES = 500
TARGET_MB = 500


def measure(pages: int, folder: Path) -> dict[str, Any]:
    from bench.pdfgen import write_paper_pdf
    from sagagraph import build_saga_graph, open_checkpointer, run_saga
    from sagagraph.agents.paper_parsing import load_paper
    from sagagraph.agents.paper_saga import paper_saga_definition

    pdf = write_paper_pdf(folder / f"paper-{pages}p.pdf", pages)
    start = time.perf_counter()
    paper = load_paper(pdf)
    load_s = time.perf_counter() - start
    assert len(paper.pages) == pages, len(paper.pages)
    del paper

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
        "load_s": load_s,
        "pages_per_s": pages / load_s,
        "saga_s": saga_s,
        "status": view["status"],
        "summary_words": len(summary.split()),
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.big_input")
    parser.add_argument("--pages", type=int, default=PAGES)
    parser.add_argument("--dir", type=Path, required=True)
    args = parser.parse_args()
    emit(measure(args.pages, args.dir))


def run(*, quick: bool = False, runs: int = 5) -> dict[str, Any]:
    """``runs`` fresh processes, each on a fresh PDF: every figure's median and range."""
    pages = 50 if quick else PAGES
    runs = 2 if quick else max(runs, 5)
    outs = []
    for _ in range(runs):
        with TemporaryDirectory(prefix="sagagraph-bench-") as tmp:
            outs.append(run_child("big_input", "--pages", str(pages), "--dir", tmp))
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
