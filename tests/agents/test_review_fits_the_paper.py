"""The offline review fits the kind of paper, and a keyword counts only in the right sense.

Each case is a class of paper (a focus-group study, an R package, a survey) or a class of
misleading sentence, built as a small Markdown paper; the review must quote it, name its kind
with the words that decided it, and bring no checklist of another kind.
"""

from __future__ import annotations

import pytest

from sagagraph.agents.engine import Review
from sagagraph.agents.offline_engine import offline_review
from sagagraph.agents.paper import Paper
from sagagraph.agents.pdf.loader import parse_paper
from tests.agents.review_judge import claim_of
from tests.support.output_checks import assert_review_is_grounded

FILLER = (
    "The setting is described with enough detail for a reader to follow each step. "
    "Every part of the work is reported in the order in which it was carried out. "
)


def paper(title: str, abstract: str, method: str, results: str, closing: str = "") -> Paper:
    closing = closing or (
        "We summarised what the work found and what it means for practice in the field. " * 6
    )
    text = f"""# {title}

## Abstract

{abstract} {FILLER}

## 1 Introduction

{FILLER * 3}

## 2 Methods

{method} {FILLER * 3}

## 3 Results

{results} {FILLER * 3}

## 4 Conclusion

{closing}

## References

[1] A. Author. Limitations of sagas. Journal of Examples, 2001.
[2] B. Author. Another study. Journal of Examples, 2002.
[3] C. Author. A third study. Journal of Examples, 2003.
"""
    return parse_paper("case.md", [text], markdown=True)


def points(review: Review) -> str:
    return " ".join(review.strengths + review.weaknesses + review.suggestions)


FOCUS_GROUP = paper(
    "Nurses' Views of Night Shifts",
    "This study explores how nurses experience night shifts through four focus groups.",
    "We held four focus groups with 24 nurses and analysed the transcripts by thematic analysis.",
    "Participants described fatigue, isolation and a strong sense of team spirit at night.",
)
R_PACKAGE = paper(
    "sagar: An R Package for Saga Analysis",
    "We present sagar, an R package that fits compensation models to event logs.",
    "The package is freely available under the GNU General Public License from CRAN.",
    "For example, a user fits a model to a log of ten thousand events in one call.",
)
SURVEY = paper(
    "A Survey of Compensation in Workflow Systems",
    "In this survey we review forty years of compensation in workflow systems.",
    "We searched three digital libraries and selected 120 papers by inclusion criteria.",
    "Most systems compensate in reverse order and few of them retry compensations.",
)


@pytest.mark.parametrize(
    ("case", "kind", "evidence"),
    [
        (FOCUS_GROUP, "a qualitative study", "focus group"),
        (R_PACKAGE, "a software or package paper", "R package"),
        (SURVEY, "a survey", "In this survey"),
    ],
    ids=["focus-group", "r-package", "survey"],
)
def test_the_kind_is_named_with_the_words_that_decided_it(
    case: Paper, kind: str, evidence: str
) -> None:
    review = offline_review(case)
    assert review.kind.startswith(kind) and evidence in review.kind
    assert_review_is_grounded(case, review)


@pytest.mark.parametrize("case", [FOCUS_GROUP, R_PACKAGE, SURVEY], ids=["focus", "r", "survey"])
def test_no_fixed_experiment_checklist_for_papers_that_are_not_experiments(case: Paper) -> None:
    text = points(offline_review(case)).lower()
    for advice in ("ablation", "one component at a time", "seeds", "repeated runs", "published"):
        assert advice not in text


def test_a_package_released_on_cran_is_said_to_be_available_there() -> None:
    review = offline_review(R_PACKAGE)
    released = [p for p in review.strengths if claim_of(p) == ("has", "release")]
    assert released and "(CRAN)" in released[0], review.strengths
    assert "not said to be available" not in points(review)


EMPIRICAL = (
    "We propose a retry policy for agent steps and show it halves failed runs.",
    "We ran 200 sagas on three models with injected crashes.",
)


@pytest.mark.parametrize(
    ("sentence", "practice"),
    [
        ("The sample does not allow for statistically significant generalisation.", "spread"),
        ("The server bootstrap takes two seconds before the first request.", "spread"),
        (
            "The workload generator draws keys with a standard deviation of 3 for its skew "
            "parameter.",
            "spread",
        ),
        ("We used an open-source web browser to display the logs.", "release"),
    ],
    ids=["negated", "server-bootstrap", "parameter-std", "open-source-browser"],
)
def test_a_keyword_in_another_sense_is_no_evidence(sentence: str, practice: str) -> None:
    case = paper("Retrying Agent Steps", EMPIRICAL[0], EMPIRICAL[1], sentence)
    review = offline_review(case)
    assert not [p for p in review.strengths if claim_of(p) == ("has", practice)]
    assert_review_is_grounded(case, review)


def test_no_absence_is_claimed_only_a_fact_of_structure_with_what_was_searched() -> None:
    """'Limitations' appears only in a reference's title, and the paper states no limit: the
    review says that no heading announces them, and what it searched, never that the paper
    does not discuss them."""
    case = paper("Retrying Agent Steps", *EMPIRICAL, "Retries halved the failed runs.")
    review = offline_review(case)
    assert not any("not discussed" in p or "searched the whole text" in p for p in points(review))
    structural = [w for w in review.weaknesses if w.startswith("No section or paragraph")]
    assert structural and "headings and paragraph openings searched" in structural[0]


def test_every_point_of_every_case_quotes_its_paper() -> None:
    for case in (FOCUS_GROUP, R_PACKAGE, SURVEY):
        assert_review_is_grounded(case, offline_review(case))
