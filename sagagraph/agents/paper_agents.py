"""The three participants of the paper saga: validator, reviewer and summarizer.

Each one loads the paper through the saga's ``loader``, asks its ``engine`` for its
structured result, writes one file through its ``store`` (the three are :class:`PaperDeps`) under
``<outputs>/<saga_id>/`` and keeps the result in the saga state (``StepResult.data``). Its
compensation deletes that file; the store remembers the compensation, so a late write (a
model call that returns after its step timed out and was compensated) is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sagagraph.agents.engine import PaperEngine, Review, ValidationReport
from sagagraph.agents.offline_engine import OFFLINE_REVIEW_NOTE
from sagagraph.agents.paper import Paper, PaperTooShortError
from sagagraph.agents.pdf.loader import PaperLoader
from sagagraph.agents.reply_checks import checked_review
from sagagraph.agents.store import OutputStore
from sagagraph.agents.validation_rules import PART_LABELS, confirm_reported_results
from sagagraph.agents.words import count_words
from sagagraph.errors import InputError, MalformedModelOutput
from sagagraph.saga.execution import emit_event
from sagagraph.saga.protocol import StepContext, StepResult
from sagagraph.saga.view import make_event

QUOTE_CHECK = "quote_check"
"""Action of the reviewer's events for a point dropped because its quote is not in the paper."""
VALIDATION_FILE = "validation.txt"
REVIEW_FILE = "review.txt"
SUMMARY_FILE = "summary.txt"


@dataclass(frozen=True)
class PaperDeps:
    """What the paper saga's steps use: ``ctx.deps`` of each of them."""

    engine: PaperEngine
    """Validates, reviews and summarizes (offline or a model)."""
    loader: PaperLoader
    """Loads the paper (it holds an encrypted PDF's password, which never enters state)."""
    store: OutputStore
    """Writes and deletes each step's file under ``<outputs>/<saga_id>/``."""

    def recorded_settings(self) -> dict[str, str]:
        """The outputs folder, recorded in each saga so a resume writes and deletes there."""
        return self.store.recorded_settings()


PaperContext = StepContext[PaperDeps]
"""The context of a paper saga's step."""


def paper_path(ctx: StepContext) -> str:
    """The paper's path from the saga input ``{"paper": "<path>"}``."""
    value = ctx.input.get("paper")
    if not isinstance(value, str) or not value.strip():
        raise InputError("saga input 'paper': expected the path of a .pdf, .txt or .md file")
    return value


class PaperAgent:
    """What the three agents share: loading the paper, writing and deleting their file."""

    name: str
    file_name: str

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def _paper(self, ctx: PaperContext) -> Paper:
        return ctx.deps.loader.load(paper_path(ctx))

    def _write(self, ctx: PaperContext, text: str) -> str:
        return str(ctx.deps.store.write(ctx.idempotency_key, self.file_name, text))

    def compensate(self, ctx: PaperContext, result: StepResult | None) -> None:
        """Delete this step's file (and the saga folder once empty); idempotent."""
        ctx.deps.store.compensate(ctx.idempotency_key, names=(self.file_name,))


def render_validation(paper: Paper, report: ValidationReport) -> str:
    """The text of ``validation.txt``."""
    lines = [
        f"Validation of: {paper.title}",
        f"Source: {paper.source} ({len(paper.pages)} page(s))",
        f"Verdict: {'complete research paper' if report.is_valid else 'incomplete'}",
        f"Reason: {report.reason}",
        "",
        "Required parts:",
    ]
    lines += [f"  {p.part:<13} p.{p.page:<4} {p.heading}" for p in report.found]
    lines += [f"  {m:<13} missing ({PART_LABELS.get(m, m)})" for m in report.missing]
    lines += ["", "Outline:", *(f"  {line}" for line in paper.outline().splitlines())]
    return "\n".join(lines) + "\n"


