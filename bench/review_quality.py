"""The offline reviewer and summarizer against the corpus ground truth: the review-quality table.

    python -m bench.review_quality               # ../shared/corpus and ../shared/corpus-next
    python -m bench.review_quality --points      # and every point with its verdict and why
    python -m bench.review_quality --markdown    # the table as docs/reviewer.md shows it
    python -m bench.review_quality --long-paper  # a 39-page paper's review: one call vs by sections

Every labelled PDF is loaded as ``sagagraph run`` loads it and reviewed and summarised by the
offline engine (the non-papers too, though the pipeline stops them at the validator: what the
reviewer says of a poster or a form must be true as well). Each review point is judged against
the PDF's label file (``tests/agents/review_labels``, :mod:`tests.agents.review_judge`): true,
vacuous, misleading, false, or unjudged. The kind is right, "not determined", or wrong. The
summary column says whether the 300-word summary holds the main result's number (when the
abstract prints one) and which debris classes it carries (roadmap sentence, a sentence that
needs a figure or table, a dangling "this", a repeat). The last rows are the totals and shares.

``--long-paper`` reviews and summarises the corpus's longest paper with the openai engine
against the scripted OpenAI-compatible server (tests/support/openai_server.py), once with a
128k-token window (one request) and once with an 8k one that refuses longer requests (by
sections), and prints the requests and tokens each spent, as the server counts them.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import bench.common  # noqa: F401  (puts the repository root on sys.path for tests.*)
from sagagraph.agents.offline_engine import OfflineEngine
from sagagraph.agents.paper import PaperTooShortError
from sagagraph.agents.pdf.loader import PaperLoader
from sagagraph.agents.words import count_words
from sagagraph.errors import PaperLoadError
from tests.agents.review_judge import (
    VERDICTS,
    Judged,
    KindVerdict,
    holds_number,
    judge_kind,
    judge_review,
    read_labels,
    summary_debris,
)
from tests.support.corpus import MISSING, CorpusPdf, corpus_pdfs

WORDS = 300


@dataclass
class Row:
    """One PDF's review and summary, judged."""

    file: str
    label: str
    kind: KindVerdict | None = None
    review_kind: str = ""
    points: list[Judged] = field(default_factory=list)
    summary: str = "-"
    """``ok``, the problems found, or why there is none (``too short``, ``not loaded``)."""
    note: str = ""

    def count(self, verdict: str) -> int:
        return sum(1 for p in self.points if p.verdict == verdict)


def review_row(loader: PaperLoader, engine: OfflineEngine, pdf: CorpusPdf) -> Row:
    """Load, review and summarise one PDF, and judge the results against its labels."""
    labels = read_labels(pdf.folder.name, pdf.name)
    row = Row(pdf.id, pdf.label)
    try:
        paper = loader.load(pdf.path())
    except PaperLoadError as error:
        row.note = f"not loaded: {str(error).split(': ', 1)[-1][:60]}"
        return row
    review, _ = engine.review(paper)
    row.review_kind = review.kind
    row.kind = judge_kind(review.kind, labels)
    row.points = judge_review(review, labels)
    try:
        summary, _ = engine.summarize(paper, WORDS)
    except PaperTooShortError:
        row.summary = "too short"
        return row
    problems = []
    if count_words(summary.text) != WORDS:
        problems.append(f"{count_words(summary.text)} words")
    if not holds_number(summary.text, labels.abstract_numbers):
        problems.append(f"no {labels.abstract_numbers[0]}")
    debris = Counter(name for name, _ in summary_debris(summary.text))
    problems += [f"{n}×{c}" if c > 1 else n for n, c in sorted(debris.items())]
    row.summary = "; ".join(problems) or "ok"
    return row


def all_rows() -> list[Row]:
    """A row for every labelled PDF of the corpus and corpus-next."""
    loader = PaperLoader()
    engine = OfflineEngine()
    rows = []
    for pdf in corpus_pdfs():
        if pdf.name == MISSING:
            continue
        rows.append(review_row(loader, engine, pdf))
    return rows


HEADER = ("file", "label", "kind", "points", *VERDICTS, "summary")


