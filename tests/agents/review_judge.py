"""Judging a review and a summary against the facts a careful reader found in the paper.

Each PDF of ``../shared/corpus`` and ``../shared/corpus-next`` has a label file under
``tests/agents/review_labels/<folder>/<path>.toml``, written by reading the paper: the kinds a
reader accepts, its main result, and, as ``{ p = page, q = "words" }`` entries, the sentences
that report its own results, state its limits, leave work for later, release code or data
(``at``: where), give a sample size or number of runs, give a spread or a test, or compare with
a named other system (``with``: what). An empty list means the reader looked and found none.

:func:`judge_review` reads each point of a review the way a reader does: what it claims (a
result, a spread, an absence...) from its words, and which passage it rests on from its quote.
A point is ``true`` when the labels bear it out, ``vacuous`` when it is a template that says
nothing about this paper, ``misleading`` when its quote is real but is not evidence of what it
claims, ``false`` when the labels contradict it, and ``unjudged`` when no rule reads it (a test
fails on that: a new kind of point needs a rule here). Summaries are checked for the main
result's number and for the debris classes of issue 37 (:func:`summary_debris`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Literal

from sagagraph.agents.engine import Review
from sagagraph.agents.reply_checks import QUOTED, text_key
from sagagraph.agents.words import split_sentences

LABELS = Path(__file__).parent / "review_labels"
"""Where the label files live, one per PDF: ``<folder>/<papers|not_papers>/<stem>.toml``."""

Verdict = Literal["true", "vacuous", "misleading", "false", "unjudged"]
VERDICTS: tuple[Verdict, ...] = ("true", "vacuous", "misleading", "false", "unjudged")
KindVerdict = Literal["right", "not determined", "wrong"]

FACTS = ("results", "limits", "future_work", "release", "sample", "spread", "comparisons")
"""The label lists every label file of a paper has (an empty list: none in the paper)."""
MIN_MATCH = 40
"""Characters (letters and digits) a quote must share with a labelled passage to be it."""


@dataclass(frozen=True)
class Passage:
    """A labelled passage: its page, its words, and what it names (``at`` or ``with``)."""

    page: int
    text: str
    names: str = ""


@dataclass(frozen=True)
class Labels:
    """What a careful reader found in one PDF."""

    file: str
    """``corpus/papers/x.pdf``."""
    loaded: bool
    kinds: tuple[str, ...]
    """Kinds a reader accepts; "not determined" is always accepted."""
    abstract_words: int = 0
    abstract_numbers: tuple[str, ...] = ()
    """The main result's number as the abstract prints it (any one will do); () when none."""
    main_result: Passage | None = None
    limitations_heading: bool = False
    subsectioned: tuple[str, ...] = ()
    """Top-level sections that already have sub-sections (numbered or run-in)."""
    closing_words: int | None = None
    facts: dict[str, tuple[Passage, ...]] = field(default_factory=dict)

    def passages(self, fact: str) -> tuple[Passage, ...] | None:
        """The labelled passages of ``fact``; None when the label file does not say."""
        return self.facts.get(fact)


def label_file(folder: str, name: str) -> Path:
    """The label file of ``name`` (``papers/x.pdf``) in corpus folder ``folder``."""
    return LABELS / folder / Path(name).with_suffix(".toml")


def _passages(raw: Iterable[dict[str, object]]) -> tuple[Passage, ...]:
    return tuple(
        Passage(int(str(e["p"])), str(e["q"]), str(e.get("at", e.get("with", "")))) for e in raw
    )


def read_labels(folder: str, name: str) -> Labels:
    """The labels of one PDF; FileNotFoundError when nobody has written them yet."""
    data = tomllib.loads(label_file(folder, name).read_text())
    facts = {k: _passages(data[k]) for k in FACTS if k in data}
    for k, v in data.get("other", {}).items():
        facts[k] = _passages(v)
    main = data.get("main_result")
    closing = data.get("closing")
    return Labels(
        file=f"{folder}/{name}",
        loaded=bool(data.get("loaded", True)),
        kinds=tuple(data.get("kinds", ())),
        abstract_words=int(data.get("abstract_words", 0)),
        abstract_numbers=tuple(data.get("abstract_numbers", ())),
        main_result=_passages([main])[0] if main else None,
        limitations_heading=bool(data.get("limitations_heading", False)),
        subsectioned=tuple(data.get("subsectioned", ())),
        closing_words=int(closing["words"]) if closing else None,
        facts=facts,
    )


