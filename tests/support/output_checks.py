"""Properties every summary and review must have, as assertion helpers (not snapshots).

A summary is judged against its paper: exactly N words, every sentence a whole sentence of the
paper (so it ends on one and nothing was cut), none of the debris of PDF text, sentences that
stand alone, in the paper's order, drawn from its opening, middle and closing. A review is
judged by its evidence: every point quotes the paper on the page it gives, every
``'heading' (p.N)`` is a section of the paper on that page, and no claim of absence is
contradicted by the paper's text.
"""

from __future__ import annotations

import re

from sagagraph.agents.engine import Review
from sagagraph.agents.offline_summary import clean_text
from sagagraph.agents.paper import Paper
from sagagraph.agents.reply_checks import QUOTED, verify_review
from sagagraph.agents.words import lost_ligatures, repair_words, split_sentences

DEBRIS = {
    "dangling opener": re.compile(r"^(?:Also|This|These|However)\b"),
    "citation stub": re.compile(r"\b(?:to|by|in|of|see|and|as|with|than|from)\s*[.]$"),
    "empty brackets": re.compile(r"\(\s*\)|\[\s*\]"),
    "formula debris": re.compile(r"[∑∏∫∈∉⊂⊆∀∃∇∂√|]"),
    "glued footnote number": re.compile(r"[a-z]{3}\d{1,2}(?=[\s,.;:—–]|$)"),
    "bullet": re.compile(r"^[•◦▪‣●○■–—-]\s"),
    "abbreviation taken for an end": re.compile(r"\b(?:vs|e\.g|i\.e|et al|Fig|Eq)\.$"),
}
_CITED = re.compile(r"'([^']{1,120})' \(p\.(\d+)\)")
"""A section cited by heading and page (``'3 Method' (p.4)``)."""


def _folded(text: str, ligatures: bool = False) -> str:
    """The paper's text as the summarizer reads it: citations out, broken words repaired."""
    return " ".join(repair_words(clean_text(text), ligatures=ligatures).split())


def assert_summary_is_prose(paper: Paper, text: str, words: int) -> None:
    assert len(text.split()) == words
    sentences = split_sentences(text)
    assert sentences and text.rstrip()[-1] in ".!?"
    source = _folded(paper.main_text(), lost_ligatures(paper.text))
    last = -1
    for sentence in sentences:
        for name, pattern in DEBRIS.items():
            assert not pattern.search(sentence), f"{name}: {sentence!r}"
        # A whole sentence of the paper: its text, then the paper's own sentence end; and
        # after the previous one (a sentence the paper prints twice may match either).
        assert source.find(sentence[:-1]) >= 0, f"not a sentence of the paper: {sentence!r}"
        at = source.find(sentence[:-1], last + 1)
        assert at >= 0, f"out of the paper's order: {sentence!r}"
        assert source[at + len(sentence) - 1] in ".!?", f"cut sentence: {sentence!r}"
        last = at
    for note in paper.notes:
        if len(note.split()) >= 4:
            assert note not in text, f"footnote leaked: {note!r}"


def assert_summary_covers_the_paper(paper: Paper, text: str) -> None:
    """Sentences come from the first, middle and last third of the main text."""
    source = _folded(paper.main_text(), lost_ligatures(paper.text))
    thirds = {min(2, 3 * source.find(s[:-1]) // max(len(source), 1)) for s in split_sentences(text)}
    assert thirds == {0, 1, 2}, thirds


def assert_review_is_grounded(paper: Paper, review: Review) -> None:
    """Every point quotes the paper on the page it gives, and no claimed absence is
    contradicted by the text (the quote check keeps every point); the kind is named."""
    remarks = review.strengths + review.weaknesses + review.suggestions
    assert review.strengths and review.weaknesses and review.suggestions
    for r in remarks:
        assert QUOTED.search(r), f"no (p.N) quote: {r!r}"
    verified, dropped = verify_review(review, paper.pages)
    assert not dropped, [d.describe() for d in dropped]
    assert verified.strengths == review.strengths
    pages = {(s.heading, s.page) for s in paper.sections}
    for heading, page in _CITED.findall(" ".join(remarks)):
        assert (heading, int(page)) in pages, f"cites a section the paper lacks: {heading!r}"
    for r in remarks:
        m = re.search(r"is long \((\d+) words", r)
        if m:
            assert int(m.group(1)) == len(paper.abstract.split())
