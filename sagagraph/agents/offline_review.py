"""The offline reviewer: strengths, weaknesses and suggestions that say only what was checked.

No model is involved. :func:`~sagagraph.agents.paper_facts.paper_facts` searches the paper
for what a reviewer looks for, in all its usual forms, and counts figures, tables and
references. :func:`offline_review` turns those facts into remarks: each one cites the section
and page it rests on, a claim of absence says what was searched for, and the advice fits the
kind of paper (an ablation for an empirical paper, counter-arguments for a position paper,
selection criteria for a survey...). It is a heuristic review; render_review says so.
"""

from __future__ import annotations

import re

from sagagraph.agents.paper import Paper, Section
from sagagraph.agents.paper_facts import PRACTICES, PaperFacts, cite, paper_facts
from sagagraph.agents.schemas import Review

MAX_REMARKS = 5
"""At most this many strengths, weaknesses and suggestions each."""

OFFLINE_REVIEW_NOTE = (
    "Heuristic offline review: rules over the paper's text, without a language model. "
    "For a model's review, run with --llm openai and set OPENAI_API_KEY (and OPENAI_BASE_URL "
    "for another OpenAI-compatible server)."
)
"""The header of an offline ``review.txt``."""

Pair = tuple[str, str]
_MEASURED = re.compile(r"experiment|evaluation|results|ablation|benchmark|human", re.I)

SEARCHED = {
    "ablation": "'ablation', 'model variations', 'we vary', 'sensitivity analysis' or variants "
    "of the model",
    "baseline": "'baseline', 'compared with', 'outperforms' or 'state of the art'",
    "significance": "standard deviations, '±', confidence intervals or significance tests",
    "code": "a repository link or a statement that code or data are available",
    "limitations": "'limitations', 'threats to validity', 'shortcomings' or failure cases",
    "counterarguments": "counter-arguments, objections or alternative views",
    "agreement": "inter-annotator agreement (kappa, Krippendorff)",
    "license": "a licence, a datasheet or terms of use",
    "selection method": "inclusion criteria or how the surveyed works were searched for",
    "human study": "a user study, human evaluation or participants",
    "example": "a worked example or an illustration",
    "future work": "'future work', 'open problems' or 'in the future'",
}
"""What a claim of absence says was searched for, by practice (see PRACTICES)."""


def _names(sections: tuple[Section, ...], limit: int = 3) -> str:
    shown = [cite(s) for s in sections[:limit]]
    more = len(sections) - limit
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _strengths(f: PaperFacts) -> list[str]:
    out: list[str] = []
    first = f.top_sections[0] if f.top_sections else None
    abstract = f.paper.abstract_section()
    if f.claim:
        where = cite(abstract) if abstract is not None else "the abstract (p.1)"
        out.append(f'States its contribution plainly in {where}: "{f.claim}"')
    if f.experiment_sections:
        out.append(
            f"Backs its claims with an empirical part ({_names(f.experiment_sections)}); the "
            f"paper numbers {f.tables} table(s) and {f.figures} figure(s)."
        )
    # Praise rests on the paper's own work, not on what its opening or background reviews.
    framing = {f.paper.abstract_section(), f.body, first}
    for name, praise in (
        ("ablation", "Studies the effect of its design choices"),
        ("significance", "Reports variance or significance"),
        ("human study", "Includes human judgements"),
        ("code", "Supports reproducibility with released code or data"),
    ):
        hit = f.found.get(name)
        if hit is not None and (name == "code" or hit.section not in framing):
            out.append(f'{praise} in {cite(hit.section)} ("{hit.phrase}").')
    refs = f.paper.references_section()
    if f.references >= 25 and refs is not None:
        where = f", discussed in {cite(f.body)}" if f.body is not None else ""
        out.append(f"Grounded in prior work: {f.references} entries in {cite(refs)}{where}.")
    if f.top_sections and first is not None:
        out.append(
            f"Clearly organised: {len(f.top_sections)} top-level sections over "
            f"{len(f.paper.pages)} page(s), from {cite(first)} to {cite(f.top_sections[-1])}."
        )
    return out


def _absent(f: PaperFacts, name: str, weakness: str, where: Section | None, advice: str) -> Pair:
    return (
        f"{weakness} (searched every section for {SEARCHED[name]}; none found).",
        f"In {cite(where)}, {advice}",
    )