# -- matching a quote to a labelled passage --------------------------------------------------


def same_passage(quote: str, passage: str) -> bool:
    """True when ``quote`` and ``passage`` are (parts of) the same words of the paper."""
    a = text_key(quote.replace("...", " "))
    b = text_key(passage)
    if not a or not b:
        return False
    if a in b or b in a:
        return True
    m = SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b))
    return m.size >= min(MIN_MATCH, len(a), len(b))


def matching(quote: str, passages: Sequence[Passage]) -> Passage | None:
    return next((p for p in passages if same_passage(quote, p.text)), None)


# -- what a point claims ---------------------------------------------------------------------

Claim = tuple[str, str]
"""(kind of claim, fact it concerns): ``("has", "spread")``, ``("absent", "limits")``..."""

_I = re.IGNORECASE
# Each rule: the words of a point (before its quote) -> what it claims. The first that matches
# decides. Phrasings of the reviewer before and after issue 37 are both read.
_RULES: tuple[tuple[re.Pattern[str], Claim], ...] = tuple(
    (re.compile(pattern, _I), claim)
    for pattern, claim in (
        # claims of absence (the old reviewer's "... is not stated (searched ...)")
        (r"searched the whole text", ("absent", "")),
        # structural facts
        (r"no section or paragraph is headed", ("structure", "limitations_heading")),
        (r"gather the limits", ("structure", "limitations_heading")),
        (r"the abstract is long|trim the abstract", ("structure", "abstract_long")),
        (r"carries the most text|^split ", ("structure", "split")),
        (r"closing section .* is brief|^expand ", ("structure", "closing_brief")),
        # templates that say nothing checkable about the paper
        (r"^states what it contributes|^states its aim", ("vacuous", "")),
        (r"^opens on its subject", ("vacuous", "")),
        (r"offline rules found nothing missing|offline rules read english", ("vacuous", "")),
        (r"paper is not in english", ("vacuous", "")),
        (r"^for a judgement of .* review the paper with a language model", ("vacuous", "")),
        (r"^point from .* to the table|^make the evidence for", ("pointer", "")),
        # positive claims, new phrasings
        (r"^reports a result with its number", ("has", "results")),
        (r"^gives (?:the )?spread|^gives a (?:test|spread)", ("has", "spread")),
        (r"^compares its result", ("has", "comparisons")),
        (r"^says where its .* (?:is|are) available", ("has", "release")),
        (r"^states its sample", ("has", "sample")),
        (r"^states a limit|^the paper states a limit|^say how much", ("has", "limits")),
        (r"^leaves for later|^the paper leaves|^report a first result", ("has", "future_work")),
        # positive claims, old phrasings
        (r"^states a concrete result", ("has", "results")),
        (r"^reports the spread or significance", ("has", "spread")),
        (r"^compares its results with other approaches", ("has", "comparisons")),
        (r"^studies the effect of its design choices", ("has", "ablation")),
        (r"^makes its work available", ("has", "release")),
        (r"^discusses its limitations", ("has", "limits")),
        (r"^measures how the system performs", ("has", "results")),
        (r"^evaluates with people", ("has", "human_study")),
        (r"^states how its data were analysed", ("has", "analysis")),
        (r"^reports ethical approval", ("has", "ethics")),
        (r"^says how the works it covers were chosen", ("has", "selection")),
        (r"^names the questions it leaves open", ("has", "future_work")),
        (r"^illustrates its use with an example", ("has", "example")),
        (r"^takes on objections", ("has", "counterarguments")),
    )
)
# What an old claim of absence (or its advice) says is missing, by its words.
_ABSENT: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, _I), fact)
    for pattern, fact in (
        (
            r"not compared|no baseline|compare (?:the main result|with the tools|features)",
            "comparisons",
        ),
        (r"without a spread|spread over repeated", "spread"),
        (
            r"limits|cannot do|risks to the plan|where the findings may not hold|"
            r"describe the cases|does not support yet|who and what the data leave out|assumptions",
            "limits",
        ),
        (
            r"available|where the data can be|licence|where .* can be obtained|distributed",
            "release",
        ),
        (r"performance or use is not measured|measure the system", "results"),
        (r"no example|not illustrated|worked example", "example"),
        (r"analysed|analysis method", "analysis"),
        (r"ethic", "ethics"),
        (r"surveyed works were chosen|inclusion criteria", "selection"),
        (r"open problems|no concrete agenda|research questions", "future_work"),
        (r"counter-arguments|strongest objection", "counterarguments"),
    )
)
_ADVICE = re.compile(r"^in '[^']*', \(p\.\d+\) \"[^\"]*\": (.*)$", _I)
"""An old suggestion: ``In 'section', (p.N) "quote": advice``; the advice says what is missing."""


