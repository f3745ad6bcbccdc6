"""What the offline reviewer checks in a paper, each fact with the section (and page) it rests on.

A claim of absence ("no ablation") is only as good as the search behind it, so every practice
a reviewer looks for is a :data:`PRACTICES` pattern over its usual forms (an ablation is also
"model variations", "we vary", a sensitivity analysis, variants of the model...), searched in
every section's heading and text. :func:`paper_facts` records where each one was found;
counts (figures, tables, references) are read off the whole paper; the abstract is measured
without the footnotes the loader set apart; and :func:`paper_kind` tells an empirical paper
from a position paper, a theory, a survey, a dataset or a system, whose advice differs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from sagagraph.agents.paper import Paper, Section
from sagagraph.agents.validation_rules import PATTERNS, find_parts
from sagagraph.agents.words import count_words, split_sentences

PaperKind = Literal["empirical", "position", "theory", "survey", "dataset", "system"]

PRACTICES: dict[str, re.Pattern[str]] = {
    "ablation": re.compile(
        r"\bablat\w*|\bmodel variations?\b|\bwe (?:also )?vary\b|\bvarying (?:the|our)\b|"
        r"\bsensitivity (?:analysis|study)\b|\bvariants? of (?:our|the) (?:model|method|approach|"
        r"system|architecture)\b|\bcontribution of each\b|\b(?:effect|impact|influence) of "
        r"(?:each|different|the number of|removing)\b|\bwithout (?:the|our) [\w-]+ "
        r"(?:component|module|layer|loss|step|term|stage)\b",
        re.IGNORECASE,
    ),
    "baseline": re.compile(
        r"\bbaselines?\b|\bcompared? (?:with|to|against)\b|\boutperform\w*|"
        r"\bstate[- ]of[- ]the[- ]art\b|\bprior (?:methods|systems|approaches)\b",
        re.IGNORECASE,
    ),
    "significance": re.compile(
        r"±|\bstd\b|standard deviation|confidence interval|\bp\s*[<=]\s*0?\.\d|statistically "
        r"significant|significance test|bootstrap|standard error|\bvariance (?:over|across)\b",
        re.IGNORECASE,
    ),
    "human study": re.compile(
        r"\b(?:user stud(?:y|ies)|usability stud(?:y|ies)|human evaluations?|human "
        r"judge?ments?|annotators|crowd ?workers|participants (?:were|in our|completed)|"
        r"interviews? with)\b",
        re.IGNORECASE,
    ),
    "limitations": re.compile(
        r"\blimitations?\b|\bthreats to validity\b|\bshortcomings?\b|\bfailure (?:cases|modes)\b",
        re.IGNORECASE,
    ),
    "future work": re.compile(
        r"\bfuture (?:work|directions?|research)\b|\bin the future\b|\bopen (?:problems|"
        r"questions|challenges)\b",
        re.IGNORECASE,
    ),
    "code": re.compile(
        r"\b(?:github\.com|gitlab\.com|huggingface\.co|zenodo\.org)/|\b(?:code|data|dataset|"
        r"implementation|models?|corpus|tool) (?:is|are|will be) (?:publicly |freely )?"
        r"(?:available|released)|\bopen[- ]sourc",
        re.IGNORECASE,
    ),
    "counterarguments": re.compile(
        r"\bcounter-?arguments?\b|\bobjections?\b|\bcritics?\b|\bcriticism\b|\balternative "
        r"views?\b|\bone might argue\b|\bskeptic",
        re.IGNORECASE,
    ),
    "agreement": re.compile(
        r"\binter-?annotator\b|\bagreement\b|\bkappa\b|\bkrippendorff", re.IGNORECASE
    ),
    "license": re.compile(r"\blicen[cs]\w*|\bdatasheet\b|\bterms of use\b", re.IGNORECASE),
    "selection method": re.compile(
        r"\binclusion criteria\b|\bwe (?:collected|selected|searched|surveyed)\b|\bsearch "
        r"(?:terms|queries|strategy)\b|\bsystematic(?:ally)? (?:review|search)",
        re.IGNORECASE,
    ),
    "example": re.compile(r"\bfor example\b|\bexample \d|\billustrat\w+|\bconsider\b", re.I),
}
"""Usual forms of what a reviewer looks for, searched in every section before claiming absence."""

_FIGURE = re.compile(r"\b(?:Figure|Fig\.?)\s*(\d{1,3})\b", re.IGNORECASE)
_TABLE = re.compile(r"\bTable\s+(\d{1,3}|[IVXL]{1,6})\b", re.IGNORECASE)
_THEOREM = re.compile(r"\b(?:Theorem|Lemma|Proposition|Corollary)\s+\d", re.IGNORECASE)
_BRACKET_REF = re.compile(r"^\s*\[(\d{1,4})\]", re.MULTILINE)
_NUMBERED_REF = re.compile(r"^\s*(\d{1,3})\.\s+[A-Z]", re.MULTILINE)
_AUTHOR_YEAR_REF = re.compile(r"^[A-Z][\w'’-]+,\s+(?:[A-Z]\.|[A-Z][\w'’-]+)", re.MULTILINE)
_YEAR_DOT_REF = re.compile(r"\b(?:19|20)\d\d[a-z]?\.\s")
_CLAIM = re.compile(
    r"\b(we (propose|present|introduce|show|find|release|describe|argue|develop|study)|"
    r"this paper|in this (paper|work))\b",
    re.IGNORECASE,
)
_SURVEY_TITLE = re.compile(r"\b(survey|systematic (literature )?review|a review of)\b", re.I)
_SURVEY_ABSTRACT = re.compile(r"\b(this|in this) (survey|review)\b", re.I)
_POSITION = re.compile(
    r"\b(position paper|vision paper|manifesto|we call for|research agenda|this essay)\b", re.I
)
_ARGUES = re.compile(r"\b(we argue|this paper argues|we advocate)\b", re.I)
_KINDS: tuple[tuple[PaperKind, re.Pattern[str]], ...] = (
    (
        "dataset",
        re.compile(
            r"\bwe (release|introduce|present|construct|build)\b[^.]{0,80}\b(dataset|corpus|"
            r"benchmark|collection)\b",
            re.I,
        ),
    ),
    (
        "system",
        re.compile(
            r"\bwe (present|built|build|design|designed|develop|developed|introduce)\b[^.]{0,80}"
            r"\b(system|tool|interface|prototype|platform|toolkit)\b",
            re.I,
        ),
    ),
)


@dataclass(frozen=True)
class Found:
    """Where a practice was found: the section and the words that matched."""

    section: Section
    phrase: str


@dataclass(frozen=True)
class PaperFacts:
    """What the offline reviewer knows about a paper; every count is read off its text."""

    paper: Paper
    kind: PaperKind
    top_sections: tuple[Section, ...]
    experiment_sections: tuple[Section, ...]
    figures: int
    tables: int
    references: int
    abstract_words: int
    claim: str
    conclusion: Section | None
    body: Section | None
    found: dict[str, Found] = field(default_factory=dict)
    """Practice name -> where it was found (absent when the search found nothing)."""


def cite(section: Section | None) -> str:
    """``'3 Method' (p.4)``: how a remark names the section it rests on."""
    return f"'{section.heading}' (p.{section.page})" if section is not None else "the paper"


def count_references(section: Section | None) -> int:
    """Entries of the reference list: the highest ``[n]``, numbered or author-year entries."""
    if section is None:
        return 0
    text = section.text
    numbers = [int(n) for n in _BRACKET_REF.findall(text)]
    if len(numbers) >= 3:
        return max(numbers)
    numbered = _NUMBERED_REF.findall(text)
    if len(numbered) >= 3:
        return len(numbered)
    # Author-year lists (ACL: "Ada Lovelace and Alan Turing. 2020. Title."): one year each.
    return max(len(_AUTHOR_YEAR_REF.findall(text)), len(_YEAR_DOT_REF.findall(text)))


def _search(sections: tuple[Section, ...], pattern: re.Pattern[str]) -> Found | None:
    for section in sections:
        m = pattern.search(section.title) or pattern.search(" ".join(section.text.split()))
        if m:
            return Found(section, m.group(0))
    return None


def paper_kind(paper: Paper, experiments: tuple[Section, ...]) -> PaperKind:
    """The kind of paper, from its title and abstract (and theorems without experiments).

    An argument ("we argue") with an evaluation section is an empirical paper that argues.
    """
    lead = f"{paper.title}. {paper.abstract}"
    if _SURVEY_TITLE.search(paper.title) or _SURVEY_ABSTRACT.search(paper.abstract):
        return "survey"
    if _POSITION.search(lead) or (_ARGUES.search(lead) and not experiments):
        return "position"
    for kind, pattern in _KINDS:
        if pattern.search(lead):
            return kind
    if not experiments and len(_THEOREM.findall(paper.text)) >= 3:
        return "theory"
    return "empirical"


def _claim(abstract: str) -> str:
    for sentence in split_sentences(abstract):
        if _CLAIM.search(sentence):
            words = sentence.split()
            return " ".join(words[:30]) + (" ..." if len(words) > 30 else "")
    return ""


def paper_facts(paper: Paper) -> PaperFacts:
    """Search and count what a reviewer checks; the references are counted apart."""
    main = paper.main_sections()
    references = paper.references_section()
    counted = "\n".join(s.text for s in paper.sections if s is not references) or paper.text
    abstract = paper.abstract_section()
    top = tuple(s for s in main if s.level == 1 and s is not abstract)
    experiments = tuple(s for s in top if PATTERNS["experiments"].search(s.name))
    parts = find_parts(paper)
    by_heading = {s.heading: s for s in paper.sections}
    searched = tuple(s for s in paper.sections if s is not references)
    found = {name: hit for name, p in PRACTICES.items() if (hit := _search(searched, p))}
    return PaperFacts(
        paper=paper,
        kind=paper_kind(paper, experiments),
        top_sections=top,
        experiment_sections=experiments,
        figures=len({n for n in _FIGURE.findall(counted)}),
        tables=len({n.upper() for n in _TABLE.findall(counted)}),
        references=count_references(references),
        abstract_words=count_words(paper.abstract),
        claim=_claim(paper.abstract),
        conclusion=by_heading.get(parts["conclusion"].heading) if "conclusion" in parts else None,
        body=by_heading.get(parts["body"].heading) if "body" in parts else None,
        found=found,
    )
