"""Reading a paper: a file's pages parsed into a :class:`~sagagraph.agents.paper.Paper`.

:func:`load_paper` reads one file. Anything that stops it from being read (missing, not a PDF,
truncated, encrypted without the password, no text layer, empty) is a
:class:`~sagagraph.errors.PaperLoadError` with one line naming the file and the cause.
:class:`~sagagraph.agents.pdf.loader.PaperLoader` (which imports this module, never the
other way round) caches loaded papers for the agents.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from sagagraph.agents.headings import (
    KNOWN_HEADINGS,
    HeadingScanner,
    normalize_line,
    normalize_title,
)
from sagagraph.agents.paper import BACK_MATTER_TITLES, Paper, Section
from sagagraph.agents.pdf.files import PageProgress, fail, pdf_pages, read_bytes, text_pages
from sagagraph.agents.pdf.layout import PageLayout
from sagagraph.agents.pdf.page_cleaning import clean_pages, reference_run

TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown"})
"""Plain-text formats read as UTF-8; ``.md`` and ``.markdown`` use ``#`` headings."""
UNHEADED_REFERENCES = "(unheaded reference list)"
"""The heading given to a reference list printed at the end without a heading."""

_NOTICE = re.compile(
    r"proceedings|©|copyright|arxiv|permission|transactions|journal|\bvol\.|volume|conference|"
    r"workshop|preprint|licen[cs]e|\bdoi\b|issn|https?:|www\.",
    re.IGNORECASE,
)
# "Jane Doe and Kim Roe", "A. Turing, G. Hopper & J. Doe": names joined by commas or "and".
_NAME = r"(?:[A-Z][\w'’-]*\.?\s+){1,3}[A-Z][\w'’-]+"
_AUTHOR_LINE = re.compile(rf"^{_NAME}(?:\s*(?:,|\band\b|&)\s*(?:and\s+)?{_NAME})+$")
_AUTHOR_MARKS = frozenset("∗*†‡§¶♠♢♡♣♦□⋄@,")
_NOTHING: frozenset[str] = frozenset()


def _good_metadata_title(title: str) -> bool:
    words = title.split()
    lowered = title.lower()
    return (
        len(words) >= 2
        and not lowered.endswith((".pdf", ".doc", ".docx", ".dvi", ".tex"))
        and not lowered.startswith(("microsoft word", "untitled"))
    )


def _title_like(line: str) -> bool:
    words = line.split()
    if not 2 <= len(words) <= 20 or _NOTICE.search(line) or line.endswith("."):
        return False
    if not line[0].isupper() or any(c in _AUTHOR_MARKS for c in line):
        return False
    long_words = [w for w in words if len(w) > 3]
    capitalised = sum(w[0].isupper() for w in long_words)
    return not long_words or capitalised >= 0.5 * len(long_words)


def guess_title(
    front: Sequence[str], metadata_title: str, fallback: str, layout_title: str = ""
) -> str:
    """The title: the first page's largest text near the top (:mod:`.title`), else the
    metadata title when it is meaningful, else the first title-like lines."""
    if layout_title:
        return layout_title
    if _good_metadata_title(metadata_title):
        return " ".join(metadata_title.split())
    lines = [ln for ln in front[:25] if ln]
    for i, line in enumerate(lines):
        if not _title_like(line):
            continue
        title = line
        for extra in lines[i + 1 : i + 3]:
            if not _title_like(extra) or len(extra.split()) > 12 or _AUTHOR_LINE.match(extra):
                break
            title = f"{title} {extra}"
        return title
    return lines[0] if lines else fallback


def _split_references(
    found: list[tuple[str, int, int, str, list[tuple[int, str]]]],
) -> None:
    """A reference list printed without a heading at the end becomes its own section."""
    if not found or any(normalize_title(f[3]) in BACK_MATTER_TITLES for f in found):
        return
    body = found[-1][4]
    start = reference_run([line for _, line in body])
    if start is None:
        return
    found[-1] = (*found[-1][:4], body[:start])
    found.append((UNHEADED_REFERENCES, body[start][0], 1, "References", body[start:]))


