"""What kind of paper this is, decided from words the paper prints, which the review quotes.

A reviewer asks different things of an experiment, a software package, a focus-group study, a
survey or a proof: :func:`paper_kind` reads the title, the abstract and the opening and method
sections for the marks of each kind, in order of how specific they are, and returns the kind
with the sentence that decided it (:class:`KindEvidence`), so the review can say why.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sagagraph.agents.paper import Paper
from sagagraph.agents.paper_sentences import Sentence, cites_others

PaperKind = Literal[
    "empirical",
    "system",
    "survey",
    "theory",
    "qualitative",
    "software",
    "position",
    "dataset",
    "proposal",
]

KIND_NAMES: dict[PaperKind, str] = {
    "empirical": "an empirical study",
    "system": "a system paper",
    "survey": "a survey",
    "theory": "a theory paper",
    "qualitative": "a qualitative or clinical study",
    "software": "a software or package paper",
    "position": "a position paper",
    "dataset": "a dataset paper",
    "proposal": "a research proposal",
}
"""How a review names each kind."""

_I = re.IGNORECASE
_MARKS: tuple[tuple[PaperKind, re.Pattern[str]], ...] = (
    (
        "proposal",
        re.compile(
            r"\b(?:research proposal|this proposal|proposed research|we will (?:study|"
            r"investigate|develop|evaluate))\b",
            _I,
        ),
    ),
    (
        "survey",
        re.compile(
            r"\b(?:this|our|in this) (?:survey|systematic review|literature review|review "
            r"article)\b|\bwe (?:survey|review) (?:the|recent|existing)\b",
            _I,
        ),
    ),
    ("position", re.compile(r"\b(?:position paper|vision paper|manifesto|this essay)\b", _I)),
    (
        "software",
        re.compile(
            r"\b(?:R|Python|Julia|MATLAB|Stata|software) (?:package|library|toolbox)\b|"
            r"\bpackage (?:is|was) (?:freely |publicly )?available\b|\bCRAN\b|\bPyPI\b|"
            r"\b(?:we|this (?:paper|article)) (?:present|presents|describe|describes|"
            r"introduce|introduces) [^.]{0,40}\b(?:package|library|toolbox|software)\b|"
            r"\bse (?:desarroll[óo]|presenta) (?:un|el) software\b",
            _I,
        ),
    ),
    (
        "qualitative",
        re.compile(
            r"\bfocus groups?\b|\bsemi-structured interviews?\b|\bthematic analysis\b|"
            r"\bqualitative (?:study|research|analysis|interviews?)\b|\bgrounded theory\b|"
            r"\b(?:population-based|prospective|retrospective|longitudinal) (?:cohort |"
            r"prospective )?(?:study|cohort)\b|\b(?:randomi[sz]ed|controlled) (?:clinical )"
            r"?trial\b|\bcase-control study\b|\bcohort study\b",
            _I,
        ),
    ),
    (
        "dataset",
        re.compile(
            r"\bwe (?:release|introduce|present|construct|build)\b[^.]{0,80}\b(?:dataset|"
            r"corpus|benchmark|collection of)\b",
            _I,
        ),
    ),
    (
        "system",
        re.compile(
            r"\bwe (?:present|built|build|design|designed|develop|developed|introduce|"
            r"implemented)\b[^.]{0,80}\b(?:system|tool|interface|prototype|platform|"
            r"toolkit)\b|\b(?:programming model|run-time system|runtime system) and an? "
            r"(?:associated )?implementation\b",
            _I,
        ),
    ),
)
_THEOREM = re.compile(r"\b(?:Theorem|Lemma|Proposition|Corollary)\s+\d", _I)
_FRONT_SECTION = re.compile(r"abstract|summary|introduction|overview|resum|method|material", _I)


@dataclass(frozen=True)
class KindEvidence:
    """The kind of paper and the sentence that shows it (None for the default)."""

    kind: PaperKind
    evidence: Sentence | None
    why: str
    """What in the evidence decided it (``'focus group'``), or why the default applies."""

    @property
    def name(self) -> str:
        return KIND_NAMES[self.kind]

    def describe(self) -> str:
        """``a software or package paper, from (p.1) "..."`` for the review's header."""
        if self.evidence is None:
            return f"{self.name} ({self.why})"
        return f"{self.name}: '{self.why}' in {self.evidence.cite()}"


def paper_kind(paper: Paper, sentences: Sequence[Sentence], experiments: bool) -> KindEvidence:
    """The kind of ``paper``, from its title and its opening and method sentences.

    ``experiments`` tells whether the paper has a section of experiments or results: a paper
    with theorems and none is a theory paper; without any mark the paper is empirical.
    """
    front = [s for s in sentences if _FRONT_SECTION.search(s.section.name)][:80]
    # A sentence that cites others describes their work, not this paper's kind.
    pool = [s for s in (front or list(sentences[:80])) if not cites_others(s.text)]
    for kind, pattern in _MARKS:
        if kind == "software" and re.search(r"\bsoftware\b", paper.title, _I):
            first = next((s for s in pool if re.search(r"\bsoftware\b", s.text, _I)), None)
            if first is not None:
                return KindEvidence(kind, first, "software")
        for sentence in pool:
            m = pattern.search(sentence.text)
            if m:
                return KindEvidence(kind, sentence, m.group(0))
    if not experiments:
        theorem = next((s for s in sentences if _THEOREM.search(s.text)), None)
        if theorem is not None and len(_THEOREM.findall(paper.text)) >= 3:
            m = _THEOREM.search(theorem.text)
            return KindEvidence("theory", theorem, m.group(0) if m else "theorem")
    return KindEvidence(
        "empirical", None, "no mark of another kind in its title, abstract or method"
    )
