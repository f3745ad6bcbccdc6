"""Hostile paper inputs are refused before they are read: devices, FIFOs, oversized files.

Each is a real file system object (``/dev/zero``, a FIFO made with ``os.mkfifo``, real files
of the sizes at the limits), loaded through the real loader; the limits come from the
environment as a deployment sets them.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from sagagraph.agents.pdf.files import (
    DEFAULT_MAX_PAGES,
    DEFAULT_MAX_PAPER_MB,
    DEFAULT_MAX_TEXT_MB,
    InputLimits,
    read_bytes,
)
from sagagraph.agents.pdf.loader import PaperLoader
from sagagraph.errors import ConfigurationError, PaperLoadError
from tests.cli.test_bad_input import blank_pdf, text_pdf

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "examples" / "papers" / "complete_paper.md"


def test_dev_zero_is_refused_without_reading_it() -> None:
    # Reading would never end (MemoryError after minutes); the refusal comes from fstat.
    with pytest.raises(PaperLoadError, match=r"^/dev/zero: not a regular file \(a device\)"):
        PaperLoader().load("/dev/zero")


def test_a_fifo_named_like_a_paper_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "paper.md"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def load() -> None:
        try:
            PaperLoader().load(fifo)
            outcome.append(None)
        except BaseException as error:
            outcome.append(error)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():  # unblock the reader so the test process can end, then fail
        with open(fifo, "wb"):
            pass
        pytest.fail("loading a FIFO blocked waiting for a writer")
    assert len(outcome) == 1 and isinstance(outcome[0], PaperLoadError)
    assert str(outcome[0]) == f"{fifo}: not a regular file (a FIFO); give a PDF, .txt or .md file"


def test_a_text_paper_over_the_text_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGAGRAPH_MAX_TEXT_MB", "0.01")  # 10 KiB
    big = tmp_path / "big.md"
    big.write_text(PAPER.read_text() + "\n" + "padding words " * 2000)
    with pytest.raises(PaperLoadError) as refused:
        PaperLoader().load(big)
    message = str(refused.value)
    assert message.startswith(f"{big}: text file of ")
    assert message.endswith("larger than the limit of 0.01 MB (SAGAGRAPH_MAX_TEXT_MB)")
    # The same paper within the limit loads.
    monkeypatch.setenv("SAGAGRAPH_MAX_TEXT_MB", "1")
    assert PaperLoader().load(big).pages


def test_any_file_over_the_paper_limit_is_refused_and_only_one_byte_past_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pdf = tmp_path / "big.pdf"
    pdf.write_bytes(text_pdf(400, lambda i: f"page {i} of ordinary words"))
    size = pdf.stat().st_size
    monkeypatch.setenv("SAGAGRAPH_MAX_PAPER_MB", str(size / 2 / 1024 / 1024))
    with pytest.raises(
        PaperLoadError, match=r"larger than the limit .* \(SAGAGRAPH_MAX_PAPER_MB\)"
    ):
        PaperLoader().load(pdf)
    limits = InputLimits(max_paper_mb=1.0)
    sparse = tmp_path / "sparse.pdf"  # 4 GiB without using the disk: read must stop early
    with open(sparse, "wb") as file:
        file.truncate(4 * 1024**3)
    with pytest.raises(PaperLoadError, match="larger than the limit of 1 MB"):
        read_bytes(sparse, limits)


def test_a_pdf_over_the_page_limit_is_refused_before_its_text_is_extracted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGAGRAPH_MAX_PAGES", "20")
    blank = tmp_path / "blank.pdf"
    blank.write_bytes(blank_pdf(21))
    # Blank pages would be "no text layer" once extracted: the page count speaks first.
    with pytest.raises(
        PaperLoadError,
        match=r"blank.pdf: 21 pages, more than the limit of 20 \(SAGAGRAPH_MAX_PAGES\)",
    ):
        PaperLoader().load(blank)


def test_a_text_paper_over_the_page_limit_is_refused(tmp_path: Path) -> None:
    paged = tmp_path / "paged.md"
    paged.write_text("\f".join([PAPER.read_text()] * 4))
    with pytest.raises(PaperLoadError, match="4 pages, more than the limit of 3"):
        PaperLoader(limits=InputLimits(max_pages=3)).load(paged)


def test_the_defaults_are_documented_and_bad_settings_are_one_line_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert InputLimits.from_env() == InputLimits(
        DEFAULT_MAX_PAPER_MB, DEFAULT_MAX_TEXT_MB, DEFAULT_MAX_PAGES
    )
    assert (DEFAULT_MAX_PAPER_MB, DEFAULT_MAX_TEXT_MB, DEFAULT_MAX_PAGES) == (25.0, 2.0, 500)
    monkeypatch.setenv("SAGAGRAPH_MAX_PAGES", "many")
    with pytest.raises(ConfigurationError, match=r"^SAGAGRAPH_MAX_PAGES='many': expected a whole"):
        InputLimits.from_env()
    monkeypatch.setenv("SAGAGRAPH_MAX_PAGES", "0")
    with pytest.raises(ConfigurationError, match="must be positive"):
        InputLimits.from_env()