def claim_of(point: str) -> Claim | None:
    """What ``point`` claims, from its words; None when no rule reads it."""
    words = point
    advice = _ADVICE.match(point)
    if advice:
        words = advice.group(1)
        for pattern, fact in _ABSENT:
            if pattern.search(words):
                return ("absent", fact)
    for pattern, claim in _RULES:
        if pattern.search(words):
            if claim == ("absent", ""):
                before = words.split("searched the whole text")[0]
                for absent, fact in _ABSENT:
                    if absent.search(before):
                        return ("absent", fact)
                return None
            return claim
    return None


def quotes_of(point: str) -> list[tuple[int, str]]:
    return [(int(m.group(1)), m.group(2)) for m in QUOTED.finditer(point)]


@dataclass(frozen=True)
class Judged:
    """One point of a review and its verdict."""

    part: str
    point: str
    claim: Claim | None
    verdict: Verdict
    why: str


def _has(fact: str, quote: str, point: str, labels: Labels) -> tuple[Verdict, str]:
    passages = labels.passages(fact)
    if passages is None:
        return "unjudged", f"no label for {fact}"
    if not passages:
        return "false", f"the paper has no {fact} (labels: none)"
    found = matching(quote, passages)
    if found is None:
        return "misleading", f"the quote is not one of the paper's {fact}"
    return "true", f"{fact} p.{found.page}"


def _structure(fact: str, quote: str, point: str, labels: Labels) -> tuple[Verdict, str]:
    if fact == "limitations_heading":
        if labels.limitations_heading:
            return "false", "the paper has a Limitations heading"
        return "true", "no Limitations heading"
    if fact == "abstract_long":
        long = labels.abstract_words > 250
        return ("true" if long else "false"), f"the abstract has {labels.abstract_words} words"
    if fact == "split":
        if any(h in point for h in labels.subsectioned):
            return "false", "that section already has sub-sections"
        return "vacuous", "a section's length, no finding about the paper"
    if fact == "closing_brief":
        if labels.closing_words is None:
            return "unjudged", "no label for the closing section"
        brief = labels.closing_words <= 100
        return ("true" if brief else "false"), f"the closing has {labels.closing_words} words"
    return "unjudged", f"no rule for {fact}"


_POINTER = re.compile(r"\b(?:Tables?|Fig(?:ure)?s?\.?|Section|§)\s*\d", _I)


def judge_point(part: str, point: str, labels: Labels) -> Judged:
    """The verdict on one point (see the module docstring)."""
    claim = claim_of(point)
    quotes = quotes_of(point)
    quote = quotes[0][1] if quotes else ""
    if claim is None:
        return Judged(part, point, None, "unjudged", "no rule reads this point")
    kind, fact = claim
    verdict: Verdict
    if kind == "vacuous":
        verdict, why = "vacuous", "a template"
    elif kind == "pointer":
        # "Make the evidence for X easy to find": false when X already points to it.
        cited = _POINTER.search(quote)
        verdict, why = ("false", "it already cites its evidence") if cited else ("vacuous", "")
    elif kind == "absent":
        passages = labels.passages(fact)
        if passages is None:
            verdict, why = "unjudged", f"no label for {fact}"
        elif passages:
            verdict, why = "false", f"the paper has {fact}: p.{passages[0].page}"
        else:
            verdict, why = "true", f"no {fact} in the paper"
    elif kind == "structure":
        verdict, why = _structure(fact, quote, point, labels)
    else:
        verdict, why = _has(fact, quote, point, labels)
    return Judged(part, point, claim, verdict, why)


