"""The participants of the paper saga: validator, reviewer and summarizer, and the adaptive
pipeline's ``survey_reviewer`` and ``reproducibility`` with the paper profile they are chosen by.

Each one loads the paper through the saga's ``loader``, asks its ``engine`` for its
structured result, writes one file through its ``store`` (the three are :class:`PaperDeps`) under
``<outputs>/<saga_id>/`` and keeps the result in the saga state (``StepResult.data``). Its
compensation deletes that file; the store remembers the compensation, so a late write (a
model call that returns after its step timed out and was compensated) is refused.

The adaptive pipeline's validator adds the paper's profile to its findings
(:func:`profile_paper`: what kind of paper this is, and whether it reports experiments); the
pipeline's rules choose by it (``reviewer`` or ``survey_reviewer``; ``reproducibility`` or
not) and the LLM router sees it. It is read from the paper's title, abstract and section
headings, by rules: no model call, the same on every engine.

- ``survey``: the title says survey, review or overview, or the abstract says the paper itself
  is one ("this survey", "we review the literature") and no experiment section follows;
- ``position``: no experiment section, and the abstract argues ("position paper", "we argue");
- ``theory``: no experiment section, and headings of theorems, proofs or lemmas;
- ``empirical``: a section reports experiments, an evaluation or results;
- otherwise, with no experiment section, ``position``.

The two extra participants read the paper by rules over its text too (no model call, so they
cost no tokens and read the same on every engine):

- :func:`survey_review`: coverage (how many works it cites, how many sections treat them),
  taxonomy (how the body is organised: its top-level parts and their subsections) and recency
  (the years cited, and the share from the five years before the newest), each finding naming
  the section and page it rests on.
- :func:`reproducibility_check`: which artefacts the paper names (code, data, random seeds,
  hardware), each with up to two quotes and their pages, and which it does not name.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from sagagraph.agents.engine import PaperEngine, Review, ValidationReport
from sagagraph.agents.offline_engine import OFFLINE_REVIEW_NOTE
from sagagraph.agents.paper import Paper, PaperTooShortError, Section
from sagagraph.agents.pdf.loader import PaperLoader
from sagagraph.agents.reply_checks import checked_review
from sagagraph.agents.store import OutputStore
from sagagraph.agents.validation_rules import PART_LABELS, confirm_reported_results
from sagagraph.agents.words import count_words, split_sentences
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
        """Add the paper's profile (kind, experiments: :func:`profile_paper`) to
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


PaperKind = Literal["empirical", "survey", "position", "theory"]

REVIEWED_AS_SURVEY: tuple[PaperKind, ...] = ("survey", "position", "theory")
"""Kinds the survey reviewer suits: coverage, taxonomy and recency, not experiments."""

_TITLE_SURVEY = re.compile(r"\b(survey|review|overview|state of the art)\b", re.IGNORECASE)
_ABSTRACT_SURVEY = re.compile(
    r"\b(this (survey|review)|in this (survey|review)|we survey the|we review the"
    r"|systematic (literature )?review|this (paper|article) (surveys|reviews))\b",
    re.IGNORECASE,
)
_POSITION = re.compile(
    r"\b(position paper|we argue|this paper argues|we call for|research agenda)\b", re.IGNORECASE
)
_THEORY = re.compile(r"\b(theorems?|proofs?|lemmas?|propositions?)\b", re.IGNORECASE)
_EXPERIMENTS = re.compile(
    r"\b(experiments?|experimental|evaluations?|results|ablations?|benchmarks?|empirical"
    r"|user stud(y|ies)|usability stud(y|ies))\b",
    re.IGNORECASE,
)
_SHOWN = 80
"""Characters of a heading kept as evidence."""


class PaperProfile(TypedDict):
    """The kind of a paper, whether it reports experiments, and the evidence for both."""

    kind: PaperKind
    reports_experiments: bool
    """True when a section of the body reports experiments, an evaluation or results."""
    evidence: list[str]
    """Why, in a few short phrases (the headings or cues that decided)."""


