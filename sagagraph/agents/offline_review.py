"""The offline reviewer: strengths, weaknesses and suggestions it can verify, each quoting it.

No model is involved, so the review says only what its rules can check in the paper's own words,
and withholds the rest (issue 37):

- a strength rests on evidence of its kind (:mod:`~sagagraph.agents.practices`): a result with
  its number, a spread or a test, a comparison that names what it is compared with, a release
  with its location, the size of the sample; the point names the detail ("28.4", "BM25",
  "github.com/...") and quotes the passage;
- a weakness comes from the paper's own words (:mod:`~sagagraph.agents.stated_limits`): a limit
  it states, or what it leaves for later; or from a fact of structure, stated as such ("no
  section or paragraph is headed Limitations"). It never claims that something is absent from
  the paper, which a keyword search cannot know;
- the kind of paper is named only on strong evidence, else "not determined"
  (:mod:`~sagagraph.agents.paper_kind`), and no kind brings a checklist.

Every point carries ``(p.N) "the paper's words"``, which :mod:`~sagagraph.agents.quote_check`
verifies. When nothing checkable is found, the review says so in a point that quotes the
paper's own statement of its aim; a paper not written in English gets only such points, since
the rules read English.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from sagagraph.agents.engine import Review
from sagagraph.agents.paper import Paper
from sagagraph.agents.paper_kind import KindEvidence, paper_kind
from sagagraph.agents.paper_sentences import Sentence, own_section, paper_sentences
from sagagraph.agents.practices import (
    Evidence,
    comparisons,
    first,
    in_abstract,
    own_names,
    releases,
    results,
    samples,
    spreads,
)
from sagagraph.agents.quote_check import PageKeys
from sagagraph.agents.stated_limits import left_for_later, limitations_heading, stated_limits
from sagagraph.agents.summary_prose import debris_kind
from sagagraph.agents.words import ENGLISH_SHARE, english_share

MAX_STRENGTHS = 5
"""At most this many strengths."""
MAX_WEAKNESSES = 3
"""At most this many weaknesses (each with its suggestion)."""
MAX_REMARKS = MAX_STRENGTHS
"""The longest list a review has."""

OFFLINE_REVIEW_NOTE = (
    "Heuristic offline review: rules over the paper's text, without a language model. It states "
    "only what the rules can check in the paper's own words, each point quoting the paper as "
    '(p.N) "..."; it does not judge the science. For a model\'s review, run with --llm openai and '
    "set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible server)."
)
"""The header of an offline ``review.txt``."""

_AIM = re.compile(
    r"\b(?:we (?:propose|present|introduce|show|study|examine|investigate|describe|argue|develop|"
    r"sought|aim)|(?:this|the present) (?:paper|study|work|article|thesis) [a-z]+s\b|the (?:aim|"
    r"objective|purpose|goal) of (?:this|the present)|in this (?:paper|work|study|thesis|"
    r"article))\b",
    re.IGNORECASE,
)


_MATH = re.compile(r"[=≤≥∑∏∫∈⊂⊆∀∃∇∂√θαβγλσμ⊤→←∼~·]")


def prose(sentence: Sentence) -> bool:
    """True for a sentence worth quoting: prose, not a caption, a table row, a list of bullets
    or a formula."""
    text = sentence.text
    words = text.split()
    if not 6 <= len(words) <= 80 or not (text[0].isupper() or text[0].isdigit()):
        return False
    if re.match(r"^(?:\(?[A-Za-z]\)|Fig(?:ure)?\.?\s*\d|Table\s+\w+|Source:|Fonte:)", text):
        return False
    # Statistics in parentheses ("(hazard ratio = 0.97, 95% CI ...)") are prose; formulas not.
    outside = re.sub(r"\([^()]*\)", "", text)
    symbols = sum(unicodedata.category(c) == "Sm" for c in outside if c not in "+<>=")
    if "•" in text or len(_MATH.findall(outside)) >= 2 or symbols >= 2 or "||" in text:
        return False
    visible = [c for c in text if not c.isspace()]
    if sum(c.isalpha() for c in visible) < 0.7 * len(visible):
        return False
    return sum(any(c.isdigit() for c in w) for w in words) <= 0.3 * len(words)


def _english(text: str) -> bool:
    return english_share(text) >= ENGLISH_SHARE


@dataclass(frozen=True)
class _Reading:
    """What the reviewer found in a paper before it writes a point."""

    sentences: list[Sentence]
    names: frozenset[str]
    kind: KindEvidence
    aim: Sentence | None
    english: bool


def _own_sections(paper: Paper) -> set[int]:
    """The ids of the sections that hold the paper's own work: not related work, background or
    back matter, nor a sub-section of one ("2.1" under "2 Related work")."""
    own: set[int] = set()
    others: list[str] = []
    for section in paper.sections:
        number = re.match(r"^(\d+(?:\.\d+)*)\.?\s", section.heading)
        inside = number is not None and any(number.group(1).startswith(f"{n}.") for n in others)
        if not own_section(section) or inside:
            if number is not None:
                others.append(number.group(1))
            continue
        own.add(id(section))
    return own


def _read(paper: Paper) -> _Reading:
    sentences = [s for s in paper_sentences(paper, PageKeys.of(paper.pages)) if prose(s)]
    own_ids = _own_sections(paper)
    own = [s for s in sentences if id(s.section) in own_ids]
    names = own_names(paper, own)
    english = _english(paper.text)
    aim = next((s for s in own if _AIM.search(s.text) and in_abstract(s)), None) or next(
        (s for s in own[:80] if _AIM.search(s.text)), None
    )
    if english:
        kind = paper_kind(paper, own, measured=bool(results(own, names)))
    else:
        kind = KindEvidence(
            None, None, "the rules read English prose, which too few of its words are"
        )
    return _Reading(own, names, kind, aim, english)


def _strengths(r: _Reading) -> list[str]:
    """Points that each rest on evidence of their kind, the main result first."""
    out: list[str] = []
    used: list[Sentence] = []

    def add(evidence: Evidence | None, text: str) -> None:
        if evidence is not None and len(out) < MAX_STRENGTHS:
            out.append(f"{text}: {evidence.cite()}.")
            used.append(evidence.sentence)

    s = r.sentences
    compared = comparisons(s, r.names)
    result = first(results(s, r.names))
    if result is not None:
        against = next((c.detail for c in compared if c.sentence is result.sentence), None)
        detail = f"{result.detail}, against {against}" if against else result.detail
        add(result, f"Reports a result with its number ({detail})")
    spread = first(spreads(s, r.names))
    add(spread, f"Gives the spread or a test of a result ({spread.detail})" if spread else "")
    other = first(compared, used)
    add(other, f"Compares its result with {other.detail}" if other else "")
    release = first(releases(s, r.names))
    if release is not None:
        what = _released_what(release.sentence.text)
        add(release, f"Says where its {what} {_verb(what)} available ({release.detail})")
    sample = first(samples(s, r.names))
    add(sample, f"States its sample ({sample.detail})" if sample else "")
    return out


def _released_what(text: str) -> str:
    found = re.findall(r"\b(code|data|software|models?|implementation)\b", text, re.IGNORECASE)
    words = list(dict.fromkeys(w.lower() for w in found))
    return " and ".join(words[:2]) or "work"


def _verb(what: str) -> str:
    return "are" if " and " in what or what.endswith("s") else "is"


def _weaknesses(r: _Reading, paper: Paper) -> list[tuple[str, str]]:
    """(weakness, suggestion) pairs from the paper's own words and facts of its structure."""
    pairs: list[tuple[str, str]] = []
    limits = stated_limits(r.sentences, r.names)[:2]
    for limit in limits:
        cite = limit.cite()
        pairs.append(
            (
                f"The paper states a limit of its own work: {cite}.",
                f"Say how much the limit it states, {cite}, bears on its main result, and test "
                "it where the data allow.",
            )
        )
    quoted = {id(e.sentence) for e in limits}
    later = _standing_alone(
        [e for e in left_for_later(r.sentences, r.names) if id(e.sentence) not in quoted]
    )
    if later is not None:
        cite = later.cite()
        pairs.append(
            (
                f"The paper leaves for later: {cite}.",
                f"Report a first result on what it leaves for later, {cite}, or say what "
                "stands in the way.",
            )
        )
    heading = limitations_heading(paper) if not pairs else None
    if heading is not None:
        # A run-in "Limitations. Our sample ..." paragraph the section list does not show.
        opening = _opening_after(heading, paper, r.sentences)
        if opening is not None:
            cite = opening.cite()
            pairs.append(
                (
                    f"The paper states a limit of its own work: {cite}.",
                    f"Say how much the limit it states, {cite}, bears on its main result, and "
                    "test it where the data allow.",
                )
            )
    elif not pairs:
        anchor = _closing_anchor(r.sentences)
        if anchor is not None:
            cite = anchor.cite()
            pairs.append(
                (
                    "No section or paragraph is headed 'Limitations' or 'Threats to validity' "
                    f"(headings and paragraph openings searched); the closing part opens {cite}.",
                    f"Gather the limits of the work under a Limitations heading near {cite}.",
                )
            )
    return pairs[:MAX_WEAKNESSES]


