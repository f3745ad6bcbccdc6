"""The offline reviewer: strengths, weaknesses and suggestions from facts read off the paper.

No model is involved. :func:`paper_facts` counts what a reviewer would look for (figures,
tables, equations, references, a limitations section, released code, significance tests,
ablations, a human evaluation) and :func:`offline_review` turns those facts into remarks that
name the paper's own sections and numbers, so every remark can be checked against the paper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sagagraph.agents.paper import Paper, Section, fold_lines
from sagagraph.agents.schemas import Review
from sagagraph.agents.validation_rules import PATTERNS, find_parts
from sagagraph.agents.words import count_words, split_sentences

MAX_REMARKS = 5
"""At most this many strengths, weaknesses and suggestions each."""

_FIGURE = re.compile(r"\b(?:Figure|Fig\.)\s*(\d{1,3})\b")
_TABLE = re.compile(r"\bTable\s+(\d{1,3})\b")
_EQUATION = re.compile(r"\((\d{1,3})\)\s*$", re.MULTILINE)
_BRACKET_REF = re.compile(r"^\s*\[(\d{1,4})\]", re.MULTILINE)
_NUMBERED_REF = re.compile(r"^\s*(\d{1,3})\.\s+[A-Z]", re.MULTILINE)
_YEAR_DOT_REF = re.compile(r"\b(?:19|20)\d\d[a-z]?\.\s")
_LIST_REF = re.compile(r"^\s*[-*]\s+\S", re.MULTILINE)
_CITATION = re.compile(
    r"\[\d{1,4}(?:\s*[,–-]\s*\d{1,4})*\]|\([A-Z][^()]{1,60}?(?:19|20)\d\d[a-z]?\)"
)
_CODE_LINK = re.compile(r"\b(?:github\.com|gitlab\.com|huggingface\.co|zenodo\.org)/\n?[\w./-]+\w")
_CODE_STATEMENT = re.compile(
    r"\b(code|data|dataset|implementation|models?) (is|are|will be) (publicly |freely )?"
    r"(available|released)|\bopen[- ]sourc",
    re.IGNORECASE,
)
_SIGNIFICANCE = re.compile(
    r"±|\bstd\b|standard deviation|confidence interval|\bp\s*[<=]\s*0?\.\d|statistically "
    r"significant|significance test|bootstrap|standard error",
    re.IGNORECASE,
)
_HUMAN_STUDY = re.compile(
    r"\b(user stud(y|ies)|usability stud(y|ies)|human evaluations?|human judge?ments?|"
    r"annotators|crowd ?workers|participants (were|in our|completed))\b",
    re.IGNORECASE,
)
_FUTURE = re.compile(r"\bfuture (work|directions?|research)\b|\bin the future\b", re.IGNORECASE)
_CLAIM = re.compile(
    r"\b(we (propose|present|introduce|show|find|release|describe|argue|develop|study)|"
    r"this paper|in this (paper|work))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class PaperFacts:
    """What the offline reviewer knows about a paper; every count is read off its text."""

    title: str
    pages: int
    main_words: int
    top_sections: tuple[Section, ...]
    figures: int
    tables: int
    equations: int
    references: int
    citations: int
    experiment_sections: tuple[Section, ...]
    limitations: Section | None
    mentions_limitations: bool
    code_link: str
    code_statement: bool
    significance: bool
    ablation: bool
    human_study: bool
    future_work: bool
    claim: str
    abstract_words: int
    conclusion: Section | None
    body: Section | None
    longest: Section | None


def _count_references(section: Section | None) -> int:
    if section is None:
        return 0
    text = section.text
    numbers = [int(n) for n in _BRACKET_REF.findall(text)]
    if len(numbers) >= 3:
        return max(numbers)
    numbered = _NUMBERED_REF.findall(text)
    if len(numbered) >= 3:
        return len(numbered)
    listed = len(_LIST_REF.findall(text))
    return max(listed, len(_YEAR_DOT_REF.findall(text)))


def _claim(abstract: str) -> str:
    for sentence in split_sentences(abstract):
        if _CLAIM.search(sentence):
            words = sentence.split()
            return " ".join(words[:30]) + (" ..." if len(words) > 30 else "")
    return ""


def _span(sections: tuple[Section, ...], section: Section) -> str:
    """Text of ``section`` and its subsections."""
    start = sections.index(section)
    texts = [section.text]
    for other in sections[start + 1 :]:
        if other.level <= section.level:
            break
        texts.append(other.text)
    return "\n".join(texts)


def paper_facts(paper: Paper) -> PaperFacts:
    """Count what a reviewer checks, over the main text (the references are counted apart)."""
    main = paper.main_sections()
    raw = "\n".join(s.text for s in main) or paper.text
    prose = fold_lines(raw)
    top = tuple(s for s in main if s.level == 1 and s is not paper.abstract_section())
    experiments = tuple(s for s in top if PATTERNS["experiments"].search(s.name))
    limitations = next((s for s in paper.sections if "limitation" in s.name), None)
    parts = find_parts(paper)
    by_heading = {s.heading: s for s in paper.sections}
    conclusion = by_heading.get(parts["conclusion"].heading) if "conclusion" in parts else None
    body = by_heading.get(parts["body"].heading) if "body" in parts else None
    sized = [(count_words(_span(main, s)), s) for s in top]
    longest = max(sized, key=lambda pair: pair[0])[1] if sized else None
    link = _CODE_LINK.search(paper.text)
    return PaperFacts(
        title=paper.title,
        pages=len(paper.pages),
        main_words=count_words(prose),
        top_sections=top,
        figures=len(set(_FIGURE.findall(raw))),
        tables=len(set(_TABLE.findall(raw))),
        equations=len(set(_EQUATION.findall(raw))) + raw.count("$$") // 2,
        references=_count_references(paper.references_section()),
        citations=len(_CITATION.findall(prose)),
        experiment_sections=experiments,
        limitations=limitations,
        mentions_limitations=bool(re.search(r"\blimitations?\b", prose, re.IGNORECASE)),
        code_link=link.group(0).replace("\n", "") if link else "",
        code_statement=bool(_CODE_STATEMENT.search(prose)),
        significance=bool(_SIGNIFICANCE.search(paper.text)),
        ablation="ablation" in prose.lower(),
        human_study=bool(_HUMAN_STUDY.search(prose)),
        future_work=bool(_FUTURE.search(prose)),
        claim=_claim(paper.abstract),
        abstract_words=count_words(paper.abstract),
        conclusion=conclusion,
        body=body,
        longest=longest,
    )


def _names(sections: tuple[Section, ...], limit: int = 3) -> str:
    shown = [f"'{s.heading}'" for s in sections[:limit]]
    more = len(sections) - limit
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _strengths(f: PaperFacts) -> list[str]:
    out: list[str] = []
    if f.claim:
        out.append(f'States its contribution plainly in the abstract: "{f.claim}"')
    if f.experiment_sections:
        out.append(
            f"Backs its claims with an empirical part ({_names(f.experiment_sections)}), "
            f"supported by {f.tables} table(s) and {f.figures} figure(s)."
        )
    if f.references >= 25:
        where = f", discussed in '{f.body.heading}'" if f.body is not None else ""
        out.append(f"Well grounded in prior work: about {f.references} references{where}.")
    if f.code_link:
        out.append(f"Supports reproducibility with a link to code or data ({f.code_link}).")
    elif f.code_statement:
        out.append("Says that its code or data are released, which helps reproducibility.")
    if f.limitations is not None:
        out.append(f"Discusses its limitations openly in '{f.limitations.heading}'.")
    if f.significance:
        out.append("Reports variance or significance (standard deviations, tests or intervals).")
    if f.ablation and f.experiment_sections:
        out.append("Includes an ablation, isolating the effect of individual design choices.")
    if f.human_study:
        out.append("Includes human judgements (a user study or human evaluation).")
    if f.top_sections:
        out.append(
            f"Clearly organised: {len(f.top_sections)} top-level sections over {f.pages} "
            f"page(s), from '{f.top_sections[0].heading}' to '{f.top_sections[-1].heading}'."
        )
    return out


def _weaknesses_and_suggestions(f: PaperFacts) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    conclusion = f"'{f.conclusion.heading}'" if f.conclusion is not None else "the conclusion"
    if f.limitations is None:
        pairs.append(
            (
                "No section is devoted to limitations"
                + (
                    "; they are mentioned only in passing."
                    if f.mentions_limitations
                    else f", and {conclusion} does not say where the approach falls short."
                ),
                f"Add a Limitations section (or a paragraph in {conclusion}) naming the "
                "settings where the method is expected to fail.",
            )
        )
    if not f.experiment_sections:
        pairs.append(
            (
                "No section reports experiments or an evaluation, so the claims rest on "
                "argument alone.",
                "Add an evaluation that tests the central claim against a baseline.",
            )
        )
    elif not f.significance:
        pairs.append(
            (
                f"Results in {_names(f.experiment_sections, 2)} are reported without variance, "
                "confidence intervals or significance tests.",
                "Report means over several runs with standard deviations or confidence "
                "intervals, and test whether the differences are significant.",
            )
        )
    if not f.code_link and not f.code_statement:
        pairs.append(
            (
                "No link to code or data appears in the paper, which makes the results hard "
                "to reproduce.",
                "Release the code, data and configuration used for the experiments, and link "
                "them from the paper.",
            )
        )
    if f.references < 15:
        pairs.append(
            (
                f"Only about {f.references} references: a thin base for positioning the work.",
                "Broaden the related-work discussion with the closest recent work and say "
                "how this paper differs from each.",
            )
        )
    if f.experiment_sections and not f.ablation:
        pairs.append(
            (
                "No ablation separates the contribution of each component.",
                "Add an ablation that removes one component at a time.",
            )
        )
    if f.conclusion is not None and f.conclusion.words < 80:
        pairs.append(
            (
                f"{conclusion} is brief ({f.conclusion.words} words).",
                f"Expand {conclusion} to restate the findings and their implications.",
            )
        )
    if f.abstract_words > 250:
        pairs.append(
            (
                f"The abstract is long ({f.abstract_words} words).",
                "Trim the abstract to about 150-200 words: problem, method, main result.",
            )
        )
    if f.figures == 0:
        pairs.append(
            (
                "The main text has no figures.",
                "Add a figure of the method's overview or of the main results.",
            )
        )
    if not f.future_work:
        pairs.append(
            (
                "The paper does not say what should come next.",
                f"Close {conclusion} with concrete future work.",
            )
        )
    if f.longest is not None and f.main_words:
        share = round(100 * count_words(f.longest.text) / f.main_words)
        if share >= 35 or not pairs:
            pairs.append(
                (
                    f"The text is unevenly balanced: '{f.longest.heading}' alone holds about "
                    f"{share}% of the main text's words.",
                    f"Tighten '{f.longest.heading}' or move its details to an appendix.",
                )
            )
    return pairs


def offline_review(paper: Paper) -> Review:
    """A review whose every remark names something in ``paper``; deterministic."""
    facts = paper_facts(paper)
    strengths = _strengths(facts)[:MAX_REMARKS]
    pairs = _weaknesses_and_suggestions(facts)[:MAX_REMARKS]
    if not strengths:
        strengths = [f"A {facts.main_words}-word text over {facts.pages} page(s) on its topic."]
    if not pairs:
        pairs = [
            (
                "The paper has no section headings, so a reader cannot navigate it.",
                "Organise the text into headed sections.",
            )
        ]
    return Review(
        strengths=strengths,
        weaknesses=[w for w, _ in pairs],
        suggestions=[s for _, s in pairs],
    )