def _shown(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def profile_paper(paper: Paper) -> PaperProfile:
    """The paper's profile, by the rules in the module docstring."""
    headings = [s.heading for s in paper.main_sections()]
    experiments = [h for h in headings if _EXPERIMENTS.search(h)]
    abstract = paper.abstract or ""
    evidence = [f"experiment section: {_shown(h)}" for h in experiments[:3]]
    if _TITLE_SURVEY.search(paper.title):
        return _profile("survey", False, [f"title: {_shown(paper.title)}", *evidence])
    survey_cue = _ABSTRACT_SURVEY.search(abstract)
    if survey_cue and not experiments:
        return _profile("survey", False, [f"abstract: {survey_cue.group(0)!r}"])
    if experiments:
        return _profile("empirical", True, evidence)
    position_cue = _POSITION.search(abstract)
    if position_cue:
        return _profile("position", False, [f"abstract: {position_cue.group(0)!r}"])
    theory = [h for h in headings if _THEORY.search(h)]
    if theory:
        return _profile("theory", False, [f"section: {_shown(h)}" for h in theory[:3]])
    return _profile("position", False, ["no section reports experiments"])


def _profile(kind: PaperKind, experiments: bool, evidence: list[str]) -> PaperProfile:
    return {"kind": kind, "reports_experiments": experiments, "evidence": evidence}


ARTEFACTS: dict[str, re.Pattern[str]] = {
    "code": re.compile(
        r"(github\.com|gitlab\.com|bitbucket\.org|source code|our code|the code|code is"
        r"|open[- ]source|implementation is (publicly )?available|release[sd]? (the|our) code)",
        re.IGNORECASE,
    ),
    "data": re.compile(
        r"\b(datasets?|corpus|corpora|data (is|are|was|were) (publicly )?(available|released|"
        r"collected)|we (collect|release)|training data|test set|benchmark)\b",
        re.IGNORECASE,
    ),
    "seeds": re.compile(
        r"\b(random seeds?|seeds?\b|seeded|runs with different|averaged over \d+ runs"
        r"|standard deviation|variance across runs)",
        re.IGNORECASE,
    ),
    "hardware": re.compile(
        r"\b(GPUs?|TPUs?|CPUs?|V100|A100|P100|H100|K80|RTX|NVIDIA|cores|RAM|GB of memory"
        r"|machines? with|hours? (on|of training)|training time|wall[- ]clock)\b",
    ),
}
"""What counts as naming each artefact, in a sentence of the paper."""

QUOTES_PER_ARTEFACT = 2
_QUOTE_CHARS = 220
_YEAR = re.compile(r"\b(19[5-9]\d|20[0-4]\d)\b")
_ENTRY_START = re.compile(r"^\s*(\[\d+\]|\d+\.\s|[A-Z][A-Za-z'’-]+,\s+[A-Z])")
RECENT_YEARS = 5
"""A citation is recent when it is at most this many years older than the newest one."""


def _quote(sentence: str) -> str:
    text = " ".join(sentence.split())
    return text if len(text) <= _QUOTE_CHARS else text[: _QUOTE_CHARS - 3] + "..."


def _body_sections(paper: Paper) -> Iterator[Section]:
    """Every section but the references (appendices included: artefacts often sit there)."""
    references = paper.references_section()
    for section in paper.sections:
        if section is not references:
            yield section


def reproducibility_check(paper: Paper) -> dict[str, Any]:
    """Which artefacts the paper names, with quotes (``{"named": {...}, "missing": [...]}``)."""
    named: dict[str, list[dict[str, Any]]] = {}
    for section in _body_sections(paper):
        for sentence in split_sentences(section.text):
            for artefact, pattern in ARTEFACTS.items():
                quotes = named.setdefault(artefact, [])
                if len(quotes) < QUOTES_PER_ARTEFACT and pattern.search(sentence):
                    quotes.append(
                        {
                            "quote": _quote(sentence),
                            "section": section.heading,
                            "page": section.page,
                        }
                    )
    found = {a: q for a, q in named.items() if q}
    missing = [a for a in ARTEFACTS if a not in found]
    return {"named": found, "missing": missing}


def render_reproducibility(paper: Paper, check: dict[str, Any]) -> str:
    """The text of ``reproducibility.txt``."""
    lines = [f"Reproducibility of: {paper.title}", ""]
    for artefact in ARTEFACTS:
        quotes = check["named"].get(artefact)
        if not quotes:
            lines += [f"{artefact}: not named", ""]
            continue
        lines.append(f"{artefact}: named")
        lines += [f'  p.{q["page"]} ({q["section"]}): "{q["quote"]}"' for q in quotes]
        lines.append("")
    named = len(ARTEFACTS) - len(check["missing"])
    lines.append(f"Named {named} of {len(ARTEFACTS)} artefacts.")
    return "\n".join(lines) + "\n"


def _reference_years(paper: Paper) -> list[int]:
    """One year per reference entry (its last year-like number), as well as a PDF's text allows."""
    references = paper.references_section()
    if references is None:
        return []
    years: list[int] = []
    entry: list[str] = []
    for line in [*references.text.splitlines(), "[end]"]:
        if _ENTRY_START.match(line) and entry:
            found = _YEAR.findall(" ".join(entry))
            if found:
                years.append(int(found[-1]))
            entry = []
        entry.append(line)
    if len(years) < 3:  # no entry structure survived extraction: count years instead
        years = [int(y) for y in _YEAR.findall(references.text)]
    return years


def survey_review(paper: Paper) -> dict[str, Any]:
    """Coverage, taxonomy and recency findings, each citing the section and page."""
    body = [s for s in paper.main_sections() if s.name != "abstract"]
    top = [s for s in body if s.level == 1]
    references = paper.references_section()
    where = f"{references.heading}, p.{references.page}" if references else "no reference list"
    years = _reference_years(paper)
    coverage = [
        f"cites about {len(years)} dated works ({where})",
        f"treats them in {len(body)} sections and subsections, {len(top)} top-level",
    ]
    parts: list[tuple[Section, list[str]]] = []
    for section in body:
        if section.level == 1 or not parts:
            parts.append((section, []))
        else:
            parts[-1][1].append(section.title)
    taxonomy = [
        f"{s.heading} (p.{s.page}): "
        + (f"{len(subs)} part(s): {', '.join(subs[:4])}" if subs else "no subsection")
        for s, subs in parts[:8]
    ]
    if not any(s.level > 1 for s in body):
        taxonomy.append("no subsections: the organisation is flat, with no explicit taxonomy")
    recency: list[str] = []
    if years:
        newest = max(years)
        recent = sum(1 for y in years if y >= newest - RECENT_YEARS)
        recency = [
            f"cited years {min(years)}-{newest}, median {int(statistics.median(years))} ({where})",
            f"{recent} of {len(years)} ({100 * recent // len(years)}%) from {newest - RECENT_YEARS}"
            f" or later",
        ]
    else:
        recency = [f"no dated reference found ({where})"]
    return {"coverage": coverage, "taxonomy": taxonomy, "recency": recency}


def render_survey_review(paper: Paper, review: dict[str, Any]) -> str:
    """The text of ``survey_review.txt``."""
    lines = [f"Survey review of: {paper.title}", ""]
    for heading, key in (
        ("Coverage", "coverage"),
        ("Taxonomy", "taxonomy"),
        ("Recency", "recency"),
    ):
        lines += [heading, *(f"- {item}" for item in review[key]), ""]
    return "\n".join(lines)


SURVEY_REVIEW_FILE = "survey_review.txt"
REPRODUCIBILITY_FILE = "reproducibility.txt"


class SurveyReviewerAgent(PaperAgent):
    """Step ``survey_reviewer``: coverage, taxonomy and recency, in ``survey_review.txt``;
    the alternative of ``reviewer`` for surveys, position and theory papers."""

    name = "survey_reviewer"
    file_name = SURVEY_REVIEW_FILE

    def execute(self, ctx: PaperContext) -> StepResult:
        paper = self._paper(ctx)
        review = survey_review(paper)
        output = self._write(ctx, render_survey_review(paper, review))
        return StepResult(data=review, output=output)


class ReproducibilityAgent(PaperAgent):
    """Step ``reproducibility``: which artefacts the paper names (code, data, seeds, hardware),
    with quotes, in ``reproducibility.txt``; optional, for papers that report experiments."""

    name = "reproducibility"
    file_name = REPRODUCIBILITY_FILE

    def execute(self, ctx: PaperContext) -> StepResult:
        paper = self._paper(ctx)
        check = reproducibility_check(paper)
        output = self._write(ctx, render_reproducibility(paper, check))
        return StepResult(data=check, output=output)
