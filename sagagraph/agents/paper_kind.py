"""What kind of paper this is, stated only when the paper's own words make it plain.

A wrong kind stated with confidence misleads a reader more than no kind at all, so
:func:`paper_kind` names a kind only on strong evidence, and says "not determined" otherwise:
the paper says what it is in the first person or in its title ("In this position paper", "A
Tutorial on", a thesis's cover), or two independent marks agree: what its contribution
sentence says it presents and how its body is built (docs/reviewer.md lists them). There is
no default kind. The evidence is kept (:class:`KindEvidence`) so the review can quote it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sagagraph.agents.evidence import Sentence, cites_others
from sagagraph.agents.paper import Paper

PaperKind = Literal[
    "empirical",
    "method",
    "system",
    "software",
    "dataset",
    "survey",
    "meta-analysis",
    "theory",
    "qualitative",
    "clinical",
    "position",
    "tutorial",
    "thesis",
    "proposal",
]

KIND_NAMES: dict[PaperKind, str] = {
    "empirical": "an empirical study",
    "method": "a method or algorithm paper",
    "system": "a system paper",
    "software": "a software or package paper",
    "dataset": "a dataset paper",
    "survey": "a survey",
    "meta-analysis": "a systematic review or meta-analysis",
    "theory": "a theory paper",
    "qualitative": "a qualitative study",
    "clinical": "a clinical or epidemiological study",
    "position": "a position paper",
    "tutorial": "a tutorial or teaching text",
    "thesis": "a thesis",
    "proposal": "a research proposal",
}
"""How a review names each kind."""
NOT_DETERMINED = "not determined"

_I = re.IGNORECASE


def _compiled(
    table: tuple[tuple[PaperKind, str], ...],
) -> tuple[tuple[PaperKind, re.Pattern[str]], ...]:
    return tuple((kind, re.compile(pattern, _I)) for kind, pattern in table)


# The paper saying what it is: one mark is enough.
_SELF = _compiled(
    (
        (
            "meta-analysis",
            r"\b(?:this|our|we (?:conducted|performed|present|report)(?: a| an)?(?: separate| two|"
            r" both)?) (?:systematic (?:literature )?review(?: and meta-?analysis)?|"
            r"meta-?analys[ie]s)\b|\b(?:studies|trials|articles|cohorts) were included in the "
            r"(?:meta-?analysis|systematic review)\b",
        ),
        (
            "survey",
            r"\b(?:in )?this (?:survey|literature review|review article)\b|\bwe survey "
            r"(?:the|recent|existing)\b",
        ),
        (
            "position",
            r"\b(?:this|our) (?:position|vision) paper\b|\bin this (?:position|vision) "
            r"paper\b",
        ),
        ("tutorial", r"\b(?:this|our) tutorial\b|\bin this tutorial\b"),
        ("proposal", r"\b(?:this|our) (?:research )?proposal\b"),
        ("thesis", r"\b(?:this|the present) (?:thesis|dissertation)\b"),
    )
)
_TITLE = _compiled(
    (
        # The title presents itself as one ("...: A Systematic Review and Meta-Analysis", "A
        # Meta-Analysis of"), not what it studies ("Heterogeneity in Meta-Analyses"). A PDF
        # whose hyphens are soft hyphens loses them ("metaanalysis").
        (
            "meta-analysis",
            r"(?:^|[:.?—–]\s*|\b(?:an?|and|updated)\s+)(?:systematic (?:literature )?review|"
            r"meta-?analysis)\b",
        ),
        ("survey", r"^(?:a )?survey\b|\ba survey (?:of|on)\b|\bliterature review\b"),
        ("tutorial", r"\btutorial\b|\blecture notes\b|\ba primer\b|\ban introduction to\b"),
        ("proposal", r"\bresearch proposal\b"),
    )
)
# What the contribution sentence says the paper presents: one mark of two.
_PRESENTS = re.compile(
    r"\b(?:we (?:propose|present|introduce|develop|design|describe|build|built|implement|"
    r"release|construct)|this (?:paper|work|article) (?:proposes|presents|introduces|describes)|"
    r"is a programming model)\b[^.]{0,120}",
    _I,
)
_OBJECTS = _compiled(
    (
        (
            "software",
            r"\b(?:R|Python|Julia|MATLAB|Stata|software) (?:package|library|toolbox)\b|"
            r"\bpackage\b",
        ),
        ("dataset", r"\b(?:dataset|data set|corpus|benchmark|collection of [\d,.]+\w*)\b"),
        (
            "system",
            r"\b(?:system|tool|interface|platform|prototype|implementation|"
            r"infrastructure|programming model and an? (?:\w+ )?implementation)\b",
        ),
        (
            "method",
            r"\b(?:model|method|algorithm|architecture|estimator|technique|objective|"
            r"training scheme|loss|procedure|mechanism|approach)\b",
        ),
        ("theory", r"\b(?:notion|definition|formulation|theorem|bound|characteri[sz]ation)\b"),
    )
)
# How the body is built: the second mark.
_HEADINGS: dict[PaperKind, re.Pattern[str]] = {
    "software": re.compile(r"\b(?:installation|usage|package|availability)\b"),
    "dataset": re.compile(r"\b(?:dataset|data set|corpus|datasheet|data collection)\b"),
    "system": re.compile(
        r"\b(?:implementation|system design|architecture|usability|user study|"
        r"deployment|design)\b"
    ),
    "method": re.compile(r"\b(?:experiments?|evaluation|results)\b"),
    "theory": re.compile(r"\b(?:proofs?|theorems?|lemmas?|preliminaries)\b"),
}
_THEOREM = re.compile(r"\b(?:Theorem|Lemma|Proposition|Corollary)\s+\d", _I)
_QUALITATIVE = re.compile(
    r"\bfocus groups?\b|\bsemi-structured interviews?\b|\bthematic analysis\b|\bgrounded "
    r"theory\b|\bqualitative (?:study|research|analysis|interviews?)\b",
    _I,
)
_CLINICAL = re.compile(
    r"\b(?:population-based|prospective|retrospective|longitudinal) (?:\w+ )?(?:study|cohort)\b|"
    r"\bcohort\b|\bcase-control\b|\brandomi[sz]ed (?:controlled )?(?:clinical )?trial\b|"
    r"\bhazard ratios?\b|\bodds ratios?\b|\bincidence\b|\bcox (?:proportional|regression)\b",
    _I,
)
_THESIS_COVER = re.compile(
    r"\bthesis to obtain\b|\bsubmitted in partial fulfil+ment\b|\b(?:master|doctor) of "
    r"(?:science|philosophy|arts)\b|\bdissertation submitted\b|\bmaster'?s thesis\b",
    _I,
)
_METHODS = re.compile(r"\b(?:methods?|materials|methodology|experimental (?:setup|design))\b")
_FRONT = re.compile(r"abstract|summary|resum|introduction|overview|motivation")
_RESULTS = re.compile(r"\bresults?\b")


@dataclass(frozen=True)
class KindEvidence:
    """The kind of paper with the evidence for it, or no kind (``kind`` None) and why."""

    kind: PaperKind | None
    evidence: Sentence | None
    why: str
    """What decided it (``'In this position paper'``, ``title 'A Tutorial on Sagas'``)."""

    @property
    def name(self) -> str:
        return KIND_NAMES[self.kind] if self.kind else NOT_DETERMINED

    def describe(self) -> str:
        """The review's "Kind of paper" line."""
        if self.kind is None:
            return f"{NOT_DETERMINED} ({self.why})"
        if self.evidence is None:
            return f"{self.name}: {self.why}"
        return f"{self.name}: {self.why}, in {self.evidence.cite()}"


