"""Write a long research paper as a text PDF, with no dependency: for the big-input benchmark.

The paper reuses the prose of ``examples/papers/complete_paper.md`` and stretches it over as
many pages as asked, under the headings a complete paper has (Abstract, 1 Introduction,
2 Related Work, 3 Method with numbered subsections, 4 Experiments, 5 Conclusion,
References). Pages are Letter size, Helvetica 10 pt, headings Helvetica-Bold 13 pt: fonts
every PDF reader has, so nothing is embedded and pypdf extracts the text as written.
"""

from __future__ import annotations

import itertools
import re
import textwrap
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "papers" / "complete_paper.md"
LINES_PER_PAGE = 54
CHARS_PER_LINE = 95
TITLE = "Checkpointed Sagas at Scale: A Five-Hundred-Page Study of Agent Pipelines"

# (heading, share of the pages); Method and Experiments get numbered subsections.
SECTIONS: tuple[tuple[str, float], ...] = (
    ("1 Introduction", 0.04),
    ("2 Related Work", 0.08),
    ("3 Method", 0.40),
    ("4 Experiments", 0.38),
    ("5 Conclusion", 0.04),
    ("References", 0.06),
)
SUBSECTION_PAGES = 12


def _paragraphs() -> list[str]:
    """Prose paragraphs of the example paper (headings and title lines left out)."""
    text = EXAMPLE.read_text(encoding="utf-8")
    blocks = [" ".join(b.split()) for b in re.split(r"\n\s*\n", text)]
    return [b for b in blocks if len(b) > 200 and not b.startswith("#")]


def _escape(text: str) -> str:
    text = text.encode("cp1252", "replace").decode("cp1252")
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


class _Pages:
    """Lays out lines on pages: ``(font, text)`` per line, a new page when one is full."""

    def __init__(self) -> None:
        self.pages: list[list[tuple[str, str]]] = [[]]

    def line(self, text: str, font: str = "F1") -> None:
        if len(self.pages[-1]) >= LINES_PER_PAGE:
            self.pages.append([])
        self.pages[-1].append((font, text))

    def heading(self, text: str) -> None:
        if len(self.pages[-1]) > LINES_PER_PAGE - 6:
            self.pages.append([])  # no heading at the foot of a page
        self.line("")
        self.line(text, "F2")

    def prose(self, paragraph: str) -> None:
        for wrapped in textwrap.wrap(paragraph, CHARS_PER_LINE):
            self.line(wrapped)
        self.line("")

    def fill_to(self, page_count: int, paragraphs: itertools.cycle[str]) -> None:
        while len(self.pages) < page_count:
            self.prose(next(paragraphs))


def _layout(pages: int) -> list[list[tuple[str, str]]]:
    prose = itertools.cycle(_paragraphs())
    book = _Pages()
    book.line(TITLE, "F2")
    book.line("Mara Lindqvist and Tomas Okafor, Example Institute for Reliable Software")
    book.heading("Abstract")
    book.prose(next(prose))
    end = 1.0
    for heading, share in SECTIONS:
        end += share * (pages - 1)
        book.heading(heading)
        if heading == "References":
            for i in itertools.count(1):
                if len(book.pages) >= pages and len(book.pages[-1]) >= LINES_PER_PAGE - 2:
                    break
                book.line(f"[{i}] A. Author and B. Author. Sagas for agent pipelines, part {i}.")
                book.line(
                    f"    In Proceedings of the Workshop on Reliable Agents, {1990 + i % 35}."
                )
            break
        number = heading.split()[0]
        if number in ("3", "4"):
            for sub in itertools.count(1):
                if len(book.pages) >= int(end):
                    break
                book.heading(f"{number}.{sub} Part {sub} of the {heading.split(maxsplit=1)[1]}")
                book.fill_to(min(int(end), len(book.pages) + SUBSECTION_PAGES), prose)
        else:
            book.fill_to(int(end), prose)
    return book.pages[:pages]


Line = tuple[str, float, str]
"""One printed line: font (``F1`` Helvetica, ``F2`` Helvetica-Bold), size in points, text."""


def write_paper_pdf(path: Path, pages: int) -> Path:
    """Write a ``pages``-page research paper to ``path``; return the path."""
    laid = [
        [(font, 13.0 if font == "F2" else 10.0, text) for font, text in page]
        for page in _layout(pages)
    ]
    return write_lines_pdf(path, laid)


def _stream(lines: list[Line]) -> bytes:
    """A page's content stream: each line on its own baseline, 12 pt below the previous one."""
    ops = ["BT", "/F1 10 Tf", "72 740 Td"]
    current = ("F1", 10.0)
    for font, size, text in lines:
        if (font, size) != current:
            ops.append(f"/{font} {size:g} Tf")
            current = (font, size)
        ops.append(f"({_escape(text)}) Tj 0 {-max(12.0, size * 1.2):g} Td")
    ops.append("ET")
    return "\n".join(ops).encode("cp1252", "replace")


def write_lines_pdf(path: Path, pages: list[list[Line]]) -> Path:
    """Write pages of ``(font, size, text)`` lines as a text PDF; return the path.

    The text is encoded in WinAnsi (cp1252), so accents, dashes and quotes survive.
    """
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, once the page objects are numbered
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>",
    ]
    kids: list[int] = []
    for lines in pages:
        stream = _stream(lines)
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        content = len(objects)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents %d 0 R >>" % content
        )
        kids.append(len(objects))
    refs = " ".join(f"{k} 0 R" for k in kids).encode()
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (refs, len(kids))

    return write_objects_pdf(path, objects)


def write_objects_pdf(path: Path, objects: list[bytes]) -> Path:
    """Write ``objects`` (object 1 the catalog) as a PDF file with its cross-reference table."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    path.write_bytes(bytes(out))
    return path
