"""The offline pipeline over the corpus of real PDFs: labels, reviews and 300-word summaries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sagagraph.agents.offline_engine import OfflineEngine
from sagagraph.agents.paper import Paper
from sagagraph.agents.pdf.loader import PaperLoader
from sagagraph.agents.quote_check import QUOTED
from sagagraph.agents.validation_rules import REQUIRED_PARTS, UNHEADED_ABSTRACT
from sagagraph.errors import PaperLoadError
from tests.support.services import CORPUS

PASSWORD = "openpassword"


def _labels() -> dict[str, str]:
    """Labels read at collection time; an absent corpus still yields a test that fails."""
    try:
        labels: dict[str, str] = json.loads((CORPUS / "labels.json").read_text())
    except OSError:
        return {"(corpus missing)": "valid"}
    labels.pop("_about", None)
    return labels


LABELS = _labels()
VALID = sorted(name for name, label in LABELS.items() if label == "valid")


@pytest.fixture(scope="module")
def loader() -> PaperLoader:
    """One loader for the module, so each PDF is parsed once however many tests use it."""
    return PaperLoader()


@pytest.fixture(scope="module")
def engine() -> OfflineEngine:
    return OfflineEngine()


def load(loader: PaperLoader, corpus: Path, name: str, password: str | None = None) -> Paper:
    return loader.load(corpus / name, password)


@pytest.mark.parametrize(("name", "label"), sorted(LABELS.items()))
def test_offline_validator_matches_the_label(
    name: str, label: str, corpus: Path, loader: PaperLoader, engine: OfflineEngine
) -> None:
    if label == "unreadable":
        with pytest.raises(PaperLoadError, match="no text layer") as caught:
            load(loader, corpus, name)
        assert name.rsplit("/", 1)[-1] in str(caught.value)
        return
    if label == "encrypted":
        with pytest.raises(PaperLoadError, match="password is needed") as caught:
            load(loader, corpus, name)
        assert name.rsplit("/", 1)[-1] in str(caught.value)
        # With its password it opens, and it is lorem ipsum: not a paper.
        report, _ = engine.validate(load(loader, corpus, name, PASSWORD))
        assert not report.is_valid
        return
    paper = load(loader, corpus, name)
    report, _ = engine.validate(paper)
    assert report.is_valid == (label == "valid"), report.reason
    assert [p.part for p in report.found] == [p for p in REQUIRED_PARTS if p not in report.missing]
    outline = paper.outline()
    for part in report.found:
        assert 1 <= part.page <= len(paper.pages)
        assert part.heading == UNHEADED_ABSTRACT or f"p.{part.page}  {part.heading}" in outline


@pytest.mark.parametrize("name", VALID)
def test_valid_papers_get_a_full_review_and_a_300_word_summary(
    name: str, corpus: Path, loader: PaperLoader, engine: OfflineEngine
) -> None:
    paper = load(loader, corpus, name)
    review, _ = engine.review(paper)
    for remarks in (review.strengths, review.weaknesses, review.suggestions):
        assert remarks and all(r.strip() for r in remarks)
    assert all(QUOTED.search(r) for r in review.strengths + review.weaknesses), "quotes the paper"
    summary, _ = engine.summarize(paper, 300)
    assert len(summary.text.split()) == 300
    assert "References" not in summary.text.split()[:3]