def _self_described(paper: Paper, pool: Sequence[Sentence]) -> KindEvidence | None:
    for kind, pattern in _SELF:
        for s in pool:
            m = pattern.search(s.text)
            if m:
                return KindEvidence(kind, s, f"'{m.group(0)}'")
    for kind, pattern in _TITLE:
        m = pattern.search(paper.title)
        if m:
            return KindEvidence(kind, None, f"its title says '{m.group(0)}' ({paper.title!r})")
    front = "\n".join(paper.pages[:3])
    cover = _THESIS_COVER.search(front)
    chapters = sum(1 for s in paper.sections if re.match(r"(?i)^chapter\s+\d", s.heading))
    if cover and chapters >= 2:
        return KindEvidence(
            "thesis", None, f"'{cover.group(0)}' on its cover and {chapters} numbered chapters"
        )
    return None


def _object(words: str) -> tuple[PaperKind, re.Match[str]] | None:
    """The kind of the first thing ``words`` name (a system, a model, a dataset...); a word in
    a compound ("Language-Model Agents") names nothing by itself."""
    words = re.sub(r"\w+(?:-\w+)+", lambda m: "_" * len(m.group(0)), words)
    hits = [(m.start(), kind, m) for kind, pattern in _OBJECTS if (m := pattern.search(words))]
    if not hits:
        return None
    _, kind, m = min(hits, key=lambda hit: hit[0])
    return kind, m