def _kind_pairs(f: PaperFacts) -> list[Pair]:
    """What is missing for this kind of paper, with advice that fits it."""
    measured = [s for s in f.experiment_sections if _MEASURED.search(s.name)]
    pool = measured or list(f.experiment_sections)
    results = pool[-1] if pool else f.body
    method = f.body or (f.top_sections[1] if len(f.top_sections) > 1 else None)
    closing = f.conclusion
    wanted: dict[str, list[tuple[str, str, Section | None, str]]] = {
        "empirical": [
            (
                "baseline",
                "No comparison with a baseline",
                results,
                "compare against the strongest published baseline on the same data.",
            ),
            (
                "ablation",
                "No ablation separates the contribution of each component",
                results,
                "add a table that removes or varies one component at a time.",
            ),
            (
                "significance",
                "Results come without variance or significance",
                results,
                "report the spread over several runs or seeds and test the main differences.",
            ),
            (
                "code",
                "No code or data release is mentioned",
                closing,
                "link the code, data and configuration behind the results.",
            ),
        ],
        "dataset": [
            (
                "code",
                "The data release is not stated",
                closing,
                "say where the data can be downloaded and under which terms.",
            ),
            (
                "agreement",
                "Annotation quality is not measured",
                method,
                "report inter-annotator agreement on a doubly annotated sample.",
            ),
            (
                "license",
                "Licensing and intended use are not documented",
                closing,
                "add a datasheet: provenance, licence, intended and unintended uses.",
            ),
            (
                "baseline",
                "No baseline results on the new data",
                results,
                "report how standard systems score on it, to show its difficulty.",
            ),
        ],
        "system": [
            (
                "human study",
                "The system is not evaluated with users",
                results,
                "run a study with the intended users and report what they could do.",
            ),
            (
                "code",
                "Availability of the system is not stated",
                closing,
                "say whether and where the system or a demo can be used.",
            ),
            (
                "baseline",
                "The system is not compared with existing tools",
                results,
                "compare with the tools people use today for the same task.",
            ),
        ],
        "position": [
            (
                "counterarguments",
                "Counter-arguments are not discussed",
                closing,
                "state the strongest objection to the position and answer it.",
            ),
            (
                "future work",
                "No concrete agenda follows from the position",
                closing,
                "turn the argument into a few concrete research questions.",
            ),
            (
                "example",
                "The argument is not illustrated",
                method,
                "ground the claims with a worked example or a case.",
            ),
        ],
        "theory": [
            (
                "example",
                "The results are not illustrated",
                method,
                "add a worked example showing a theorem's bound on a concrete case.",
            ),
            (
                "limitations",
                "The assumptions' limits are not discussed",
                closing,
                "say which assumptions are strongest and what breaks without them.",
            ),
        ],
        "survey": [
            (
                "selection method",
                "How the surveyed works were chosen is not said",
                method,
                "describe the search and the inclusion criteria, so coverage can be judged.",
            ),
            (
                "future work",
                "Open problems are not summarised",
                closing,
                "end with the open problems the survey reveals.",
            ),
        ],
    }
    pairs = []
    for name, weakness, where, advice in wanted[f.kind]:
        if name not in f.found:
            pairs.append(_absent(f, name, weakness, where, advice))
    return pairs


def _weaknesses_and_suggestions(f: PaperFacts) -> list[Pair]:
    pairs = _kind_pairs(f)
    closing = f.conclusion
    if "limitations" not in f.found and f.kind != "theory":
        pairs.append(
            _absent(
                f,
                "limitations",
                "Limitations are not discussed",
                closing,
                "add a paragraph on where the approach fails and why.",
            )
        )
    refs = f.paper.references_section()
    if refs is not None and f.references < 15:
        pairs.append(
            (
                f"Only {f.references} entries in {cite(refs)}: a thin base for positioning "
                "the work.",
                f"In {cite(f.body or closing)}, discuss the closest recent work and say how "
                "this paper differs from each.",
            )
        )
    if closing is not None and closing.words < 80:
        pairs.append(
            (
                f"{cite(closing)} is brief ({closing.words} words).",
                f"Expand {cite(closing)} to restate the findings and their implications.",
            )
        )
    abstract = f.paper.abstract_section()
    if f.abstract_words > 250:
        pairs.append(
            (
                f"The abstract ({cite(abstract) if abstract else 'p.1'}) is long "
                f"({f.abstract_words} words, footnotes excluded).",
                "Trim the abstract to about 150-200 words: problem, method, main result.",
            )
        )
    if not pairs and f.top_sections:
        longest = max(f.top_sections, key=lambda s: s.words)
        pairs.append(
            (
                f"{cite(longest)} carries the most text ({longest.words} words) and is the "
                "hardest to follow.",
                f"Split {cite(longest)} into subsections, or move details to an appendix.",
            )
        )
    return pairs


def offline_review(paper: Paper) -> Review:
    """A review whose every remark cites a section and page of ``paper``; deterministic."""
    facts = paper_facts(paper)
    strengths = _strengths(facts)[:MAX_REMARKS]
    pairs = _weaknesses_and_suggestions(facts)[:MAX_REMARKS]
    if not strengths:
        strengths = [f"A {paper.word_count}-word text over {len(paper.pages)} page(s)."]
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


__all__ = ["MAX_REMARKS", "OFFLINE_REVIEW_NOTE", "PRACTICES", "SEARCHED", "offline_review"]
