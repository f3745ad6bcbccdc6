"""Telling a plan from a paper: a document whose results are expected rather than reported.

A research proposal has a paper's headings (an introduction, a method, references), so
headings alone accept it. What it lacks is results: it announces them ("7. Expected
Results", "the models will be compared"), and lays out a timeline or a budget. The signals
here are each evidence a reader can check: the document names itself a proposal on its first
page, a heading names expected results or a plan (timeline, work plan, budget), and the text
speaks of its results in the future. They decide only together with the absence of any
section that reports results in the past tense, so a paper that ends on a "Future work"
section or says "we will show" stays a paper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sagagraph.agents.paper import Paper, Section, fold_lines

SELF_NAMED = re.compile(
    r"\b(?:(?:research|thesis|dissertation|project|grant|funding|ph\.?\s?d\.?|doctoral|"
    r"master'?s?|master’s|msc|m\.sc\.|study|capstone|pre-?)\s+proposal|"
    r"propuesta de (?:tesis|investigaci[oó]n|proyecto)|anteproyecto|"
    r"proposta de (?:tese|disserta[cç][aã]o|pesquisa|projeto)|projeto de pesquisa|"
    r"pr[eé]-projeto|projet de (?:th[eè]se|recherche)|proposition de recherche|"
    r"forschungsantrag|projektantrag|forschungsvorhaben|proposta di (?:ricerca|tesi|progetto))\b",
    re.IGNORECASE,
)
"""A document that calls itself a proposal (looked for on its first page and its abstract)."""

PLAN_HEADING = re.compile(
    r"\b(?:expected|anticipated|intended|planned|projected|prospective)\s+"
    r"(?:results?|outcomes?|findings|contributions?|impacts?|deliverables|evaluation|"
    r"benefits)\b|"
    r"^(?:time ?line|time plan|timetable|time schedule|(?:project |research )?schedule|"
    r"work ?plan|work packages?|gantt|milestones|budget|estimated budget|costs|"
    r"research plan|project plan|plan of work|proposed (?:methodology|research|work|study)|"
    r"resources (?:required|needed))\b|"
    r"\b(?:resultados esperados|cronograma|presupuesto|orcamento|resultats attendus|"
    r"calendrier|zeitplan|arbeitsplan|erwartete ergebnisse|risultati attesi|"
    r"cronoprogramma)\b"
)
"""A heading (normalised: lower case, no accents, no number) that names a plan."""

RESULTS_HEADING = re.compile(
    r"\b(?:results?|findings|experiments?|evaluation|outcomes|resultats|ergebnisse|"
    r"resultados|risultati|experimentos|experimente)\b"
)
"""A heading of a section that may report results."""

_NOT_REPORTED = re.compile(
    r"\b(?:expected|anticipated|intended|planned|projected|prospective|preliminary|"
    r"metrics|design|setup|protocol|plan|esperados|attendus|erwartete|attesi)\b"
)

FUTURE = re.compile(
    r"\b(?:will|shall|is expected to|are expected to|is planned|are planned|we plan to|"
    r"we intend to|is intended to|are intended to)\b",
    re.IGNORECASE,
)
"""Words that put a finding in the future."""

REPORTED = re.compile(
    r"\b(?:was|were|we found|we observed|we showed|showed|achieved|obtained|observed|"
    r"outperformed|outperforms|yielded|resulted in|revealed|demonstrated|improved|"
    r"increased|decreased|reduced|fue|fueron|se obtuvo|se obtuvieron|se observ[oó]|"
    r"a été|ont été|nous avons|wurde|wurden|foi|foram|è stato|sono stati)\b",
    re.IGNORECASE,
)
"""Words that report what was done or found."""

MIN_RESULTS_WORDS = 100
"""A results section shorter than this reports nothing."""


@dataclass(frozen=True)
class PlanEvidence:
    """What says a document plans its study rather than reports it."""

    named: str = ""
    """The phrase by which the document calls itself a proposal, or ''."""
    headings: tuple[str, ...] = ()
    """Headings that name expected results or a plan, with their pages."""
    future: int = 0
    """Statements of the main text in the future tense."""
    reported: int = 0
    """Statements of the main text in the past tense."""
    results_section: str = ""
    """A section that reports results (heading and page), or '' when none does."""

    @property
    def is_plan(self) -> bool:
        """True when the document names itself or its results as a plan and reports none."""
        if not (self.named or self.headings):
            return False
        if self.named and self.headings:
            return not self.results_section or self.future > self.reported
        return not self.results_section

    def why(self) -> str:
        """The evidence, as a clause for the validation's reason."""
        parts = []
        if self.named:
            parts.append(f"it calls itself a {self.named!r}")
        if self.headings:
            parts.append("its headings announce " + ", ".join(self.headings))
        parts.append(
            f"its text speaks in the future {self.future} time(s) against "
            f"{self.reported} statement(s) of what was done or found"
        )
        parts.append(
            f"only {self.results_section} reports results, in fewer words than the plan"
            if self.results_section
            else "no section reports results"
        )
        return "; ".join(parts)


def _span_text(sections: tuple[Section, ...], index: int) -> str:
    """Text of ``sections[index]`` and of the subsections under it."""
    texts = [sections[index].text]
    for section in sections[index + 1 :]:
        if section.level <= sections[index].level:
            break
        texts.append(section.text)
    return "\n".join(texts)


def _results_section(paper: Paper) -> str:
    """The first section that reports results in the past tense, as ``heading (p.N)``."""
    sections = paper.main_sections()
    for i, section in enumerate(sections):
        name = section.name
        if not RESULTS_HEADING.search(name) or _NOT_REPORTED.search(name):
            continue
        text = _span_text(sections, i)
        if len(text.split()) < MIN_RESULTS_WORDS:
            continue
        if len(REPORTED.findall(text)) >= max(1, len(FUTURE.findall(text))):
            return f"{section.heading} (p.{section.page})"
    return ""


def plan_signals(paper: Paper) -> PlanEvidence:
    """The evidence that ``paper`` is a plan (a proposal) rather than a report of a study."""
    first = fold_lines(paper.pages[0]) if paper.pages else ""
    named = SELF_NAMED.search(f"{first}\n{paper.front_matter}\n{paper.abstract}")
    headings = tuple(
        f"'{s.heading}' (p.{s.page})" for s in paper.sections if PLAN_HEADING.search(s.name)
    )
    main = paper.main_text()
    return PlanEvidence(
        named=" ".join(named.group(0).split()) if named else "",
        headings=headings,
        future=len(FUTURE.findall(main)),
        reported=len(REPORTED.findall(main)),
        results_section=_results_section(paper),
    )
