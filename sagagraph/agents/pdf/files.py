"""Reading a paper file into page texts: PDFs through pypdf, ``.txt`` and ``.md`` as UTF-8.

Every problem is a :class:`~sagagraph.errors.PaperLoadError` whose one-line message names the
file and the cause; pypdf's own repair notices are kept off the terminal.

A file is read only within limits, so a hostile or mistaken input is refused, not read:
``/dev/zero`` would be read until memory runs out, a FIFO named ``paper.md`` would block for
ever, and a 50 MB text "paper" costs minutes and hundreds of model requests. Every limit has a
default and an environment variable; :meth:`InputLimits.from_env` reads them.

| limit | default | environment |
|---|---|---|
| size of any paper file | 25 MB | ``SAGAGRAPH_MAX_PAPER_MB`` |
| size of a text paper (.txt, .md) | 2 MB | ``SAGAGRAPH_MAX_TEXT_MB`` |
| pages of a paper | 500 | ``SAGAGRAPH_MAX_PAGES`` |
"""

from __future__ import annotations

import io
import logging
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sagagraph.agents.pdf.pages import PageLayout, PageStyles, TitleRuns, layout_title, page_layouts
from sagagraph.errors import ConfigurationError, PaperLoadError

DEFAULT_MAX_PAPER_MB = 25.0
DEFAULT_MAX_TEXT_MB = 2.0
DEFAULT_MAX_PAGES = 500
_MB = 1024 * 1024


@dataclass(frozen=True)
class InputLimits:
    """How large a paper may be."""

    max_paper_mb: float = DEFAULT_MAX_PAPER_MB
    """Largest paper file, PDF or text, in MiB (``SAGAGRAPH_MAX_PAPER_MB``)."""
    max_text_mb: float = DEFAULT_MAX_TEXT_MB
    """Largest text paper (not a PDF), in MiB: about 300,000 words (``SAGAGRAPH_MAX_TEXT_MB``)."""
    max_pages: int = DEFAULT_MAX_PAGES
    """Most pages a paper may have (``SAGAGRAPH_MAX_PAGES``)."""

    def __post_init__(self) -> None:
        for name in ("max_paper_mb", "max_text_mb", "max_pages"):
            if not getattr(self, name) > 0:
                raise ConfigurationError(f"{name}: must be positive, got {getattr(self, name)}")

    @classmethod
    def from_env(cls) -> InputLimits:
        """The defaults, overridden by the environment variables that are set."""
        return cls(
            max_paper_mb=_number("SAGAGRAPH_MAX_PAPER_MB", DEFAULT_MAX_PAPER_MB),
            max_text_mb=_number("SAGAGRAPH_MAX_TEXT_MB", DEFAULT_MAX_TEXT_MB),
            max_pages=int(_number("SAGAGRAPH_MAX_PAGES", DEFAULT_MAX_PAGES, whole=True)),
        )

    @property
    def max_paper_bytes(self) -> int:
        return int(self.max_paper_mb * _MB)

    @property
    def max_text_bytes(self) -> int:
        return int(self.max_text_mb * _MB)

    def too_large(self, size: int, *, is_pdf: bool) -> str | None:
        """Why a file of ``size`` bytes is refused, or None when it is within the limits."""
        if size > self.max_paper_bytes:
            return _over(size, self.max_paper_mb, "SAGAGRAPH_MAX_PAPER_MB")
        if not is_pdf and size > self.max_text_bytes:
            return "text " + _over(size, self.max_text_mb, "SAGAGRAPH_MAX_TEXT_MB")
        return None

    def too_many_pages(self, pages: int) -> str | None:
        """Why a paper of ``pages`` pages is refused, or None."""
        if pages > self.max_pages:
            return f"{pages} pages, more than the limit of {self.max_pages} (SAGAGRAPH_MAX_PAGES)"
        return None


def _over(size: int, limit_mb: float, variable: str) -> str:
    return f"file of {size / _MB:.1f} MB, larger than the limit of {limit_mb:g} MB ({variable})"


def _number(variable: str, default: float, *, whole: bool = False) -> float:
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if whole else float(raw)
    except ValueError:
        kind = "a whole number" if whole else "a number"
        raise ConfigurationError(f"{variable}={raw!r}: expected {kind}") from None
    if not value > 0:
        raise ConfigurationError(f"{variable}={raw!r}: must be positive")
    return value


PageProgress = Callable[[int, int], None]
"""``on_page(page_number, total)``: called after each PDF page is read (1-based)."""

MIN_LETTERS = 20
"""A PDF with fewer letters than this in its text layer is treated as having none."""

NEEDS_PASSWORD = (
    "encrypted PDF: a password is needed (set $SAGAGRAPH_PDF_PASSWORD, or give "
    "--password-file FILE)"
)
"""What an encrypted PDF without its password reports: the two ways that keep the password
out of ``ps`` and the shell's history, not ``--password``."""


def fail(path: Path, cause: str) -> PaperLoadError:
    """The error for ``path``: ``<path>: <cause>`` on one line."""
    shown = str(path)
    if not shown.isprintable():
        shown = repr(shown)
    return PaperLoadError(f"{shown}: {cause}")


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or "no details"
    return f"{type(error).__name__}: {text[:160]}"


