"""The offline engine: heading-based validation, grounded review, exact extractive summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from sagagraph.agents.engine import PaperEngine
from sagagraph.agents.offline_engine import OfflineEngine
from sagagraph.agents.paper import Paper, PaperTooShortError, fold_lines
from sagagraph.agents.pdf.loader import load_paper, parse_paper
from sagagraph.agents.validation_rules import REQUIRED_PARTS
from sagagraph.agents.words import count_words, split_sentences
from sagagraph.errors import StepError
from tests.support.output_checks import assert_review_is_grounded

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "papers"
FILLER = (
    "This sentence adds substance to the section so that it reads like real prose. "
    "It says a little more about the topic at hand and why it matters to readers. "
)


@pytest.fixture(scope="module")
def complete() -> Paper:
    return load_paper(EXAMPLES / "complete_paper.md")


@pytest.fixture(scope="module")
def engine() -> OfflineEngine:
    return OfflineEngine()


def make_paper(headings: list[str], words_per_section: int = 120) -> Paper:
    """A plain-text paper with the given headings, each followed by filler prose."""
    repeat = max(1, words_per_section // count_words(FILLER))
    body = "\n".join(f"{h}\n{FILLER * repeat}" for h in headings)
    return parse_paper("made-up.txt", [f"A Made-Up Paper About Things\n{body}\n"])


def test_is_a_paper_engine_with_no_usage(engine: OfflineEngine, complete: Paper) -> None:
    typed: PaperEngine = engine
    assert typed.name == "offline"
    for _, usage in (engine.validate(complete), engine.review(complete)):
        assert usage == {"input_tokens": 0, "output_tokens": 0}


def test_complete_sample_is_valid_with_every_part_located(
    engine: OfflineEngine, complete: Paper
) -> None:
    report, _ = engine.validate(complete)
    assert report.is_valid and report.missing == []
    assert [(p.part, p.heading, p.page) for p in report.found] == [
        ("abstract", "Abstract", 1),
        ("introduction", "1 Introduction", 1),
        ("body", "2 Related Work", 1),
        ("method", "3 Method", 1),
        ("conclusion", "5 Conclusion", 1),
        ("references", "References", 1),
    ]


def test_incomplete_sample_names_what_is_missing(engine: OfflineEngine) -> None:
    report, _ = engine.validate(load_paper(EXAMPLES / "incomplete_paper.md"))
    assert not report.is_valid
    assert report.missing == ["abstract", "body", "conclusion", "references"]
    assert [p.part for p in report.found] == ["introduction", "method"]
    assert "missing abstract" in report.reason


@pytest.mark.parametrize(
    "outline",
    [
        "ABSTRACT|1. INTRODUCTION|2. BACKGROUND|3. OUR APPROACH|4. EVALUATION|5. CONCLUSIONS"
        "|BIBLIOGRAPHY",
        "Abstract|1 Introduction|2 Related Work|3 Methodology|4 Experiments"
        "|5 Concluding Remarks|References",
        "Résumé|I. Introduction|II. Prior Work|III. System Design"
        "|IV. Conclusion and Future Work|References",
    ],
)
def test_heading_variants_are_recognised(engine: OfflineEngine, outline: str) -> None:
    headings = outline.split("|")
    report, _ = engine.validate(make_paper(headings))
    assert report.is_valid, report.missing
    assert {p.part for p in report.found} == set(REQUIRED_PARTS)
    assert {p.heading for p in report.found} <= set(headings)


def test_headings_without_substance_do_not_make_a_paper(engine: OfflineEngine) -> None:
    skeleton = make_paper(
        ["Abstract", "1 Introduction", "2 Related Work", "3 Method", "4 Conclusion", "References"],
        words_per_section=10,
    )
    report, _ = engine.validate(skeleton)
    assert not report.is_valid
    assert "body" in report.missing and "method" in report.missing


def test_method_named_after_the_contribution_counts(engine: OfflineEngine) -> None:
    outline = "Abstract|1 Introduction|2 Background|3 The Transformer|4 Results|5 Conclusion"
    paper = make_paper([*outline.split("|"), "References"])
    report, _ = engine.validate(paper)
    assert report.is_valid
    assert {p.part: p.heading for p in report.found}["method"] == "3 The Transformer"


def test_review_is_grounded_in_the_paper(engine: OfflineEngine, complete: Paper) -> None:
    review, usage = engine.review(complete)
    assert usage == {"input_tokens": 0, "output_tokens": 0}
    assert review.strengths and review.weaknesses and review.suggestions
    # Its result with the number, and the limit it states in its own words.
    assert review.strengths[0].startswith("Reports a result with its number (11 milliseconds)")
    assert "A limitation of our evaluation is that it used a deterministic" in review.weaknesses[0]
    assert review.kind.startswith(("a method or algorithm paper", "not determined"))
    assert_review_is_grounded(complete, review)


def test_review_is_deterministic(engine: OfflineEngine, complete: Paper) -> None:
    assert engine.review(complete)[0] == engine.review(complete)[0]


@pytest.mark.parametrize("words", [40, 150, 300])
def test_summary_has_exactly_the_words_asked_for(
    engine: OfflineEngine, complete: Paper, words: int
) -> None:
    summary, usage = engine.summarize(complete, words)
    assert len(summary.text.split()) == words
    assert usage == {"input_tokens": 0, "output_tokens": 0}


def test_summary_is_extractive_and_in_reading_order(engine: OfflineEngine, complete: Paper) -> None:
    summary, _ = engine.summarize(complete, 300)
    source = fold_lines(complete.text)
    positions = [source.find(s) for s in split_sentences(summary.text)]
    assert all(p >= 0 for p in positions), "every sentence comes from the paper"
    assert positions == sorted(positions)
    assert engine.summarize(complete, 300)[0] == summary


def test_long_papers_are_summarised_chunk_by_chunk(complete: Paper) -> None:
    """With small chunks, the summary draws on the whole paper, not only its opening."""
    summary, _ = OfflineEngine(chunk_chars=1500).summarize(complete, 150)
    assert len(summary.text.split()) == 150
    conclusion = next(s for s in complete.sections if s.heading == "5 Conclusion")
    experiments = next(s for s in complete.sections if s.heading == "4 Experiments")
    late = fold_lines(conclusion.text) + " " + fold_lines(experiments.text)
    assert any(s in late for s in split_sentences(summary.text))


def test_a_paper_too_short_for_the_summary_fails(engine: OfflineEngine) -> None:
    short = parse_paper("short.txt", ["A Short Note\nAbstract\n" + FILLER * 3])
    with pytest.raises(PaperTooShortError, match=r"short\.txt: only \d+ words") as caught:
        engine.summarize(short, 300)
    assert isinstance(caught.value, StepError)