def _opening_after(heading: str, paper: Paper, sentences: Sequence[Sentence]) -> Sentence | None:
    """The sentence a run-in heading opens ("Limitations. Only volunteers took part ...")."""
    for page in paper.pages:
        at = page.find(heading)
        if at < 0:
            continue
        words = page[at + len(heading) :].lstrip(" .:—–-\n").split()[:6]
        start = " ".join(words)
        found = next((s for s in sentences if s.text.startswith((heading, start)) and start), None)
        if found is not None:
            return found
    return None


def _standing_alone(evidence: Sequence[Evidence]) -> Evidence | None:
    """The first piece of evidence whose sentence does not open on "This" or "It" (which would
    leave the reader asking what it is), else the first."""
    alone = (e for e in evidence if not re.match(r"(?:This|These|That|It|They)\b", e.sentence.text))
    return next(alone, None) or next(iter(evidence), None)


def _closing_anchor(sentences: Sequence[Sentence]) -> Sentence | None:
    """The closing part's first sentence (not an authors' note that a PDF ran into it)."""
    body = [s for s in sentences if debris_kind(s.text) is None]
    closing = [s for s in body if re.search(r"conclu|discussion", s.section.name)]
    return closing[0] if closing else (body[-1] if body else None)


def _nothing_checkable(r: _Reading) -> tuple[str, str, str] | None:
    """A strength, weakness and suggestion that say the rules found nothing they can check,
    each quoting the paper's statement of its aim (or its first sentence)."""
    anchor = r.aim or next(iter(r.sentences), None)
    if anchor is None:
        return None
    cite = anchor.cite()
    why = (
        "too few of the paper's words read as English prose for them"
        if not r.english
        else "the rules found no statement of its own limits or unfinished work"
    )
    return (
        f"States its aim: {cite}.",
        f"The offline rules read English phrasing and state no weakness they cannot check: {why}; "
        f"a reader should weigh {cite} against its evidence.",
        f"For a judgement of {cite} that the offline rules cannot give, review the paper with a "
        "language model (--llm openai).",
    )


def offline_review(paper: Paper) -> Review:
    """A review whose every point quotes ``paper`` with its page; deterministic."""
    r = _read(paper)
    strengths = _strengths(r) if r.english else []
    pairs = _weaknesses(r, paper) if r.english else []
    fallback = _nothing_checkable(r)
    if fallback is not None:
        if not strengths:
            strengths = [fallback[0]]
        if not pairs:
            pairs = [(fallback[1], fallback[2])]
    return Review.model_construct(
        strengths=strengths,
        weaknesses=[w for w, _ in pairs],
        suggestions=[s for _, s in pairs],
        dropped=[],
        kind=r.kind.describe(),
    )


__all__ = ["MAX_REMARKS", "OFFLINE_REVIEW_NOTE", "offline_review"]