def read_bytes(path: Path, limits: InputLimits | None = None) -> bytes:
    """The file's bytes; PaperLoadError when it is missing, a folder, not a regular file,
    unreadable or larger than ``limits`` (default: :meth:`InputLimits.from_env`).

    Checked on the open file before reading: ``/dev/zero`` is never read, and a FIFO is
    opened without waiting for a writer (``O_NONBLOCK``), then refused.
    """
    limits = limits or InputLimits.from_env()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise fail(path, "no such file") from None
    except IsADirectoryError:
        raise fail(path, "is a folder, not a file") from None
    except PermissionError:
        raise fail(path, "cannot read the file (permission denied)") from None
    except OSError as error:
        raise fail(path, f"cannot read the file ({error.strerror or error})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise fail(path, "is a folder, not a file")
        raise fail(path, f"not a regular file (a {_kind(mode)}); give a PDF, .txt or .md file")
    with os.fdopen(fd, "rb") as file:
        try:
            # One byte past the limit is enough to know it is too large: never more.
            data = file.read(limits.max_paper_bytes + 1)
        except OSError as error:
            raise fail(path, f"cannot read the file ({error.strerror or error})") from None
    problem = limits.too_large(len(data), is_pdf=b"%PDF-" in data[:1024])
    if problem:
        raise fail(path, problem)
    return data


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def _quiet_pypdf() -> None:
    """Keep pypdf's repair notices ("EOF marker not found") off the user's terminal.

    pypdf logs every robustness fix at WARNING; we report our own one-line errors instead.
    An application that configured the ``pypdf`` logger keeps its own setting.
    """
    logger = logging.getLogger("pypdf")
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.CRITICAL)


def _page_text(page: Any, style: PageStyles, title: TitleRuns | None = None) -> str:
    """One page's text, its styled runs collected in ``style`` (and in ``title``, the first
    page's, for the title by layout)."""
    if title is None:
        return str(page.extract_text(visitor_text=style.visit) or "")

    def both(*run: Any) -> None:
        style.visit(*run)
        title.visit(*run)

    return str(page.extract_text(visitor_text=both) or "")


@dataclass(frozen=True)
class PdfText:
    """What is read off a PDF: page texts, the metadata title and each page's layout."""

    pages: list[str]
    """Text of each page, as pypdf extracts it."""
    title: str
    """The metadata title ('' when absent or unreadable)."""
    layout: list[PageLayout]
    """Per page, the lines set larger, bolder or smaller than the body (layout evidence)."""
    layout_title: str = ""
    """The largest text near the top of the first page ('' when nothing stands out)."""


def pdf_pages(
    path: Path, data: bytes, password: str | None, on_page: PageProgress | None = None
) -> PdfText:
    """Text and layout of each page; PaperLoadError for what cannot be read.

    ``on_page(number, total)`` is called after each page, for progress reports.
    """
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError

    _quiet_pypdf()
    # pypdf repairs a cut file silently and returns whatever pages survive; a paper missing
    # its end is not the paper, so a missing end-of-file marker is an error.
    if b"%%EOF" not in data[-2048:]:
        raise fail(path, "truncated or corrupt PDF (no %%EOF marker at the end)")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            candidates = [password, ""] if password else [""]
            if not any(reader.decrypt(c) for c in candidates if c is not None):
                if password:
                    raise fail(path, "encrypted PDF: wrong password")
                raise fail(path, NEEDS_PASSWORD)
        page_objects = list(reader.pages)
    except PaperLoadError:
        raise
    except FileNotDecryptedError:
        raise fail(path, NEEDS_PASSWORD) from None
    except DependencyError:
        raise fail(
            path, "encrypted PDF (AES): install the 'cryptography' package to open it"
        ) from None
    except Exception as error:  # pypdf raises many error types on broken files
        raise fail(path, f"corrupt PDF ({_one_line(error)})") from None
    if not page_objects:
        raise fail(path, "PDF has no pages")
    too_many = InputLimits.from_env().too_many_pages(len(page_objects))
    if too_many:  # before extracting text, the costly part
        raise fail(path, too_many)
    pages: list[str] = []
    styles: list[list[tuple[str, float, bool]]] = []
    failures: list[BaseException] = []
    total = len(page_objects)
    first_page = TitleRuns()
    for number, page in enumerate(page_objects, start=1):
        style = PageStyles()
        try:
            pages.append(_page_text(page, style, first_page if number == 1 else None))
        except Exception as error:  # one damaged page should not lose the whole paper
            failures.append(error)
            pages.append("")
        styles.append(style.styled())
        if on_page is not None:
            on_page(number, total)
    if len(failures) == len(page_objects):
        raise fail(path, f"corrupt PDF ({_one_line(failures[0])})")
    if not _has_letters(pages, MIN_LETTERS):
        raise fail(path, "no text layer (an image-only or scanned PDF; run OCR on it first)")
    title = ""
    try:
        meta: Any = reader.metadata
        title = str(meta.title or "") if meta is not None else ""
    except Exception:  # metadata is optional; a broken info dictionary loses only the title
        title = ""
    try:
        by_layout = layout_title(first_page, pages[0])
    except Exception:  # odd matrices or sizes lose only the layout's title
        by_layout = ""
    return PdfText(pages=pages, title=title, layout=page_layouts(styles), layout_title=by_layout)


def _has_letters(pages: list[str], least: int) -> bool:
    """True when ``pages`` hold at least ``least`` letters; stops counting once they do."""
    count = 0
    for page in pages:
        count += sum(map(str.isalpha, page))
        if count >= least:
            return True
    return False


def text_pages(path: Path, data: bytes) -> list[str]:
    """Pages of a UTF-8 text file (a form feed starts a new page); refuses binary or empty."""
    if b"\x00" in data:
        raise fail(path, "not a text file (binary data)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise fail(path, f"not UTF-8 text (bad byte at offset {error.start})") from None
    if not text.strip():
        raise fail(path, "empty file (no text)")
    return text.replace("\r\n", "\n").split("\f")
