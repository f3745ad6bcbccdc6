"""The offline reviewer and summarizer against what a careful reader found in every corpus PDF.

Every PDF of ``../shared/corpus`` and ``../shared/corpus-next`` has a label file
(``tests/agents/review_labels``, read by hand); :mod:`tests.agents.review_judge` reads each
review point against it. The reviewer runs on the non-papers too (the pipeline stops them at the
validator, but what it would say of a form or a poster must be true as well). Issue 37's bar:

- no false point, and no point that no rule can read (a new kind of point needs a rule);
- the kind is one a reader accepts, or "not determined";
- at most 5% misleading and at most 25% vacuous points over the papers
  (``python -m bench.review_quality`` prints the measured rates);
- every paper's 300-word summary holds the main result's number when its abstract prints one,
  and carries no roadmap, figure or table pointer, dangling "this" or repeated sentence.
"""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest

from sagagraph.agents.engine import Review
from sagagraph.agents.offline_engine import OfflineEngine
from sagagraph.agents.pdf.loader import PaperLoader
from sagagraph.errors import PaperLoadError
from tests.agents.review_judge import (
    Judged,
    Labels,
    holds_number,
    judge_kind,
    judge_review,
    label_file,
    read_labels,
    summary_debris,
)
from tests.support.corpus import MISSING, CorpusPdf, corpus_pdfs

# Reads the shared corpus of real PDFs (../shared/corpus): not part of `make check`.
pytestmark = pytest.mark.corpus

PDFS = [pdf for pdf in corpus_pdfs() if pdf.name != MISSING]
PAPERS = [pdf for pdf in PDFS if pdf.label == "valid"]
MAX_MISLEADING = 0.05
MAX_VACUOUS = 0.25


def ids(pdfs: list[CorpusPdf]) -> list[str]:
    return [pdf.id for pdf in pdfs]


@cache
def _loader() -> PaperLoader:
    return PaperLoader()


@cache
def reviewed(pdf: CorpusPdf) -> tuple[Labels, Review | None]:
    """The PDF's labels and its offline review (None when the loader refuses the file)."""
    labels = read_labels(pdf.folder.name, pdf.name)
    try:
        paper = _loader().load(pdf.path())
    except PaperLoadError:
        return labels, None
    review, _ = OfflineEngine().review(paper)
    return labels, review


def judged(pdf: CorpusPdf) -> list[Judged]:
    labels, review = reviewed(pdf)
    return judge_review(review, labels) if review is not None else []


@pytest.mark.parametrize("pdf", PDFS, ids=ids(PDFS))
def test_every_corpus_pdf_has_a_label_file(pdf: CorpusPdf) -> None:
    assert label_file(pdf.folder.name, pdf.name).is_file(), "write its ground truth first"


@pytest.mark.parametrize("pdf", PDFS, ids=ids(PDFS))
def test_the_review_makes_no_false_claim_and_names_a_right_kind_or_none(pdf: CorpusPdf) -> None:
    labels, review = reviewed(pdf)
    if review is None:
        assert not labels.loaded, "the loader refused a file its labels say it reads"
        return
    bad = [j for j in judged(pdf) if j.verdict in ("false", "unjudged")]
    assert not bad, [(j.verdict, j.why, j.point[:160]) for j in bad]
    assert judge_kind(review.kind, labels) != "wrong", review.kind


def test_misleading_and_vacuous_points_stay_rare_over_the_papers() -> None:
    verdicts = Counter(j.verdict for pdf in PAPERS for j in judged(pdf))
    total = sum(verdicts.values())
    assert total >= 3 * len(PAPERS), verdicts  # the reviewer says something about each paper
    assert verdicts["misleading"] <= MAX_MISLEADING * total, verdicts
    assert verdicts["vacuous"] <= MAX_VACUOUS * total, verdicts


@pytest.mark.parametrize("pdf", PAPERS, ids=ids(PAPERS))
def test_the_summary_holds_the_main_number_and_no_debris(pdf: CorpusPdf) -> None:
    labels = read_labels(pdf.folder.name, pdf.name)
    summary, _ = OfflineEngine().summarize(_loader().load(pdf.path()), 300)
    assert len(summary.text.split()) == 300
    assert holds_number(summary.text, labels.abstract_numbers), labels.abstract_numbers
    assert summary_debris(summary.text) == []
