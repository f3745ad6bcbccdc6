"""The shortcuts that keep PDF loading fast change nothing but the time.

- The text-layer check stops counting letters once there are enough.
- ``normalize_line`` takes a short cut for ASCII lines.
- ``bench.big_input`` times at least five loads and reports the median with its spread.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from sagagraph.agents.headings import normalize_line
from sagagraph.agents.pdf.files import _has_letters


@pytest.mark.parametrize(
    ("pages", "least", "expected"),
    [
        ([], 1, False),
        (["12 34", "ab"], 2, True),
        (["12 34", "a"], 2, False),
        (["x" * 10, "", "y" * 10], 20, True),
        (["é" * 19], 20, False),
        (["é" * 20], 20, True),
    ],
)
def test_letters_are_counted_up_to_the_threshold(
    pages: list[str], least: int, expected: bool
) -> None:
    assert _has_letters(pages, least) is expected
    assert expected is (sum(c.isalpha() for page in pages for c in page) >= least)


@pytest.mark.parametrize(
    "line",
    ["  3   Method ", "a\tb\x1fc", "", "plain text line.", "A  -  B\x0bC", "x\x1c y"],
)
def test_ascii_lines_normalize_as_before(line: str) -> None:
    assert normalize_line(line) == " ".join(unicodedata.normalize("NFKC", line).split())


def test_non_ascii_lines_still_take_the_full_path() -> None:
    assert normalize_line("R´esum´e of the ﬁrst\u00adpart") == "Résumé of the firstpart"


def test_big_input_bench_reports_median_and_spread(tmp_path: Path) -> None:
    from bench.big_input import measure_loading
    from bench.pdfgen import write_paper_pdf

    pdf = write_paper_pdf(tmp_path / "paper.pdf", 6)
    result = measure_loading(pdf, 6, runs=5)
    assert result["load_runs"] == 5
    assert result["pages_per_s_min"] <= result["pages_per_s"] <= result["pages_per_s_max"]
    assert result["cpu_pages_per_s"] > 0
    assert result["load_s"] == pytest.approx(6 / result["pages_per_s"], rel=0.5)
