"""The offline reviewer: strengths, weaknesses and suggestions, each quoting the paper.

No model is involved. The reviewer reads the paper as sentences with their pages
(:mod:`~sagagraph.agents.paper_sentences`), decides what kind of paper it is from words it
quotes (:mod:`~sagagraph.agents.paper_kind`), and asks of it what fits that kind
(:data:`CRITERIA`): a focus-group study is asked about its participants, analysis and ethics,
not for an ablation; a software package about its availability and an example of use. A
practice counts as present only in a sentence about the paper's own work
(:mod:`~sagagraph.agents.practices`), and as missing only when none of its words occurs in the
whole text; every point carries ``(p.N) "the paper's words"``, which
:mod:`~sagagraph.agents.quote_check` verifies. It is a heuristic review; the header says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sagagraph.agents.paper import Paper
from sagagraph.agents.paper_kind import KindEvidence, PaperKind, paper_kind
from sagagraph.agents.paper_sentences import (
    Sentence,
    cites_others,
    own_section,
    paper_sentences,
)
from sagagraph.agents.practices import PRACTICES, Practice
from sagagraph.agents.quote_check import PageKeys
from sagagraph.agents.schemas import Review
from sagagraph.agents.text_repair import known
from sagagraph.agents.words import count_words

MAX_REMARKS = 5
"""At most this many strengths, weaknesses and suggestions each."""

OFFLINE_REVIEW_NOTE = (
    "Heuristic offline review: rules over the paper's text, without a language model; every "
    'point quotes the paper as (p.N) "...". For a model\'s review, run with --llm openai and '
    "set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible server)."
)
"""The header of an offline ``review.txt``."""

SEARCHED_WHERE = "searched the whole text, references and appendices included, for"
"""How a claim of absence says what it searched (the verifier repeats the search)."""


@dataclass(frozen=True)
class Criterion:
    """A practice a kind of paper is asked for, and the advice when it is missing."""

    practice: str
    weakness: str
    advice: str


CRITERIA: dict[PaperKind, tuple[Criterion, ...]] = {
    "empirical": (
        Criterion(
            "baseline",
            "the results are not compared with another approach",
            "compare the main result with the strongest published alternative.",
        ),
        Criterion(
            "significance",
            "the results come without a spread or a significance test",
            "report the spread over repeated runs or samples and test the main difference.",
        ),
        Criterion(
            "limitations",
            "the limits of the findings are not discussed",
            "say where the findings may not hold and why.",
        ),
        Criterion(
            "code",
            "the data and code behind the results are not said to be available",
            "say where the data and code behind the results can be obtained.",
        ),
    ),
    "system": (
        Criterion(
            "evaluation",
            "the system's performance or use is not measured",
            "measure the system on realistic work, or with the people it is built for.",
        ),
        Criterion(
            "baseline",
            "the system is not compared with existing tools",
            "compare with the tools people use today for the same task.",
        ),
        Criterion(
            "limitations",
            "failure cases and limits are not discussed",
            "describe the cases the system handles badly.",
        ),
        Criterion(
            "code",
            "availability of the system is not stated",
            "say whether and where the system can be used.",
        ),
    ),
    "software": (
        Criterion(
            "code",
            "where and under which licence the software is available is not stated",
            "state where the software is distributed and under which licence.",
        ),
        Criterion(
            "example",
            "no example shows the software in use",
            "add a short worked example of a typical use.",
        ),
        Criterion(
            "baseline",
            "the software is not compared with existing packages",
            "compare features or speed with the packages users know.",
        ),
        Criterion(
            "limitations",
            "what the software cannot do is not stated",
            "list what the software does not support yet.",
        ),
    ),
    "qualitative": (
        Criterion(
            "analysis method",
            "how the data were analysed is not stated",
            "name the analysis method (thematic, content, statistical) and who did it.",
        ),
        Criterion(
            "ethics",
            "ethical approval and consent are not reported",
            "report the ethics approval and how consent was obtained.",
        ),
        Criterion(
            "limitations",
            "the limits of the sample and design are not discussed",
            "discuss how the sample and design limit what can be generalised.",
        ),
    ),
    "survey": (
        Criterion(
            "selection method",
            "how the surveyed works were chosen is not said",
            "describe the search and the inclusion criteria, so coverage can be judged.",
        ),
        Criterion(
            "future work",
            "open problems are not summarised",
            "end with the open problems the survey reveals.",
        ),
    ),
    "theory": (
        Criterion(
            "example",
            "the results are not illustrated on a concrete case",
            "add a worked example showing a result on a concrete case.",
        ),
        Criterion(
            "limitations",
            "the limits of the assumptions are not discussed",
            "say which assumptions are strongest and what breaks without them.",
        ),
    ),
    "position": (
        Criterion(
            "counterarguments",
            "counter-arguments are not discussed",
            "state the strongest objection to the position and answer it.",
        ),
        Criterion(
            "future work",
            "no concrete agenda follows from the position",
            "turn the argument into a few concrete research questions.",
        ),
    ),
    "dataset": (
        Criterion(
            "code",
            "where the data can be obtained is not stated",
            "say where the data can be downloaded and under which terms.",
        ),
        Criterion(
            "baseline",
            "no baseline results are reported on the new data",
            "report how standard systems score on it, to show its difficulty.",
        ),
        Criterion(
            "limitations",
            "the data's limits and biases are not discussed",
            "describe who and what the data leave out.",
        ),
    ),
    "proposal": (
        Criterion(
            "limitations",
            "risks to the plan are not discussed",
            "name the main risks to the plan and a fallback for each.",
        ),
    ),
}
"""What each kind of paper is asked for, in order of importance."""

PRAISED: dict[PaperKind, tuple[str, ...]] = {
    "empirical": ("significance", "baseline", "ablation", "code", "limitations"),
    "system": ("evaluation", "human study", "baseline", "code", "limitations"),
    "software": ("code", "example", "baseline", "limitations"),
    "qualitative": ("human study", "analysis method", "ethics", "significance", "limitations"),
    "survey": ("selection method", "future work"),
    "theory": ("example", "limitations"),
    "position": ("counterarguments", "future work"),
    "dataset": ("code", "baseline", "human study", "limitations"),
    "proposal": ("limitations",),
}
"""The practices a strength may rest on, by kind."""

_CLAIM = re.compile(
    r"\b(?:we (?:propose|present|introduce|show|find|found|release|describe|argue|develop|"
    r"study|examine|investigate|report|evaluate|demonstrate)|(?:this|the present) (?:paper|"
    r"study|work|article|thesis|package) (?:proposes|presents|introduces|shows|describes|"
    r"investigates|examines|argues|develops|reports|explores|provides)|in this (?:paper|work|"
    r"study|thesis|article),? we (?:propose|present|introduce|show|describe|argue|develop|study|"
    r"report|explore|investigate)|the (?:aim|objective|purpose|goal) of (?:this|the present) "
    r"(?:study|paper|work|thesis)|(?:main |major )?contributions? of this (?:work|paper))\b",
    re.IGNORECASE,
)
_OWN_VOICE = re.compile(r"\b(?:we|our|this (?:study|paper|work|thesis)|the present)\b", re.I)
_RESULT = re.compile(
    r"\b(?:achiev\w+|outperform\w*|improv\w+|reduc\w+|increas\w+|decreas\w+|found|finds?|shows?|"
    r"showed|demonstrat\w+|results? (?:show|indicate|suggest)|significantly|associated|"
    r"yield\w*|reach\w*|obtain\w*)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d")
# Section names (lower case, no accents) of the parts a point is anchored in.
_ABSTRACT = re.compile(r"^(?:abstract|summary|resum)")
_RESULTS = re.compile(
    r"\b(?:experiments?|experimental|evaluation|results?|findings|case study|benchmarks?|"
    r"resultados|resultats|ergebnisse|risultati)\b"
)
_CONCLUSION = re.compile(
    r"\b(?:conclusions?|concluding|closing remarks|final remarks|discussion|conclusiones|"
    r"conclusao|conclusoes|conclusioni|outlook|perspectives)\b"
)
_METHOD = re.compile(
    r"\b(?:methods?|methodology|materials|approach|design|implementation|procedure|"
    r"participants|metodo|metodologia)\b"
)


def _part(sentences: Sequence[Sentence], pattern: re.Pattern[str]) -> list[Sentence]:
    return [s for s in sentences if pattern.search(s.section.name)]


def _first(sentences: Sequence[Sentence], pattern: re.Pattern[str]) -> Sentence | None:
    return next((s for s in sentences if pattern.search(s.text)), None)


def prose(sentence: Sentence) -> bool:
    """True for a sentence worth quoting: prose, not a caption, a table row or a formula."""
    text = sentence.text
    words = text.split()
    if not 6 <= len(words) <= 70 or not text[0].isupper():
        return False
    if re.match(r"^(?:\(?[A-Za-z]\)|Fig(?:ure)?\.?\s*\d|Table\s+\w+|Source:|Fonte:)", text):
        return False
    visible = [c for c in text if not c.isspace()]
    if sum(c.isalpha() for c in visible) < 0.75 * len(visible):
        return False
    return sum(any(c.isdigit() for c in w) for w in words) <= 0.2 * len(words)


@dataclass(frozen=True)
class _Reading:
    """What the reviewer knows about a paper before it writes a point."""

    paper: Paper
    keys: PageKeys
    sentences: list[Sentence]
    kind: KindEvidence
    claim: Sentence | None
    result: Sentence | None
    results_part: Sentence | None
    """The first sentence of the results (or method) section: where a suggestion goes."""
    closing: Sentence | None
    english: bool
    """Whether the paper is written in English (most of its words are English ones)."""


def _english(text: str) -> bool:
    tokens = re.findall(r"[A-Za-z]{2,}", text)[:5000]
    return bool(tokens) and sum(known(t) for t in tokens) >= 0.7 * len(tokens)


def _read(paper: Paper) -> _Reading:
    keys = PageKeys.of(paper.pages)
    sentences = paper_sentences(paper, keys)
    own = [s for s in sentences if own_section(s.section) and prose(s)]
    abstract = _part(own, _ABSTRACT)
    results = _part(own, _RESULTS)
    conclusion = _part(own, _CONCLUSION)
    method = _part(own, _METHOD)
    claim = _first(abstract, _CLAIM) or _first(own[:60], _CLAIM)
    stated = [
        s
        for s in [*abstract, *conclusion, *results]
        if _RESULT.search(s.text)
        and s is not claim
        and not cites_others(s.text)
        and (
            _OWN_VOICE.search(s.text)
            or (s.section in {a.section for a in abstract} and _NUMBER.search(s.text))
        )
    ]
    result = next((s for s in stated if _NUMBER.search(s.text)), None) or next(iter(stated), None)
    kind = paper_kind(paper, own, experiments=bool(results))
    return _Reading(
        paper=paper,
        keys=keys,
        sentences=own,
        kind=kind,
        claim=claim,
        result=result if result is not claim else None,
        results_part=next(iter(results or method or own), None),
        closing=conclusion[-1] if conclusion else None,
        english=_english(paper.text),
    )


def _strengths(r: _Reading) -> list[str]:
    out: list[str] = []
    if r.claim is not None:
        out.append(f"States what it contributes {r.claim.cite()}.")
    if r.result is not None:
        out.append(f"States a concrete result {r.result.cite()}.")
    for name in PRAISED[r.kind.kind]:
        hit = PRACTICES[name].evidence(r.sentences)
        if hit is not None and hit is not r.claim and hit is not r.result:
            out.append(f"{PRACTICES[name].praise} {hit.cite()}.")
    return out


def _where(s: Sentence | None) -> str:
    return f"'{s.section.heading}'" if s is not None else "the paper"


def _absent(r: _Reading, practice: Practice, criterion: Criterion) -> tuple[str, str] | None:
    """A weakness and its suggestion when the practice is missing from the whole text.

    Never for a paper not written in English: the words searched for are English ones, so
    their absence would prove nothing.
    """
    if not r.english:
        return None
    if practice.evidence(r.sentences) is not None or not practice.missing(r.keys):
        return None
    anchor = r.result or r.claim or r.results_part
    if anchor is None:
        return None
    where = r.results_part if criterion.practice in ("baseline", "significance") else r.closing
    where = where or anchor
    weakness = (
        f"For {r.kind.name}, {criterion.weakness} ({SEARCHED_WHERE} {practice.searched()}: "
        f"none found), though it states {anchor.cite()}."
    )
    suggestion = f"In {_where(where)}, {where.cite()}: {criterion.advice}"
    return weakness, suggestion


def _general(r: _Reading) -> list[tuple[str, str]]:
    """Points any kind of paper may get: a long abstract, a brief closing, a long section."""
    pairs: list[tuple[str, str]] = []
    abstract = [s for s in r.sentences if re.match(r"abstract|summary", s.section.name)]
    words = count_words(r.paper.abstract)
    if abstract and words > 250:
        first = abstract[0]
        pairs.append(
            (
                f"The abstract is long ({words} words); it opens {first.cite()}.",
                f"Trim the abstract, which opens {first.cite()}, to about 150-200 words: "
                "problem, method, main result.",
            )
        )
    closing = r.closing
    if closing is not None and closing.section.words < 80:
        pairs.append(
            (
                f"The closing section {_where(closing)} is brief ({closing.section.words} "
                f"words): {closing.cite()}.",
                f"Expand {_where(closing)}, which ends {closing.cite()}, to restate the findings "
                "and what follows from them.",
            )
        )
    sections = [s for s in r.paper.main_sections() if s.level == 1 and own_section(s)]
    if sections:
        longest = max(sections, key=lambda s: s.words)
        opening = next((s for s in r.sentences if s.section is longest), None)
        if opening is not None and longest.words > 1500:
            pairs.append(
                (
                    f"{_where(opening)} carries the most text ({longest.words} words), from "
                    f"{opening.cite()}, and is the hardest to follow.",
                    f"Split {_where(opening)}, which opens {opening.cite()}, into subsections, or "
                    "move details to an appendix.",
                )
            )
    return pairs


def _fallback(r: _Reading) -> tuple[str, str] | None:
    """A last weakness when every check passed: the claim the reader must take on trust."""
    anchor = r.result or r.claim or r.results_part or next(iter(r.sentences), None)
    if anchor is None:
        return None
    if not r.english:
        return (
            f"The paper is not in English, so the offline rules, which search for English "
            f"words, cannot tell what it lacks; a reader should check the passage "
            f"{anchor.cite()} against its evidence.",
            f"Point from {anchor.cite()} to the table, figure or section that supports it.",
        )
    return (
        f"The offline rules found nothing missing for {r.kind.name}; the central claim "
        f"{anchor.cite()} still needs a reader's check against the evidence.",
        f"Make the evidence for {anchor.cite()} easy to find: point from it to the table, figure "
        "or section that supports it.",
    )


def offline_review(paper: Paper) -> Review:
    """A review whose every point quotes ``paper`` with its page; deterministic."""
    r = _read(paper)
    strengths = _strengths(r)[:MAX_REMARKS]
    pairs = [
        pair
        for c in CRITERIA[r.kind.kind]
        if (pair := _absent(r, PRACTICES[c.practice], c)) is not None
    ]
    pairs += _general(r)
    if not pairs and (last := _fallback(r)) is not None:
        pairs.append(last)
    pairs = pairs[:MAX_REMARKS]
    first = r.sentences[0] if r.sentences else None
    if not strengths and first is not None:
        strengths = [f"Opens on its subject {first.cite()}."]
    return Review.model_construct(
        strengths=strengths,
        weaknesses=[w for w, _ in pairs],
        suggestions=[s for _, s in pairs],
        dropped=[],
        kind=r.kind.describe(),
    )


__all__ = ["CRITERIA", "MAX_REMARKS", "OFFLINE_REVIEW_NOTE", "offline_review"]