def _presented(pool: Sequence[Sentence]) -> tuple[PaperKind, Sentence, str] | None:
    """The kind of thing the first contribution sentence presents."""
    for s in pool:
        m = _PRESENTS.search(s.text)
        if m is None or cites_others(s.text):
            continue
        found = _object(m.group(0))
        if found is not None:
            kind, obj = found
            return kind, s, f"'{m.group(0)[: obj.end()].strip()}'"
    return None


def _marks(sentences: Sequence[Sentence], pattern: re.Pattern[str]) -> tuple[Sentence, str] | None:
    """The first sentence with a mark of ``pattern`` and two distinct marks, or None."""
    text = " ".join(s.text for s in sentences)
    # "semi-structured interviews" and "the semi-structured interview" are one mark.
    marks = list(dict.fromkeys(re.sub(r"s$", "", m.lower()) for m in pattern.findall(text)))
    if len(marks) < 2:
        return None
    first = next(s for s in sentences if pattern.search(s.text))
    return first, f"'{marks[0]}' and '{marks[1]}'"


def paper_kind(paper: Paper, sentences: Sequence[Sentence], measured: bool) -> KindEvidence:
    """The kind of ``paper`` when its evidence is strong (see the module docstring).

    ``sentences`` are the paper's own prose sentences; ``measured`` tells whether they report
    a result with a number (:func:`~sagagraph.agents.evidence.results`).
    """
    front = [s for s in sentences if _FRONT.match(s.section.name)][:80]
    pool = front or list(sentences[:80])
    told = _self_described(paper, pool)
    if told is not None:
        return told
    headings = " | ".join(s.name for s in paper.sections)
    theorems = len(_THEOREM.findall(paper.text))
    presented = _presented(pool)
    if presented is not None:
        kind, sentence, what = presented
        title = _object(paper.title)
        part = _HEADINGS[kind].search(headings) if kind in _HEADINGS else None
        if kind == "theory" and theorems >= 3:
            return KindEvidence(kind, sentence, f"{what} and {theorems} theorems or lemmas")
        if kind != "theory" and title is not None and title[0] == kind:
            return KindEvidence(kind, sentence, f"{what} and its title {paper.title!r}")
        if kind != "theory" and part is not None and (kind != "method" or measured):
            return KindEvidence(kind, sentence, f"{what} and a section on '{part.group(0)}'")
    # A paper that says what it presents (a method, a system ...) and whose evidence for that
    # kind falls short is of that kind or undetermined, never another kind by its vocabulary
    # (a survival-analysis method compared with Cox regression is no clinical study).
    for kind, pattern in (
        () if presented is not None else (("qualitative", _QUALITATIVE), ("clinical", _CLINICAL))
    ):
        marks = _marks(sentences, pattern)
        if marks is not None:
            return KindEvidence(kind, marks[0], marks[1])
    text = " ".join(s.text for s in sentences)
    if theorems >= 3 and not measured and re.search(r"\bwe (?:prove|derive)\b", text, _I):
        first = next(s for s in sentences if _THEOREM.search(s.text) or "prove" in s.text)
        return KindEvidence("theory", first, f"'we prove' and {theorems} theorems or lemmas")
    if measured and _METHODS.search(headings) and _RESULTS.search(headings):
        return KindEvidence(
            "empirical", None, "a methods and a results section, with measured results"
        )
    return KindEvidence(None, None, "its title, abstract and outline do not make it plain")
