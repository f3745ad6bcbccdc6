"""The offline pipeline over the real PDFs of the corpus and corpus-next: labels, reviews and
300-word summaries. Every labelled PDF of both folders gets its label right."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sagagraph.agents.offline_engine import OfflineEngine
from sagagraph.agents.paper import Paper
from sagagraph.agents.pdf.loader import UNHEADED_REFERENCES, PaperLoader
from sagagraph.agents.reply_checks import QUOTED
from sagagraph.agents.validation_rules import (
    REQUIRED_PARTS,
    UNHEADED_ABSTRACT,
    UNHEADED_INTRODUCTION,
)
from sagagraph.errors import PaperLoadError
from tests.support.corpus import CorpusPdf, corpus_pdfs
from tests.support.services import CORPUS

# Reads the shared corpus of real PDFs (../shared/corpus): not part of `make check`.
pytestmark = pytest.mark.corpus

PASSWORD = "openpassword"


def _labels() -> dict[str, str]:
    """The first corpus's labels, read at collection time; an absent corpus still yields a
    test that fails."""
    try:
        labels: dict[str, str] = json.loads((CORPUS / "labels.json").read_text())
    except OSError:
        return {"(corpus missing)": "valid"}
    labels.pop("_about", None)
    return labels


LABELS = _labels()
"""The first corpus's labels, by path inside it."""
VALID = sorted(name for name, label in LABELS.items() if label == "valid")
"""The first corpus's valid papers, by path inside it."""
PDFS = corpus_pdfs()
"""Every labelled PDF of the corpus and corpus-next."""
VALID_PDFS = [pdf for pdf in PDFS if pdf.label == "valid"]


def ids(pdfs: list[CorpusPdf]) -> list[str]:
    return [pdf.id for pdf in pdfs]


@pytest.fixture(scope="module")
def loader() -> PaperLoader:
    """One loader for the module, so each PDF is parsed once however many tests use it."""
    return PaperLoader()


@pytest.fixture(scope="module")
def engine() -> OfflineEngine:
    return OfflineEngine()


@pytest.fixture
def pdf_file(pdf: CorpusPdf) -> Path:
    """The test's PDF; its folder's absence skips the test at setup (an error under CI)."""
    return pdf.path()


def load(loader: PaperLoader, pdf_file: Path, password: str | None = None) -> Paper:
    return loader.load(pdf_file, password)


@pytest.mark.parametrize("pdf", PDFS, ids=ids(PDFS))
def test_offline_validator_matches_the_label(
    pdf: CorpusPdf, pdf_file: Path, loader: PaperLoader, engine: OfflineEngine
) -> None:
    if pdf.label == "unreadable":
        with pytest.raises(PaperLoadError, match="no text layer") as caught:
            load(loader, pdf_file)
        assert pdf.file_name in str(caught.value)
        return
    if pdf.label == "encrypted":
        with pytest.raises(PaperLoadError, match="password is needed") as caught:
            load(loader, pdf_file)
        assert pdf.file_name in str(caught.value)
        # With its password it opens, and it is lorem ipsum: not a paper.
        report, _ = engine.validate(load(loader, pdf_file, PASSWORD))
        assert not report.is_valid
        return
    paper = load(loader, pdf_file)
    report, _ = engine.validate(paper)
    assert report.is_valid == (pdf.label == "valid"), report.reason
    assert [p.part for p in report.found] == [p for p in REQUIRED_PARTS if p not in report.missing]
    outline = paper.outline()
    unheaded = (UNHEADED_ABSTRACT, UNHEADED_INTRODUCTION)
    for part in report.found:
        assert 1 <= part.page <= len(paper.pages)
        assert part.heading in unheaded or f"p.{part.page}  {part.heading}" in outline
        if part.heading not in (*unheaded, UNHEADED_REFERENCES):
            # The heading is printed on the page it names, as the reader will look for it.
            page = " ".join(paper.pages[part.page - 1].split())
            assert " ".join(part.heading.split()) in page, part


@pytest.mark.parametrize("pdf", VALID_PDFS, ids=ids(VALID_PDFS))
def test_valid_papers_get_a_full_review_and_a_300_word_summary(
    pdf: CorpusPdf, pdf_file: Path, loader: PaperLoader, engine: OfflineEngine
) -> None:
    paper = load(loader, pdf_file)
    review, _ = engine.review(paper)
    for remarks in (review.strengths, review.weaknesses, review.suggestions):
        assert remarks and all(r.strip() for r in remarks)
    assert all(QUOTED.search(r) for r in review.strengths + review.weaknesses), "quotes the paper"
    summary, _ = engine.summarize(paper, 300)
    assert len(summary.text.split()) == 300
    assert "References" not in summary.text.split()[:3]