def render_review(paper: Paper, review: Review, engine: str = "") -> str:
    """The text of ``review.txt``; an ``offline`` review says it is a heuristic one."""
    lines = [f"Review of: {paper.title}", ""]
    if engine == "offline":
        lines += [OFFLINE_REVIEW_NOTE, ""]
    if review.kind:
        lines += [f"Kind of paper: {review.kind}", ""]
    for heading, items in (
        ("Strengths", review.strengths),
        ("Weaknesses", review.weaknesses),
        ("Suggestions for improvement", review.suggestions),
    ):
        lines += [heading, *(f"- {item}" for item in items), ""]
    return "\n".join(lines)


class ValidatorAgent(PaperAgent):
    """Step ``validator``: halts the saga when the paper is not a complete research paper."""

    name = "validator"
    file_name = VALIDATION_FILE

    def __init__(self, profile: bool = False) -> None:
        self.profile = profile
        """Add the paper's profile (kind, experiments: :mod:`sagagraph.agents.paper_profile`) to
        the findings, for the adaptive pipeline's routers."""

    def __repr__(self) -> str:
        return f"ValidatorAgent(profile={self.profile})" if self.profile else "ValidatorAgent()"

    def execute(self, ctx: PaperContext) -> StepResult:
        engine = ctx.deps.engine
        paper = self._paper(ctx)
        report, usage = engine.validate(paper)
        # Any engine's verdict: headings alone cannot tell a research plan from a paper.
        report = confirm_reported_results(report, paper)
        data: dict[str, Any] = report.model_dump()
        if self.profile:
            from sagagraph.agents.paper_profile import profile_paper

            data["profile"] = dict(profile_paper(paper))
        if not report.is_valid or report.missing:
            why = f"missing {', '.join(report.missing)}" if report.missing else report.reason
            if "results" in report.missing:  # a plan: the reason names the evidence
                why = report.reason.removeprefix("Not a complete research paper: ")
            return StepResult(
                data=data, halt=True, reason=f"not a complete research paper: {why}", usage=usage
            )
        output = self._write(ctx, render_validation(paper, report))
        return StepResult(data=data, output=output, usage=usage)


class ReviewerAgent(PaperAgent):
    """Step ``reviewer``: strengths, weaknesses and suggestions, in ``review.txt``.

    Whatever the engine, every point's quote is checked against the paper's pages before the
    file is written; each point dropped is a ``quote_check`` event of the step.
    """

    name = "reviewer"
    file_name = REVIEW_FILE

    def execute(self, ctx: PaperContext) -> StepResult:
        engine = ctx.deps.engine
        paper = self._paper(ctx)
        review, usage = engine.review(paper)
        review = checked_review(review, paper.pages)
        for why in review.dropped:
            emit_event(make_event(self.name, QUOTE_CHECK, "dropped", ctx.attempt, why))
        output = self._write(ctx, render_review(paper, review, engine.name))
        return StepResult(data=review.model_dump(), output=output, usage=usage)


class SummarizerAgent(PaperAgent):
    """Step ``summarizer``: a summary of exactly ``words`` words, in ``summary.txt``."""

    name = "summarizer"
    file_name = SUMMARY_FILE

    def __init__(self, words: int = 300) -> None:
        self.words = words
        """Exact length of the summary, in words (``len(text.split())``)."""

    def __repr__(self) -> str:
        return f"SummarizerAgent(words={self.words})"

    def execute(self, ctx: PaperContext) -> StepResult:
        engine = ctx.deps.engine
        paper = self._paper(ctx)
        if paper.word_count < self.words:
            # Checked before any model call: no engine can summarise into more words than exist.
            raise PaperTooShortError(
                f"{paper.source}: {paper.word_count} words, too short for a "
                f"{self.words}-word summary"
            )
        summary, usage = engine.summarize(paper, self.words)
        got = count_words(summary.text)
        if got != self.words:
            raise MalformedModelOutput(
                f"engine {engine.name!r} returned a {got}-word summary; {self.words} required"
            )
        output = self._write(ctx, summary.text.strip() + "\n")
        return StepResult(data=summary.model_dump(), output=output, usage=usage)