def judge_review(review: Review, labels: Labels) -> list[Judged]:
    """Every point of ``review``, judged against ``labels``."""
    return [
        judge_point(part, point, labels)
        for part in ("strengths", "weaknesses", "suggestions")
        for point in getattr(review, part)
    ]


KIND_WORDS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(pattern, _I), kinds)
    for pattern, kinds in (
        (r"^not determined", ()),
        (r"^an empirical study", ("empirical",)),
        (r"^a system paper", ("system",)),
        (r"^a survey", ("survey",)),
        (r"^a theory paper", ("theory",)),
        (r"^a qualitative or clinical study", ("qualitative", "clinical")),
        (r"^a qualitative study", ("qualitative",)),
        (r"^a clinical or epidemiological study", ("clinical",)),
        (r"^a software or package paper", ("software",)),
        (r"^a position paper", ("position",)),
        (r"^a dataset paper", ("dataset",)),
        (r"^a research proposal", ("proposal",)),
        (r"^a method or algorithm paper", ("method",)),
        (r"^a systematic review or meta-analysis", ("meta-analysis",)),
        (r"^a tutorial", ("tutorial",)),
        (r"^a thesis", ("thesis",)),
    )
)


def judge_kind(kind: str, labels: Labels) -> KindVerdict:
    """``right`` when the review's kind is one a reader accepts, ``not determined`` when it
    withholds one, ``wrong`` otherwise (a kind stated with confidence and not accepted)."""
    for pattern, kinds in KIND_WORDS:
        if pattern.search(kind.strip()):
            if not kinds:
                return "not determined"
            return "right" if set(kinds) & set(labels.kinds) else "wrong"
    return "wrong"


# -- summaries -------------------------------------------------------------------------------

DEBRIS: dict[str, re.Pattern[str]] = {
    "roadmap": re.compile(
        r"\b(?:in|see) (?:this|the next|the following|the previous|the last) (?:section|chapter)\b|"
        r"\b(?:Sections?|Sec\.|Chapters?|§)\s*\d|\bthe rest of (?:this|the) (?:paper|thesis)\b|"
        r"\bis (?:organi[sz]ed|structured) as follows\b|\bwe (?:will )?(?:discuss|describe) "
        r"(?:this|these|it|them)? ?(?:later|below|in (?:the )?(?:next|following))\b",
        _I,
    ),
    "figure or table": re.compile(
        r"\b(?:Fig(?:ure)?s?\.?|Tables?|Appendix)\s*[\dA-Z]\b|\b(?:as|is|are) shown\b|\bshown in\b|"
        r"\bthe (?:figure|table|plot) (?:above|below)\b|\bby looking at the (?:figure|table)\b|"
        r"\b(?:see|in) (?:the )?(?:figure|table)\b",
        _I,
    ),
    "dangling this": re.compile(
        r"^(?:This|These|That|Those|Such|It|They)\b(?! (?:paper|study|work|article|thesis|"
        r"survey|review|report|research|project|proposal)\b)|^(?:In|For|With|By|From|Of|To) "
        r"(?:this|these|that|such) (?!(?:paper|study|work|article|thesis|survey|review|report|"
        r"research|project|proposal)\b)\w+",
    ),
}
REPEAT_OVERLAP = 0.7
"""Two summary sentences sharing this share of their words (Jaccard) say the same thing."""


def _words(sentence: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", sentence.lower()) if len(w) > 2}


def summary_debris(text: str) -> list[tuple[str, str]]:
    """``(class, sentence)`` for each sentence of ``text`` that is debris, repeats included."""
    out: list[tuple[str, str]] = []
    sentences = split_sentences(text)
    for sentence in sentences:
        for name, pattern in DEBRIS.items():
            if pattern.search(sentence):
                out.append((name, sentence))
    seen: list[set[str]] = []
    for sentence in sentences:
        words = _words(sentence)
        for earlier in seen:
            union = words | earlier
            if union and len(words & earlier) / len(union) >= REPEAT_OVERLAP:
                out.append(("repeat", sentence))
                break
        seen.append(words)
    return out


def holds_number(text: str, numbers: Sequence[str]) -> bool:
    """True when ``text`` prints one of ``numbers`` (or ``numbers`` is empty)."""
    if not numbers:
        return True
    folded = " ".join(text.split())
    return any(n in folded for n in numbers)
