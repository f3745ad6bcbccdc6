"""Quality of the three agents on the real corpus, as properties of their output.

Each valid paper: every required part named with a heading printed on its page; a 300-word
summary of whole sentences without debris, covering the paper; a review that cites only the
paper's sections and claims no absence its text contradicts. The non-papers stay refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sagagraph.agents.offline_engine import OfflineEngine
from sagagraph.agents.paper import Paper
from sagagraph.agents.paper_agents import render_review
from sagagraph.agents.pdf.loader import UNHEADED_REFERENCES, PaperLoader
from sagagraph.agents.validation_rules import REQUIRED_PARTS, UNHEADED_ABSTRACT
from tests.agents.test_corpus import VALID
from tests.support.output_checks import (
    assert_review_is_grounded,
    assert_summary_covers_the_paper,
    assert_summary_is_prose,
)


@pytest.fixture(scope="module")
def loader() -> PaperLoader:
    return PaperLoader()


def _paper(loader: PaperLoader, corpus: Path, name: str) -> Paper:
    return loader.load(corpus / name)


@pytest.mark.parametrize("name", VALID)
def test_every_part_is_named_with_a_heading_on_its_page(
    name: str, corpus: Path, loader: PaperLoader
) -> None:
    paper = _paper(loader, corpus, name)
    report, _ = OfflineEngine().validate(paper)
    assert report.is_valid, report.reason
    assert [p.part for p in report.found] == list(REQUIRED_PARTS)
    for part in report.found:
        if part.heading in (UNHEADED_ABSTRACT, UNHEADED_REFERENCES):
            continue
        page = " ".join(paper.pages[part.page - 1].split())
        assert " ".join(part.heading.split()) in page, (part, name)


@pytest.mark.parametrize("name", VALID)
def test_summary_is_300_words_of_whole_sentences_without_debris(
    name: str, corpus: Path, loader: PaperLoader
) -> None:
    paper = _paper(loader, corpus, name)
    summary, _ = OfflineEngine().summarize(paper, 300)
    assert_summary_is_prose(paper, summary.text, 300)
    assert_summary_covers_the_paper(paper, summary.text)


@pytest.mark.parametrize("name", VALID)
def test_review_cites_only_the_papers_sections_and_no_contradicted_absence(
    name: str, corpus: Path, loader: PaperLoader
) -> None:
    paper = _paper(loader, corpus, name)
    review, _ = OfflineEngine().review(paper)
    assert_review_is_grounded(paper, review)
    assert "Heuristic offline review" in render_review(paper, review, "offline")
    assert "--llm openai" in render_review(paper, review, "offline")


def test_the_transformer_paper_gets_no_false_ablation_claim(
    corpus: Path, loader: PaperLoader
) -> None:
    """Its "Model Variations" section and table are an ablation (the reported falsehood): no
    point says the paper lacks one, and its main result is quoted with its number."""
    paper = _paper(loader, corpus, "papers/attention_1706.03762v7.pdf")
    review, _ = OfflineEngine().review(paper)
    assert "ablation" not in " ".join(review.weaknesses + review.suggestions)
    assert review.strengths[0].startswith("Reports a result with its number (28.4 BLEU)")
    assert_review_is_grounded(paper, review)
