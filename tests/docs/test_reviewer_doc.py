"""docs/reviewer.md shows the review-quality table over the corpus folders as it is now.

The table is rebuilt from the PDFs and their label files (``python -m bench.review_quality
--markdown``) and compared with the one between the doc's markers; without the corpus folders
the test skips with the reason (fails under ``CI=true``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.review_quality import all_rows, render, table
from tests.support.corpus import require_corpus
from tests.support.services import CORPUS, CORPUS_NEXT

# Reads the shared corpus of real PDFs (../shared/corpus): not part of `make check`.
pytestmark = pytest.mark.corpus

DOC = Path(__file__).resolve().parents[2] / "docs" / "reviewer.md"
BEGIN = "<!-- review-quality-table: begin (python -m bench.review_quality --markdown) -->"
END = "<!-- review-quality-table: end -->"


def doc_table() -> str:
    text = DOC.read_text()
    assert BEGIN in text and END in text, "docs/reviewer.md lost its table markers"
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


@pytest.mark.slow
def test_the_docs_table_is_the_reviewers_current_output() -> None:
    require_corpus(CORPUS)
    require_corpus(CORPUS_NEXT)
    assert doc_table() == render(table(all_rows()), markdown=True).strip(), (
        "docs/reviewer.md is stale: paste `python -m bench.review_quality --markdown` between "
        "its markers"
    )
