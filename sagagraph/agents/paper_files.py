"""Reading a paper file into page texts: PDFs through pypdf, ``.txt`` and ``.md`` as UTF-8.

Every problem is a :class:`~sagagraph.errors.PaperLoadError` whose one-line message names the
file and the cause; pypdf's own repair notices are kept off the terminal.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sagagraph.errors import PaperLoadError

MIN_LETTERS = 20
"""A PDF with fewer letters than this in its text layer is treated as having none."""


def fail(path: Path, cause: str) -> PaperLoadError:
    """The error for ``path``: ``<path>: <cause>`` on one line."""
    shown = str(path)
    if not shown.isprintable():
        shown = repr(shown)
    return PaperLoadError(f"{shown}: {cause}")


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or "no details"
    return f"{type(error).__name__}: {text[:160]}"


def read_bytes(path: Path) -> bytes:
    """The file's bytes; PaperLoadError when it is missing, a folder or unreadable."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise fail(path, "no such file") from None
    except IsADirectoryError:
        raise fail(path, "is a folder, not a file") from None
    except PermissionError:
        raise fail(path, "cannot read the file (permission denied)") from None
    except OSError as error:
        raise fail(path, f"cannot read the file ({error.strerror or error})") from None


def _quiet_pypdf() -> None:
    """Keep pypdf's repair notices ("EOF marker not found") off the user's terminal.

    pypdf logs every robustness fix at WARNING; we report our own one-line errors instead.
    An application that configured the ``pypdf`` logger keeps its own setting.
    """
    logger = logging.getLogger("pypdf")
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.CRITICAL)


PageCallback = Callable[[int, int], None]
"""Called with (page number from 1, page count) as each page's text has been extracted."""


def pdf_pages(
    path: Path, data: bytes, password: str | None, on_page: PageCallback | None = None
) -> tuple[list[str], str]:
    """Text of each page and the metadata title; PaperLoadError for what cannot be read.

    ``on_page`` sees each page as it is done (progress for long PDFs)."""
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
                raise fail(path, "encrypted PDF: a password is needed (--password)")
        page_objects = list(reader.pages)
    except PaperLoadError:
        raise
    except FileNotDecryptedError:
        raise fail(path, "encrypted PDF: a password is needed (--password)") from None
    except DependencyError:
        raise fail(
            path, "encrypted PDF (AES): install the 'cryptography' package to open it"
        ) from None
    except Exception as error:  # pypdf raises many error types on broken files
        raise fail(path, f"corrupt PDF ({_one_line(error)})") from None
    if not page_objects:
        raise fail(path, "PDF has no pages")
    pages: list[str] = []
    failures: list[BaseException] = []
    for number, page in enumerate(page_objects, start=1):
        try:
            pages.append(page.extract_text() or "")
        except Exception as error:  # one damaged page should not lose the whole paper
            failures.append(error)
            pages.append("")
        if on_page is not None:
            on_page(number, len(page_objects))
    if len(failures) == len(page_objects):
        raise fail(path, f"corrupt PDF ({_one_line(failures[0])})")
    if sum(c.isalpha() for page in pages for c in page) < MIN_LETTERS:
        raise fail(path, "no text layer (an image-only or scanned PDF; run OCR on it first)")
    title = ""
    try:
        meta: Any = reader.metadata
        title = str(meta.title or "") if meta is not None else ""
    except Exception:  # metadata is optional; a broken info dictionary loses only the title
        title = ""
    return pages, title


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
