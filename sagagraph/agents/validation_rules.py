"""Which headings make a complete research paper: the offline validator's rules, the signals that
tell a plan from a paper, and the evidence of a paper's structure the LLM validator is shown.

A complete paper has an abstract, an opening part, substantive body sections with a method, a
closing part and references (docs/validator.md lists what each is found as). The validator
judges function, not exact words: each part is recognised by patterns over the heading's words
in six languages (any case, numbered or not, accents ignored). Papers often name their method
section after the contribution (``3 Model Architecture``), so when no heading names a method,
the first substantive section between the opening and the closing stands for it.

A plan is not a paper (:func:`plan_signals`): a proposal has a paper's headings but announces
its results instead of reporting them (it names itself a proposal, a heading names expected
results or a timeline, its text speaks of results in the future). The signals decide only when
no section reports results in the past tense, so a paper that ends on "Future work" stays one.

What the LLM validator sees (:func:`validator_evidence`) survives a missed heading (a model
handed an empty outline must answer "invalid"): besides the outline, the printed table of
contents, the first page and the start of the reference list (or the last page), each with its
own share of a token budget, so a 400-page thesis costs the same as a 4-page paper.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from sagagraph.agents.engine import PartFound, ValidationReport
from sagagraph.agents.headings import known_heading
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


REQUIRED_PARTS = ("abstract", "introduction", "body", "method", "conclusion", "references")
"""The parts every complete paper has, in reading order."""

PART_LABELS = {
    "abstract": "abstract",
    "introduction": "introduction",
    "body": "body sections",
    "method": "method or approach",
    "conclusion": "conclusion",
    "references": "references",
    "results": "reported results (the document plans its study)",
}
"""What each part means, for messages ("results" is missing from a plan, see
:func:`plan_signals`)."""

UNHEADED_ABSTRACT = "(unheaded opening paragraph)"
"""The heading reported for an abstract printed without one (ACM style)."""
UNHEADED_INTRODUCTION = "(unheaded introduction after the abstract)"
"""The heading reported for an introduction printed without one (BMJ style)."""
UNHEADED_OPENING_WORDS = 300
"""An abstract section this long that runs into a methods section holds the introduction."""

MIN_SECTION_WORDS = 100
"""A body section (with its subsections) shorter than this is not substantive."""

PATTERNS = {
    "introduction": re.compile(
        r"^(introduction|motivation|background|overview|einleitung|einfuhrung|motivation|"
        r"introduccion|introducao|introduzione|contexte|hintergrund|antecedentes)\b(?!\s+to\b)"
    ),
    "body": re.compile(
        r"\b(related work|related works|related research|background|prior work|previous work|"
        r"literature|state of the art|preliminaries|survey of|travaux connexes|etat de l'art|"
        r"travaux anterieurs|verwandte arbeiten|stand der forschung|grundlagen|"
        r"trabajos? relacionados?|estado del arte|trabalhos relacionados|lavori correlati|"
        r"stato dell'arte|fundamentacao|antecedentes|marco teorico|referencial teorico)\b"
    ),
    "method": re.compile(
        r"\b(methods?|methodology|approach(es)?|model|models|architecture|framework|proposed|"
        r"design|designing|algorithms?|technique|formulation|system|implementation|pipeline|"
        r"construct(ing|ion)?|task definition|problem (definition|statement|setup)|guidelines|"
        r"protocol|study design|methode|methodologie|approche|modele|ansatz|methoden|methodik|"
        r"verfahren|modell|metodos?|metodologias?|methodologies|methodes|enfoque|abordagem|"
        r"approccio|modelos?|modello|modeles)\b"
    ),
    "experiments": re.compile(
        r"\b(experiments?|experimental|evaluation|results|analysis|case study|ablation|"
        r"benchmarks?|findings|discussion|applications?|limitations|experiences|"
        r"experimentations|resultats|experimente|evaluierung|ergebnisse|experimentos|"
        r"resultados|evaluacion|avaliacao|esperimenti|risultati|valutazione)\b"
    ),
    "conclusion": re.compile(
        r"\b(conclusions?|concluding|closing remarks|final remarks|fazit|schluss\w*|"
        r"conclusiones|conclusao|conclusoes|consideracoes finais|conclusioni|conclusione)\b"
    ),
    "closing": re.compile(
        r"^(summary|future work|outlook|perspectives|ausblick|zusammenfassung|trabajo futuro|"
        r"trabalhos futuros|sviluppi futuri)\b|\b(summary and|and future work)\b"
    ),
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


def _first(
    sections: Sequence[Section], part: str, start: int = 0, *, top: bool = False
) -> int | None:
    pattern = PATTERNS[part]
    return next(
        (
            i
            for i in range(start, len(sections))
            if pattern.search(sections[i].name) and (not top or sections[i].level == 1)
        ),
        None,
    )


def _opening(sections: Sequence[Section], paper: Paper) -> int | None:
    """The section that opens the paper: by name, else the first numbered top section."""
    abstract = paper.abstract_section()
    start = sections.index(abstract) + 1 if abstract is not None else 0
    named = _first(sections, "introduction", start)
    if named is not None:
        return named
    for i in range(start, len(sections)):
        first = sections[i].heading.split()[0].rstrip(".")
        if sections[i].level == 1 and first in ("1", "I"):
            return i
    return None


BACK_MATTER = re.compile(
    r"^(acknowledg|appendix|appendices|funding|conflicts? of interest|competing interests?|"
    r"declarations?|disclosures?|author(s'?)? contributions?|description of authors|"
    r"data (and code )?availability|code availability|ethics|ethical (approval|statement)|"
    r"abbreviations|supplementary|supporting information|remerciements|agradecimientos|"
    r"danksagung|agradecimentos|ringraziamenti|financement|financiamiento)"
)
"""Sections after the body that are not content: thanks, funding, declarations."""
TAIL = re.compile(
    r"\b(discussion|diskussion|discusion|discussao|discussione|outlook|perspectives?|"
    r"perspectivas|prospettive|ausblick|future (work|directions|research)|"
    r"travaux futurs|trabajo futuro|trabalhos futuros|sviluppi futuri)\b"
)
"""A closing section by function: a discussion, an outlook or perspectives, in any language."""


def _unheaded_opening(sections: Sequence[Section], paper: Paper) -> int | None:
    """Journals that print no "Introduction" heading (BMJ) run the introduction on from the
    abstract up to "METHODS": an abstract section far longer than an abstract, followed by
    a methods section, holds the opening. Its index, or None."""
    abstract = paper.abstract_section()
    if abstract is None or abstract.words < UNHEADED_OPENING_WORDS:
        return None
    at = sections.index(abstract)
    after = next((i for i in range(at + 1, len(sections)) if sections[i].level == 1), None)
    if after is None or not PATTERNS["method"].search(sections[after].name):
        return None
    return at


def _closing_tail(sections: Sequence[Section], intro: int, end: int) -> int | None:
    """A discussion, summary or outlook among the last two content sections before the
    references closes the paper ("Discussion" then a "Clinical perspectives" box; French
    "Travaux existants et perspectives"); earlier in the paper such a heading (a "Summary"
    box in the results) is body."""
    tops = [i for i in range(intro + 1, end) if sections[i].level == 1]
    tops = [i for i in tops if not BACK_MATTER.match(sections[i].name)]
    for pattern in (TAIL, PATTERNS["closing"]):  # a discussion before a summary box
        found = next((i for i in tops[-2:] if pattern.search(sections[i].name)), None)
        if found is not None:
            return found
    return None


def _nest_unnumbered(sections: Sequence[Section]) -> tuple[Section, ...]:
    """Unnumbered papers print every heading alike: a known heading with (almost) no text of
    its own ("Materials and methods", "Results") is followed by its subsections, set as if
    they were sections. Those are nested under it, up to the next known heading."""
    out: list[Section] = []
    parent: Section | None = None
    for section in sections:
        known = known_heading(section.title) is not None
        if known or section.level != 1 or section.title != section.heading:
            parent = section if known and section.level == 1 and section.words < 20 else None
            out.append(section)
        elif parent is not None:
            out.append(replace(section, level=2))
        else:
            out.append(section)
    return tuple(out)


_ABSTRACT_LABEL = re.compile(
    r"^(background|objectives?|aims?|purpose|context|methods?|design|setting|participants|"
    r"results?|findings|conclusions?|interpretation)\s?:\s+\S",
    re.IGNORECASE,
)


def _structured_abstract(front_matter: str) -> bool:
    """A structured abstract printed without an "Abstract" heading: run-in labels
    ("Background:", "Methods:", "Results:", "Conclusions:") in the text before the first
    heading, at least three of them, one of them for results or conclusions."""
    labels = {
        m.group(1).lower().rstrip("s")
        for line in front_matter.splitlines()
        if (m := _ABSTRACT_LABEL.match(line.strip()))
    }
    return len(labels) >= 3 and bool(labels & {"result", "conclusion", "finding"})


def find_parts(paper: Paper) -> dict[str, PartMatch]:
    """The required parts ``paper`` has, by part name (a missing part has no entry)."""
    sections = _nest_unnumbered(paper.sections)
    parts: dict[str, PartMatch] = {}

    def take(part: str, index: int) -> None:
        parts[part] = PartMatch(part, sections[index].heading, sections[index].page)

    abstract = paper.abstract_section()
    if abstract is not None and abstract.words >= 20:
        parts["abstract"] = PartMatch("abstract", abstract.heading, abstract.page)
    elif paper.unheaded_abstract() or _structured_abstract(paper.front_matter):
        parts["abstract"] = PartMatch("abstract", UNHEADED_ABSTRACT, 1)

    intro = _opening(sections, paper)
    if intro is None:
        intro = _unheaded_opening(sections, paper)
        if intro is None:
            return parts
        parts["introduction"] = PartMatch(
            "introduction", UNHEADED_INTRODUCTION, sections[intro].page
        )
    else:
        take("introduction", intro)
    references = paper.references_section()
    ref_index = sections.index(references) if references is not None else len(sections)
    if references is not None and ref_index > intro and references.words >= 10:
        take("references", ref_index)
    conclusion = _first(sections, "conclusion", intro + 1, top=True)
    if conclusion is None or conclusion >= ref_index:
        conclusion = _closing_tail(sections, intro, ref_index)
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
    if body is None:  # no section reviews prior work: the other substantive ones are the body
        body = next((i for i in region if i != method), None)
    if body is None and region == [method] and "conclusion" in parts:
        # A short paper's one middle section is its method and all its body ("2 Approach"
        # between the introduction and the conclusion of a 3-page workshop paper).
        body = method
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
    report = ValidationReport(is_valid=not missing, found=found, missing=missing, reason=reason)
    if missing and paper.sections:
        plan = plan_signals(paper)
        if plan.is_plan:  # the deeper reason: a plan, whatever else it lacks
            reason = (
                "Not a complete research paper: it plans a study rather than reporting one "
                f"({plan.why()}); also missing {labels}."
            )
            update = {"missing": [*missing, "results"], "reason": reason}
            return report.model_copy(update=update)
    return confirm_reported_results(report, paper)


def confirm_reported_results(report: ValidationReport, paper: Paper) -> ValidationReport:
    """``report`` refused when ``paper`` plans its study instead of reporting it.

    Headings cannot tell a research proposal from a paper; its tense and its plan can (see
    :func:`plan_signals`). Any engine's report passes through here, so the
    LLM validator is held to the same line. A report already refused keeps its reason.
    """
    if not report.is_valid:
        return report
    plan = plan_signals(paper)
    if not plan.is_plan:
        return report
    reason = (
        f"Not a complete research paper: it plans a study rather than reporting one ({plan.why()})."
    )
    return report.model_copy(update={"is_valid": False, "missing": ["results"], "reason": reason})


CHARS_PER_TOKEN = 4
"""The usual estimate for English text; enough to keep a request within its budget."""
DEFAULT_EVIDENCE_TOKENS = 3_000
"""Tokens of paper evidence one validator request carries (the instructions come on top)."""
_SHARES = {"outline": 0.3, "first_page": 0.45, "references": 0.25}


@dataclass(frozen=True)
class ValidatorEvidence:
    """The parts of a paper the LLM validator is shown, each clipped to its share."""

    outline: str
    """Detected headings with their pages, then the printed table of contents, if any."""
    first_page: str
    """Text of page 1: title, authors, abstract."""
    references: str
    """Start of the reference list (heading and first entries), or of the last page."""
    references_source: str
    """Where ``references`` comes from, for the prompt: a heading and page, or the last page."""


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > 0 else limit] + " [...]"


def validator_evidence(paper: Paper, tokens: int = DEFAULT_EVIDENCE_TOKENS) -> ValidatorEvidence:
    """The evidence for ``paper`` within ``tokens`` tokens (about 4 characters a token)."""
    budget = tokens * CHARS_PER_TOKEN
    outline = paper.outline() or "(no headings found)"
    if paper.toc:
        outline += "\n\nPrinted table of contents:\n" + "\n".join(paper.toc)
    refs = paper.references_section()
    if refs is not None:
        source = f"the reference list ({refs.heading}, p.{refs.page})"
        evidence = f"{refs.heading}\n{refs.text}"
    else:
        source = f"the last page (p.{len(paper.pages)}); no reference list was detected"
        evidence = paper.pages[-1] if paper.pages else ""
    return ValidatorEvidence(
        outline=_clip(outline, int(_SHARES["outline"] * budget)),
        first_page=_clip(
            paper.pages[0] if paper.pages else "", int(_SHARES["first_page"] * budget)
        ),
        references=_clip(evidence, int(_SHARES["references"] * budget)) or "(empty)",
        references_source=source,
    )
