"""The shortcuts that keep PDF loading fast change nothing but the time.

- pypdf parses every figure (form XObject) when a visitor is given; the loader's hook lets it
  skip the figures that print no text, in the loader's own thread only, with the same text
  and the same styled runs as a full parse.
- The text-layer check stops counting letters once there are enough.
- ``normalize_line`` takes a short cut for ASCII lines.
- ``bench.big_input`` times at least five loads and reports the median with its spread.
"""

from __future__ import annotations

import threading
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from bench.pdfgen import write_objects_pdf
from sagagraph.agents.headings import normalize_line
from sagagraph.agents.pdf import files as paper_files
from sagagraph.agents.pdf.files import _has_letters, pdf_pages
from sagagraph.agents.pdf.layout import PageStyles

_PAGE = (
    b"BT /F1 14 Tf 72 720 Td (Results of the Figure Study) Tj ET\n"
    b"BT /F1 10 Tf 72 700 Td (The body text of the page says what the figures show.) Tj ET\n"
    b"q /Plot Do Q q /Label Do Q q /Nested Do Q"
)
_PLOT = b"0 0 m 100 100 l S 10 10 50 50 re f"  # lines and boxes: no text operator at all
_LABEL = b"BT /F1 8 Tf 90 400 Td (Axis label inside a figure) Tj ET"
_NESTED = b"q 1 0 0 1 5 5 cm /Label Do Q"  # prints text only through another form


def _figure_pdf(path: Path) -> Path:
    """One page that paints a text-less figure, a labelled one and a nested one."""
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    res = b"/Resources << /Font << /F1 3 0 R >> /XObject << /Label 6 0 R >> >>"
    forms = [(_PLOT, res), (_LABEL, res), (_NESTED, res)]
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        font,
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 8 0 R /Resources"
        b" << /Font << /F1 3 0 R >> /XObject << /Plot 5 0 R /Label 6 0 R /Nested 7 0 R >> >> >>",
        *(
            b"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] %s /Length %d >>\n"
            b"stream\n%s\nendstream" % (extra, len(body), body)
            for body, extra in forms
        ),
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(_PAGE), _PAGE),
    ]
    return write_objects_pdf(path, objects)


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the content streams pypdf parses into operations."""
    from pypdf.generic import ContentStream

    calls = [0]
    original = ContentStream._parse_content_stream

    def counting(self: Any, stream: Any) -> Any:
        calls[0] += 1
        return original(self, stream)

    monkeypatch.setattr(ContentStream, "_parse_content_stream", counting)
    return calls


def _full_parse(path: Path) -> tuple[list[str], list[list[tuple[str, float, bool]]]]:
    """Text and styled runs as pypdf gives them without the hook (flag off in this thread)."""
    from pypdf import PdfReader

    texts, styles = [], []
    for page in PdfReader(path).pages:
        style = PageStyles()
        texts.append(page.extract_text(visitor_text=style.visit) or "")
        styles.append(sorted(style.styled()))
    return texts, styles


def test_text_less_figures_are_skipped_with_the_same_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pdf = _figure_pdf(tmp_path / "figures.pdf")
    hooked = pdf_pages(pdf, pdf.read_bytes(), None)  # installs the hook
    calls = _count_parses(monkeypatch)
    texts, styles = _full_parse(pdf)
    full = calls[0]
    calls[0] = 0
    again = pdf_pages(pdf, pdf.read_bytes(), None)
    # The plot alone is left unparsed: the page and the forms that print text are read.
    assert calls[0] == full - 1, "the text-less figure was parsed for the text visitor"
    assert again == hooked
    assert hooked.pages == texts
    assert "Axis label inside a figure" in texts[0]
    # The same styled lines reach the layout: the title stands out, the label is small.
    from pypdf import PdfReader

    style = PageStyles()
    assert paper_files._page_text(PdfReader(pdf).pages[0], style) == texts[0]
    assert sorted(style.styled()) == styles[0]
    assert "Results of the Figure Study" in hooked.layout[0].emphasized
    assert any("Axis label inside a figure" in line for line in hooked.layout[0].small)


def test_the_hook_leaves_other_threads_and_visitors_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pypdf import PdfReader

    pdf = _figure_pdf(tmp_path / "figures.pdf")
    pdf_pages(pdf, pdf.read_bytes(), None)  # installs the hook
    calls = _count_parses(monkeypatch)
    seen: list[bytes] = []

    def other_caller() -> None:
        page = PdfReader(pdf).pages[0]
        page.extract_text(visitor_operand_before=lambda op, *_: seen.append(op))

    pdf_pages(pdf, pdf.read_bytes(), None)
    hooked = calls[0]
    calls[0] = 0
    thread = threading.Thread(target=other_caller)
    thread.start()
    thread.join()
    # Every form parsed, the plot too: an operator visitor must see the plot's operators.
    assert calls[0] == hooked + 1
    assert b"re" in seen and b"l" in seen
    assert not getattr(paper_files._STYLES_ONLY, "active", False)


def test_the_hook_is_installed_once() -> None:
    from pypdf import _text_extraction

    paper_files._skip_textless_forms()
    hook = _text_extraction._get_content_stream_for_text
    paper_files._skip_textless_forms()
    assert _text_extraction._get_content_stream_for_text is hook
    assert getattr(hook, "sagagraph_hook", False)


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
