"""The paper saga on the blackboard: the reviewer revisits its review once a summary exists.

The reviewer's refinement (a :class:`~sagagraph.blackboard.refinement.Refinement`) checks
each claim of absence in its review ("does not report variance", "has no figures") against the
summary and marks the ones the summary contradicts; ``review.txt`` is rewritten with a marked
section appended, under the reviewer's own idempotency key, so the reviewer's compensation
still removes it.

The check is a deterministic comparison of the two texts (no model call), so a refinement costs
no tokens and reads the same on every engine.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from sagagraph.agents.paper_agents import REVIEW_FILE, PaperContext
from sagagraph.agents.store import OutputStore
from sagagraph.agents.words import split_sentences
from sagagraph.blackboard.builder import BoardGraph, build_blackboard_graph
from sagagraph.blackboard.refinement import Refinement
from sagagraph.errors import ConfigurationError
from sagagraph.saga.protocol import SagaDefinition, Step, StepContext, StepResult

REFINED_HEADING = "Checked against the summary"
"""The heading of the section a refinement appends to ``review.txt``."""

_ABSENCE = re.compile(
    r"\b(no|not|lacks?|lacking|missing|without|absent|never|omits?|neither|nor)\b|n't\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z-]{3,}")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_CLAUSE_END = re.compile(r"[.;:]|,\s*(?:so|which|and|but|making|because)\b")
_STOP_WORDS = """
    about above after again against also among appears being below between could
    does doing during each every first from further have having into more
    most other over paper papers part section sections should some such than
    that their them then there these they this those through under until
    very were what when where which while whole will with would only
    passing mentioned devoted says
"""
_STOP = frozenset(_STOP_WORDS.split())


def _stems(text: str) -> set[str]:
    """Content words, cut to their first six letters (``experiments`` meets ``experimental``)."""
    return {w.lower()[:6] for w in _WORD.findall(text) if w.lower() not in _STOP}


def absent_thing(claim: str) -> str | None:
    """What a claim of absence says is missing (the clause after "no", "without"...), or None.

    Quoted section headings are left out: a claim names its section, which a summary may
    name too without contradicting anything.
    """
    text = _QUOTED.sub(" ", claim)
    cue = _ABSENCE.search(text)
    if cue is None:
        return None
    rest = text[cue.end() :]
    end = _CLAUSE_END.search(rest)
    return rest[: end.start()] if end else rest


def contradicted_claims(claims: Sequence[str], summary: str) -> list[str]:
    """The claims of absence in ``claims`` that a sentence of ``summary`` contradicts.

    A claim counts when it says something is missing and one summary sentence, itself not a
    claim of absence, names at least two content words of that missing thing. Each mark names
    the claim and quotes the sentence.
    """
    sentences = [s for s in split_sentences(summary) if not _ABSENCE.search(s)]
    marks: list[str] = []
    for claim in claims:
        thing = absent_thing(claim)
        if thing is None:
            continue
        wanted = _stems(thing)
        for sentence in sentences:
            if len(wanted & _stems(sentence)) >= 2:
                marks.append(f"{claim} -- the summary says: {sentence.strip()}")
                break
    return marks


def strip_refinement(text: str) -> str:
    """``review.txt`` as the reviewer first wrote it (any refined section removed)."""
    head, sep, _ = text.partition(f"\n{REFINED_HEADING}\n")
    return head if sep else text


def render_refinement(review: str, marks: Sequence[str]) -> str:
    """The review with its refined section: the first version stays, byte for byte, above it."""
    first = strip_refinement(review)
    lines = ["", REFINED_HEADING]
    if marks:
        lines += [f"- contradicted: {m}" for m in marks]
    else:
        lines.append("- the summary contradicts no claim of this review")
    return (first if first.endswith("\n") else first + "\n") + "\n".join(lines) + "\n"


class ReviewRefiner:
    """The reviewer revisiting its review once the summary exists (step ``reviewer_refinement``)."""

    name = "reviewer_refinement"
    reviewer = "reviewer"
    summarizer = "summarizer"

    def __repr__(self) -> str:
        return "ReviewRefiner()"

    def _store(self, ctx: PaperContext) -> tuple[OutputStore, str]:
        # The reviewer's key: the refined file is the reviewer's output, undone with it.
        return ctx.deps.store, f"{ctx.saga_id}:{self.reviewer}"

    def _inputs(self, ctx: StepContext) -> tuple[Mapping[str, Any], str, str]:
        review = ctx.results.get(self.reviewer)
        summary = ctx.results.get(self.summarizer)
        if review is None or summary is None or not review.output:
            raise ConfigurationError(
                f"step {self.name!r} needs the reviewer's and the summarizer's results"
            )
        with open(review.output, encoding="utf-8") as f:
            text = f.read()
        return review.data, str(summary.data.get("text") or ""), text

    def execute(self, ctx: PaperContext) -> StepResult:
        data, summary, text = self._inputs(ctx)
        claims = [str(c) for key in ("weaknesses", "suggestions") for c in data.get(key) or []]
        marks = contradicted_claims(claims, summary)
        store, key = self._store(ctx)
        output = str(store.write(key, REVIEW_FILE, render_refinement(text, marks)))
        return StepResult(data={"checked": len(claims), "contradicted": marks}, output=output)

    def compensate(self, ctx: PaperContext, result: StepResult | None) -> None:
        """Put the review back as the reviewer first wrote it; idempotent."""
        review = ctx.results.get(self.reviewer)
        if review is None or not review.output:
            return
        try:
            with open(review.output, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            return
        original = strip_refinement(text)
        if original != text:
            store, key = self._store(ctx)
            store.write(key, REVIEW_FILE, original)


def paper_refinements(reviewer: Step) -> tuple[Refinement, ...]:
    """The paper blackboard's refinement: the reviewer's, under the reviewer's policies."""
    step = Step(
        ReviewRefiner(),
        retry=reviewer.retry,
        compensation_retry=reviewer.compensation_retry,
        timeout=reviewer.timeout,
        compensation_timeout=reviewer.compensation_timeout,
    )
    return (Refinement(step, topic="reviewer", after=("summarizer",)),)


def paper_blackboard_graph(definition: SagaDefinition, **options: Any) -> BoardGraph:
    """The paper saga's blackboard: its three agents plus the reviewer's refinement.

    ``options`` are :func:`~sagagraph.blackboard.builder.build_blackboard_graph`'s.
    """
    refinements: tuple[Refinement, ...] = ()
    if {"reviewer", "summarizer"} <= set(definition.step_names):
        refinements = paper_refinements(definition.step("reviewer"))
    return build_blackboard_graph(definition, refinements=refinements, **options)
