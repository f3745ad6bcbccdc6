"""The quote check: each class of text a PDF garbles still matches; invented quotes never do."""

from __future__ import annotations

import pytest

from sagagraph.agents.engine import Review
from sagagraph.agents.reply_checks import PageKeys, check_point, quote_point, verify_review

PAGES = (
    "Checkpointed Sagas\nWe propose a compen-\nsation protocol that is signi\ufb01cant for\n"
    "“long-running” agents — and it works.",
    "The results are signicant: the data les were kept. We release the code under the MIT "
    "licence.\nEspectrofot´ometro de reflexi´on difusa.",
)


@pytest.mark.parametrize(
    ("quote", "page"),
    [
        ("We propose a compensation protocol", 1),  # hyphenation at a line end
        ("that is significant for long-running agents", 1),  # a ligature glyph (ﬁ)
        ('"long-running" agents - and it works', 1),  # typographic quotes and dashes
        ("WE PROPOSE A COMPENSATION PROTOCOL", 1),  # case
        ("The results are significant: the data files were kept", 2),  # lost ligature letters
        ("Espectrofotómetro de reflexión difusa", 2),  # accents set apart from their letter
        ("We propose a compensation ... long-running agents", 1),  # an ellipsis leaves words out
    ],
)
def test_what_pdf_text_garbles_still_matches(quote: str, page: int) -> None:
    assert PageKeys.of(PAGES).locate(quote, page) == page


@pytest.mark.parametrize(
    "quote",
    [
        "We propose a compensation protocol that fails",  # a word added
        "The results are insignificant for the data files",  # words changed
        "it works",  # too short to prove anything
        "We release the code under the Apache licence",
    ],
)
def test_words_not_printed_are_not_found(quote: str) -> None:
    assert PageKeys.of(PAGES).locate(quote) is None


def test_a_quote_on_another_page_gets_its_page_corrected() -> None:
    point = quote_point("States a result.", 1, "the data les were kept")
    fixed, why = check_point(point, PageKeys.of(PAGES))
    assert why == "" and fixed == 'States a result. (p.2) "the data les were kept"'


def test_a_quote_running_over_a_page_break_is_on_the_page_it_starts() -> None:
    keys = PageKeys.of(PAGES)
    assert keys.locate("and it works. The results are signicant", 2) == 1


@pytest.mark.parametrize(
    ("point", "why"),
    [
        ("The method is novel.", "no (p.N)"),
        ('Reports a 99% gain (p.2) "achieves a 99% gain on every benchmark"', "quote not found"),
        (
            'No licence is given (p.2) "We release the code": searched the whole text, '
            "references and appendices included, for 'licence' or 'license': none found.",
            "claims an absence but the paper has 'licence'",
        ),
    ],
)
def test_points_without_evidence_are_dropped_with_why(point: str, why: str) -> None:
    fixed, reason = check_point(point, PageKeys.of(PAGES))
    assert fixed is None and why in reason


def test_a_claim_of_absence_the_text_bears_out_is_kept() -> None:
    point = (
        'No spread is reported (p.2) "The results are signicant": searched the whole text, '
        "references and appendices included, for 'standard deviation' or '±': none found."
    )
    assert check_point(point, PageKeys.of(PAGES))[0] == point


def test_verify_review_keeps_grounded_points_and_lists_the_dropped() -> None:
    good = quote_point("Clear aim.", 1, "We propose a compensation protocol")
    review = Review(
        strengths=[good, quote_point("Invented.", 1, "a result the paper never printed at all")],
        weaknesses=[good],
        suggestions=[good],
    )
    verified, dropped = verify_review(review, PAGES)
    assert verified.strengths == [good]
    assert [d.part for d in dropped] == ["strengths"]
    assert len(verified.dropped) == 1 and "quote not found" in verified.dropped[0]