def table(rows: Sequence[Row]) -> list[tuple[str, ...]]:
    """The table's lines (header first, totals and shares last)."""
    lines: list[tuple[str, ...]] = [HEADER]
    for r in rows:
        kind = r.kind or r.note or "-"
        counts = [str(r.count(v)) for v in VERDICTS]
        lines.append((r.file, r.label, kind, str(len(r.points)), *counts, r.summary))
    for name, group in (
        ("papers", [r for r in rows if r.label == "valid"]),
        ("not papers", [r for r in rows if r.label != "valid"]),
    ):
        lines += totals(name, group)
    return lines


def totals(name: str, rows: Sequence[Row]) -> list[tuple[str, ...]]:
    """The total and share lines of a group of rows."""
    total = sum(len(r.points) for r in rows)
    sums = [sum(r.count(v) for r in rows) for v in VERDICTS]
    kinds = Counter(r.kind for r in rows if r.kind)
    kind_cell = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    summaries = Counter("ok" if r.summary == "ok" else "not ok" for r in rows if r.kind)
    summary_cell = ", ".join(f"{k} {n}" for k, n in sorted(summaries.items()))
    shares = [f"{100 * s / total:.0f}%" if total else "-" for s in sums]
    return [
        (f"total, {name}", "", kind_cell, str(total), *map(str, sums), summary_cell),
        (f"share, {name}", "", "", "", *shares, ""),
    ]


def render(lines: Sequence[tuple[str, ...]], markdown: bool) -> str:
    if markdown:
        out = ["| " + " | ".join(lines[0]) + " |", "|" + "---|" * len(lines[0])]
        out += ["| " + " | ".join(line) + " |" for line in lines[1:]]
        return "\n".join(out)
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


LONG_PAPER = "papers/paperplain_2203.00130v1.pdf"


def _long_paper_path() -> Path:
    return next(p for p in corpus_pdfs() if p.name == LONG_PAPER).path()


def long_paper_tokens() -> list[tuple[str, ...]]:
    """Requests and tokens of a long paper's review and summary, one call vs by sections."""
    from sagagraph.agents.models import make_chat_model
    from sagagraph.agents.openai_engine import OpenAIEngine
    from tests.agents.long_paper_model import reviewing_model
    from tests.support.openai_server import ScriptedOpenAIServer

    paper = PaperLoader().load(_long_paper_path())
    lines: list[tuple[str, ...]] = [
        ("context", "step", "requests", "input tokens", "output tokens", "points kept")
    ]
    for window, limit in ((128_000, None), (8_192, 8_192)):
        for step in ("reviewer", "summarizer"):
            calls: list[str] = []
            with ScriptedOpenAIServer(
                reviewing_model(calls, invent=False), max_prompt_tokens=limit
            ) as server:
                chat = make_chat_model("llama3.1:8b", base_url=server.base_url, api_key="local")
                engine = OpenAIEngine(chat, context_tokens=window)
                if step == "reviewer":
                    review, usage = engine.review(paper)
                    kept = len(review.strengths + review.weaknesses + review.suggestions)
                else:
                    _, usage = engine.summarize(paper, WORDS)
                    kept = 0
            lines.append(
                (
                    f"{window:,} tokens",
                    step,
                    str(len(server.requests)),
                    f"{usage['input_tokens']:,}",
                    f"{usage['output_tokens']:,}",
                    str(kept) if step == "reviewer" else "-",
                )
            )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.review_quality", description=__doc__)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--points", action="store_true", help="list every point and its verdict")
    parser.add_argument(
        "--long-paper", action="store_true", help="tokens of a long paper: one call vs sections"
    )
    args = parser.parse_args(argv)
    if args.long_paper:
        pages = len(PaperLoader().load(_long_paper_path()).pages)
        print(f"{LONG_PAPER} ({pages} pages), the openai engine against a scripted server")
        print(render(long_paper_tokens(), args.markdown))
        return 0
    rows = all_rows()
    print(render(table(rows), args.markdown))
    if args.points:
        for r in rows:
            print(f"\n## {r.file}  (kind: {r.kind}: {r.review_kind[:120]})")
            for p in r.points:
                print(f"- [{p.verdict}] {p.part}: {p.point[:260]}\n    ({p.why})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
