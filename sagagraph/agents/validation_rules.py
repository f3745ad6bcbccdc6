"""Which headings make a complete research paper: the offline validator's rules.

A complete paper has an abstract, an introduction, substantive body sections (background or
related work, and a method or approach), a conclusion and references. Headings vary, so each
part is recognised by patterns over the heading's words (any case, numbered or not, accents
ignored). Papers often name their method section after the contribution (``3 Model
Architecture``, ``IV. Individual differential privacy``), so when no heading names a method,
the first substantive section between the introduction and the conclusion stands for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sagagraph.agents.paper import Paper, Section
from sagagraph.agents.schemas import PartFound, ValidationReport

REQUIRED_PARTS = ("abstract", "introduction", "body", "method", "conclusion", "references")
"""The parts every complete paper has, in reading order."""

PART_LABELS = {
    "abstract": "abstract",
    "introduction": "introduction",
    "body": "background or related work",
    "method": "method or approach",
    "conclusion": "conclusion",
    "references": "references",
}
"""What each part means, for messages."""

UNHEADED_ABSTRACT = "(unheaded opening paragraph)"
"""The heading reported for an abstract printed without one (ACM style)."""

MIN_SECTION_WORDS = 100
"""A body section (with its subsections) shorter than this is not substantive."""

PATTERNS = {
    "introduction": re.compile(r"^(introduction|motivation)\b(?!\s+to\b)"),
    "body": re.compile(
        r"\b(related work|related works|related research|background|prior work|previous work|"
        r"literature|state of the art|preliminaries|survey of)\b"
    ),
    "method": re.compile(
        r"\b(methods?|methodology|approach(es)?|model|models|architecture|framework|proposed|"
        r"design|designing|algorithms?|technique|formulation|system|implementation|pipeline|"
        r"construct(ing|ion)?|task definition|problem (definition|statement|setup)|guidelines|"
        r"protocol|study design)\b"
    ),
    "experiments": re.compile(
        r"\b(experiments?|experimental|evaluation|results|analysis|case study|ablation|"
        r"benchmarks?|findings|discussion|applications?|limitations)\b"
    ),
    "conclusion": re.compile(r"\b(conclusions?|concluding|closing remarks|final remarks)\b"),
}
"""Patterns over a section's normalised title (lower case, no accents, no number)."""


@dataclass(frozen=True)
class PartMatch:
    """Where a required part was found."""

    part: str
    heading: str
    page: int

    def found(self) -> PartFound:
        return PartFound(part=self.part, heading=self.heading, page=self.page)


def _span_words(sections: Sequence[Section], index: int) -> int:
    """Words of ``sections[index]`` and of the subsections under it."""
    words = sections[index].words
    for section in sections[index + 1 :]:
        if section.level <= sections[index].level:
            break
        words += section.words
    return words


def _first(sections: Sequence[Section], part: str, start: int = 0) -> int | None:
    pattern = PATTERNS[part]
    return next((i for i in range(start, len(sections)) if pattern.search(sections[i].name)), None)


def find_parts(paper: Paper) -> dict[str, PartMatch]:
    """The required parts ``paper`` has, by part name (a missing part has no entry)."""
    sections = paper.sections
    parts: dict[str, PartMatch] = {}

    def take(part: str, index: int) -> None:
        parts[part] = PartMatch(part, sections[index].heading, sections[index].page)

    abstract = paper.abstract_section()
    if abstract is not None and abstract.words >= 20:
        parts["abstract"] = PartMatch("abstract", abstract.heading, abstract.page)
    elif paper.unheaded_abstract():
        parts["abstract"] = PartMatch("abstract", UNHEADED_ABSTRACT, 1)

    intro = _first(sections, "introduction")
    if intro is None:
        return parts
    take("introduction", intro)
    references = paper.references_section()
    ref_index = sections.index(references) if references is not None else len(sections)
    if references is not None and ref_index > intro and references.words >= 10:
        take("references", ref_index)
    conclusion = _first(sections, "conclusion", intro + 1)
    if conclusion is not None and conclusion < ref_index:
        take("conclusion", conclusion)
    end = conclusion if conclusion is not None and conclusion < ref_index else ref_index

    # The body: level-1 sections between the introduction and the conclusion.
    region = [
        i
        for i in range(intro + 1, end)
        if sections[i].level == 1 and _span_words(sections, i) >= MIN_SECTION_WORDS
    ]
    body = next((i for i in region if PATTERNS["body"].search(sections[i].name)), None)
    if body is None:  # a related-work subsection ("2.1 Prior work") counts too
        body = next(
            (
                i
                for i in range(intro + 1, end)
                if PATTERNS["body"].search(sections[i].name)
                and _span_words(sections, i) >= MIN_SECTION_WORDS
            ),
            None,
        )
    method = next(
        (i for i in region if i != body and PATTERNS["method"].search(sections[i].name)), None
    )
    # Fallbacks: sections that neither report experiments nor (for the method) review work.
    discursive = [
        i
        for i in region
        if i not in (body, method) and not PATTERNS["experiments"].search(sections[i].name)
    ]
    if method is None:
        method = next(
            (i for i in discursive if not PATTERNS["body"].search(sections[i].name)), None
        )
    if body is None:
        body = next((i for i in discursive if i != method), None)
    if body is not None:
        take("body", body)
    if method is not None:
        take("method", method)
    return parts


def validation_report(paper: Paper) -> ValidationReport:
    """The offline validator's verdict on ``paper``."""
    parts = find_parts(paper)
    found = [parts[p].found() for p in REQUIRED_PARTS if p in parts]
    missing = [p for p in REQUIRED_PARTS if p not in parts]
    if missing:
        labels = ", ".join(PART_LABELS[p] for p in missing)
        reason = f"Not a complete research paper: missing {labels}."
        if not paper.sections:
            reason = "Not a complete research paper: no section headings found at all."
    else:
        reason = (
            f"Complete research paper: all {len(REQUIRED_PARTS)} required parts found "
            f"across {len(paper.pages)} page(s)."
        )
    return ValidationReport(is_valid=not missing, found=found, missing=missing, reason=reason)