def parse_paper(
    source: str,
    pages: Sequence[str],
    *,
    markdown: bool = False,
    metadata_title: str = "",
    layout: Sequence[PageLayout] = (),
    layout_title: str = "",
) -> Paper:
    """Split page texts into a :class:`Paper`: title, front matter and headed sections.

    ``layout`` (per page, from the PDF) marks the lines set apart as headings and the small
    lines that notes are made of; text patterns work without it. ``layout_title`` is the
    first page's largest text, preferred to the metadata title.
    """
    page_lines = [[normalize_line(line) for line in page.splitlines()] for page in pages]
    cleaned = clean_pages(page_lines, [pl.small for pl in layout], markdown=markdown)
    lines = cleaned.lines
    emphasized: list[set[str] | frozenset[str]] = [
        {"".join(e.split()) for e in pl.emphasized} for pl in layout
    ]
    scanner = HeadingScanner(markdown=markdown)
    front: list[str] = []
    # heading, page, level, title, body lines with their pages
    found: list[tuple[str, int, int, str, list[tuple[int, str]]]] = []
    i = 0
    while i < len(lines):
        page, line = lines[i]
        # The next non-empty line, in case the heading wrapped onto it.
        j = i + 2 if i + 2 < len(lines) and not lines[i + 1][1] and lines[i + 2][1] else i + 1
        following = lines[j][1] if j < len(lines) else None
        marked = emphasized[page - 1] if page <= len(emphasized) else _NOTHING
        vouched = bool(marked) and "".join(line.split()) in marked
        heading = scanner.scan(line, following, emphasized=vouched) if line else None
        if heading is None:
            if found:
                found[-1][4].append((page, line))
            else:
                front.append(line)
            i += 1
            continue
        body = [(page, heading.rest)] if heading.rest else []
        found.append((heading.heading, page, heading.level, heading.title, body))
        i = j + 1 if heading.lines == 2 else i + 1
    if not markdown:
        _split_references(found)
    title = ""
    if (
        markdown
        and found
        and found[0][2] == 1
        and normalize_title(found[0][3]) not in KNOWN_HEADINGS
    ):
        # "# Paper Title" starts a Markdown paper; it is the title, not a section.
        title = found[0][0]
        front += [line for _, line in found.pop(0)[4]]
    if not title:
        title = guess_title(front, metadata_title, Path(source).stem, layout_title)
    # Markdown papers under a "# Title" use "##" for sections: make the top level 1.
    shift = min((lvl for _, _, lvl, _, _ in found), default=1) - 1 if markdown else 0
    sections = tuple(
        Section(
            heading=h,
            page=p,
            text="\n".join(line for _, line in body).strip(),
            level=lvl - shift,
            title=t,
        )
        for h, p, lvl, t, body in found
    )
    return Paper(
        source=source,
        title=title,
        pages=tuple("\n".join(page) for page in page_lines),
        sections=sections,
        front_matter="\n".join(front).strip(),
        notes=tuple(cleaned.notes),
        toc=tuple(cleaned.toc),
    )


def load_paper(
    path: str | Path, password: str | None = None, on_page: PageProgress | None = None
) -> Paper:
    """Load a paper; PaperLoadError (one line, naming the file and the cause) if it cannot be.

    PDFs are recognised by their ``%PDF-`` header whatever their name; ``.txt``, ``.md`` and
    ``.markdown`` files are read as UTF-8 text (a form feed starts a new page). ``password``
    opens an encrypted PDF; it is never part of an error message. ``on_page(number, total)``
    is called after each PDF page is read, for progress reports.
    """
    file = Path(path)
    data = read_bytes(file)
    if not data:
        raise fail(file, "empty file (0 bytes)")
    suffix = file.suffix.lower()
    if b"%PDF-" in data[:1024]:
        pdf = pdf_pages(file, data, password, on_page)
        return parse_paper(
            str(path),
            pdf.pages,
            metadata_title=pdf.title,
            layout=pdf.layout,
            layout_title=pdf.layout_title,
        )
    if suffix == ".pdf":
        raise fail(file, "not a PDF (it does not start with %PDF-)")
    if suffix not in TEXT_SUFFIXES:
        raise fail(file, f"unsupported file type {suffix or '(none)'!r}: use .pdf, .txt or .md")
    pages = text_pages(file, data)
    return parse_paper(str(path), pages, markdown=suffix in (".md", ".markdown"))
