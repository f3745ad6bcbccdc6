"""docs/validator.md shows the validator's table over the corpus folders as it is now.

The table is rebuilt from the PDFs (``python -m bench.validator_table --markdown``) and
compared with the one between the doc's markers; without the corpus folders the test skips
with the reason (fails under ``CI=true``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.validator_table import markdown, table_rows
from tests.support.corpus import require_corpus
from tests.support.services import CORPUS, CORPUS_NEXT

# Reads the shared corpus of real PDFs (../shared/corpus): not part of `make check`.
pytestmark = pytest.mark.corpus

DOC = Path(__file__).resolve().parents[2] / "docs" / "validator.md"
BEGIN = "<!-- validator-table: begin (python -m bench.validator_table --markdown) -->"
END = "<!-- validator-table: end -->"


def doc_table() -> str:
    text = DOC.read_text()
    assert BEGIN in text and END in text, "docs/validator.md lost its table markers"
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


@pytest.mark.slow
def test_the_docs_table_is_the_validators_current_output() -> None:
    folders = [require_corpus(CORPUS), require_corpus(CORPUS_NEXT)]
    rows = table_rows(folders)
    assert all(row.right for row in rows), [r.file for r in rows if not r.right]
    assert doc_table() == markdown(rows).strip(), (
        "docs/validator.md is stale: paste `python -m bench.validator_table --markdown` "
        "between its markers"
    )
