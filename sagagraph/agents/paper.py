"""A loaded paper (PDF, .txt, .md): its pages, title and sections with their headings.

:func:`load_paper` reads one file. Anything that stops it from being read (missing, not a PDF,
truncated, encrypted without the password, no text layer, empty) is a
:class:`~sagagraph.errors.PaperLoadError` with one line naming the file and the cause.
:class:`~sagagraph.agents.paper_loader.PaperLoader` caches loaded papers for the agents;
:func:`check_paper` is what the CLI calls before it starts a saga.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sagagraph.agents.headings import (
    KNOWN_HEADINGS,
    HeadingScanner,
    normalize_line,
    normalize_title,
)
from sagagraph.agents.paper_files import PageCallback, fail, pdf_pages, read_bytes, text_pages
from sagagraph.agents.words import count_words, split_sentences
from sagagraph.errors import StepError

if TYPE_CHECKING:
    from sagagraph.agents.paper_loader import PaperLoader

TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown"})
"""Plain-text formats read as UTF-8; ``.md`` and ``.markdown`` use ``#`` headings."""

_BACK_MATTER = frozenset({"references", "bibliography", "works cited"})
_NOT_CONTENT = frozenset(
    {"keywords", "index terms", "ccs concepts", "funding", "author contributions"}
    | {"competing interests"}
)
_ABSTRACT_TITLES = frozenset({"abstract", "resume"})
_FRONT_MATTER_END = re.compile(
    r"^(ccs concepts|additional key words|keywords|index terms|acm reference format)", re.I
)
_NOTICE = re.compile(
    r"proceedings|©|copyright|arxiv|permission|transactions|journal|\bvol\.|volume|conference|"
    r"workshop|preprint|licen[cs]e|\bdoi\b|issn|https?:|www\.",
    re.IGNORECASE,
)
_AUTHOR_MARKS = frozenset("∗*†‡§¶♠♢♡♣♦□⋄@,")
_DIGITS = re.compile(r"\d+")
_HYPHEN_BREAK = re.compile(r"(?<=[a-z])-\n(?=[a-z])")


class PaperTooShortError(StepError):
    """The paper has fewer words than the summary it is asked for."""


def fold_lines(text: str) -> str:
    """Text as one line of prose: words split across lines re-joined, whitespace folded."""
    return " ".join(_HYPHEN_BREAK.sub("", text).split())


@dataclass(frozen=True)
class Section:
    """A heading found in the paper, the page it is on, and the text under it."""

    heading: str
    """The heading as printed (``3 Approach``, ``RELATED WORK``)."""
    page: int
    """1-based page of the heading."""
    text: str
    """Text from after the heading up to the next heading."""
    level: int = 1
    """1 for a section, 2 for a subsection, and so on."""
    title: str = ""
    """The heading without its number (``Approach``); the heading itself when unnumbered."""

    def __post_init__(self) -> None:
        if not self.title:
            object.__setattr__(self, "title", self.heading)

    @property
    def name(self) -> str:
        """The title normalised for matching: ``Related Work:`` -> ``related work``."""
        return normalize_title(self.title)

    @property
    def words(self) -> int:
        return count_words(self.text)


@dataclass(frozen=True)
class Paper:
    """A loaded paper. Kept out of the saga state: state holds only its path."""

    source: str
    """Path the paper was loaded from."""
    title: str
    """Best guess at the title (first substantial line)."""
    pages: tuple[str, ...]
    """Text of each page."""
    sections: tuple[Section, ...]
    """Sections in reading order."""
    front_matter: str = ""
    """Text before the first heading (title, authors, an unheaded abstract)."""

    @property
    def text(self) -> str:
        return "\n".join(self.pages)

    @property
    def word_count(self) -> int:
        """Words in the whole paper, as :func:`~sagagraph.agents.words.count_words` counts."""
        return count_words(self.text)

    @property
    def abstract(self) -> str:
        """Text of the abstract, or '' when there is none."""
        section = self.abstract_section()
        if section is not None:
            return fold_lines(section.text)
        return self.unheaded_abstract()

    def abstract_section(self) -> Section | None:
        """The section headed Abstract (or Résumé, or Summary before the introduction)."""
        for section in self.sections:
            if section.name in _ABSTRACT_TITLES:
                return section
            if section.name.startswith("introduction"):
                break
            if section.name == "summary":
                return section
        return None

    def unheaded_abstract(self) -> str:
        """The abstract some formats (ACM) print without a heading, before the introduction.

        It is the longest run of full-width lines in the front matter, when the first heading
        is the introduction and the run has at least 50 words; else ''.
        """
        if not self.sections or not self.sections[0].name.startswith("introduction"):
            return ""
        lines = [ln for ln in self.front_matter.splitlines() if ln.strip()]
        cut = next((i for i, ln in enumerate(lines) if _FRONT_MATTER_END.match(ln)), len(lines))
        lines = lines[:cut]
        if not lines:
            return ""
        wide = 0.55 * max(len(ln) for ln in lines)
        best: list[str] = []
        run: list[str] = []
        for line in [*lines, ""]:
            if len(line) >= wide and len(line.split()) >= 6:
                run.append(line)
                continue
            if count_words(" ".join(run)) > count_words(" ".join(best)):
                best = run
            run = []
        text = fold_lines("\n".join(best))
        return text if count_words(text) >= 50 else ""

    def outline(self) -> str:
        """One line per heading: ``p.3  2 Related Work``."""
        return "\n".join(f"p.{s.page}  {s.heading}" for s in self.sections)

    def references_section(self) -> Section | None:
        """The References (or Bibliography) section, if the paper has one."""
        return next((s for s in self.sections if s.name in _BACK_MATTER), None)

    def main_sections(self) -> tuple[Section, ...]:
        """Sections before the references, without acknowledgments and keyword lists."""
        end = self.references_section()
        kept: list[Section] = []
        for section in self.sections:
            if section is end:
                break
            if section.name not in _NOT_CONTENT and not section.name.startswith("acknowledg"):
                kept.append(section)
        return tuple(kept)

    def main_text(self) -> str:
        """The paper's prose up to the references: abstract, body and conclusion."""
        sections = self.main_sections()
        if not sections:
            return fold_lines(self.text)
        parts = [self.abstract] if self.abstract_section() is None else []
        parts += [fold_lines(s.text) for s in sections]
        return "\n".join(p for p in parts if p)

    def chunks(self, max_chars: int = 12_000) -> list[str]:
        """The main text in pieces of at most ``max_chars`` characters, in reading order.

        Pieces break between sections where possible, else between sentences; each section
        starts with its heading on its own line. For summarising a long paper chunk by chunk.
        """
        if max_chars < 200:
            raise ValueError(f"max_chars must be at least 200, got {max_chars}")
        blocks: list[str] = []
        sections = self.main_sections()
        if self.abstract_section() is None and self.abstract:
            blocks.append(f"Abstract\n{self.abstract}")
        if sections:
            blocks += [f"{s.heading}\n{fold_lines(s.text)}" for s in sections]
        else:
            blocks.append(fold_lines(self.text))
        pieces = [piece for block in blocks for piece in _split_block(block, max_chars)]
        chunks: list[str] = []
        for piece in pieces:
            if chunks and len(chunks[-1]) + 2 + len(piece) <= max_chars:
                chunks[-1] += "\n\n" + piece
            else:
                chunks.append(piece)
        return chunks


def _split_block(block: str, max_chars: int) -> Iterator[str]:
    """``block`` cut between sentences into pieces of at most ``max_chars`` characters."""
    if len(block) <= max_chars:
        yield block
        return
    piece = ""
    for sentence in split_sentences(block):
        while len(sentence) > max_chars:  # a run-on "sentence" (a table dump): cut it hard
            if piece:
                yield piece
                piece = ""
            yield sentence[:max_chars]
            sentence = sentence[max_chars:]
        if piece and len(piece) + 1 + len(sentence) > max_chars:
            yield piece
            piece = ""
        piece = f"{piece} {sentence}" if piece else sentence
    if piece:
        yield piece


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


def guess_title(front: Sequence[str], metadata_title: str, fallback: str) -> str:
    """The title: metadata when it is meaningful, else the first title-like lines."""
    if _good_metadata_title(metadata_title):
        return " ".join(metadata_title.split())
    lines = [ln for ln in front[:25] if ln]
    for i, line in enumerate(lines):
        if not _title_like(line):
            continue
        title = line
        for extra in lines[i + 1 : i + 3]:
            if not _title_like(extra) or len(extra.split()) > 12:
                break
            title = f"{title} {extra}"
        return title
    return lines[0] if lines else fallback


def _running_lines(pages: Sequence[Sequence[str]]) -> set[str]:
    """Lines printed at the top or bottom of many pages: running headers, page numbers.

    Lines are compared with their digits masked, so ``Title 21`` and ``Title 22`` match.
    """
    if len(pages) < 3:
        return set()
    counts: Counter[str] = Counter()
    for lines in pages:
        text = [ln for ln in lines if ln]
        counts.update({_DIGITS.sub("#", ln) for ln in text[:3] + text[-3:]})
    threshold = max(3, int(0.3 * len(pages)))
    return {key for key, n in counts.items() if n >= threshold}


def parse_paper(
    source: str, pages: Sequence[str], *, markdown: bool = False, metadata_title: str = ""
) -> Paper:
    """Split page texts into a :class:`Paper`: title, front matter and headed sections."""
    page_lines = [[normalize_line(line) for line in page.splitlines()] for page in pages]
    running = _running_lines(page_lines) if not markdown else set()
    lines = [
        (number, line)
        for number, page in enumerate(page_lines, start=1)
        for line in page
        if not (line and _DIGITS.sub("#", line) in running)
    ]
    scanner = HeadingScanner(markdown=markdown)
    front: list[str] = []
    found: list[tuple[str, int, int, str, list[str]]] = []  # heading, page, level, title, lines
    i = 0
    while i < len(lines):
        page, line = lines[i]
        # The next non-empty line, in case the heading wrapped onto it.
        j = next((k for k in range(i + 1, min(i + 3, len(lines))) if lines[k][1]), i + 1)
        following = lines[j][1] if j < len(lines) else None
        heading = scanner.scan(line, following) if line else None
        if heading is None:
            (found[-1][4] if found else front).append(line)
            i += 1
            continue
        body = [heading.rest] if heading.rest else []
        found.append((heading.heading, page, heading.level, heading.title, body))
        i = j + 1 if heading.lines == 2 else i + 1
    title = ""
    if (
        markdown
        and found
        and found[0][2] == 1
        and normalize_title(found[0][3]) not in KNOWN_HEADINGS
    ):
        # "# Paper Title" starts a Markdown paper; it is the title, not a section.
        title = found[0][0]
        front += found.pop(0)[4]
    if not title:
        title = guess_title(front, metadata_title, Path(source).stem)
    # Markdown papers under a "# Title" use "##" for sections: make the top level 1.
    shift = min((lvl for _, _, lvl, _, _ in found), default=1) - 1 if markdown else 0
    sections = tuple(
        Section(heading=h, page=p, text="\n".join(body).strip(), level=lvl - shift, title=t)
        for h, p, lvl, t, body in found
    )
    return Paper(
        source=source,
        title=title,
        pages=tuple(pages),
        sections=sections,
        front_matter="\n".join(front).strip(),
    )


def load_paper(
    path: str | Path, password: str | None = None, *, on_page: PageCallback | None = None
) -> Paper:
    """Load a paper; PaperLoadError (one line, naming the file and the cause) if it cannot be.

    PDFs are recognised by their ``%PDF-`` header whatever their name; ``.txt``, ``.md`` and
    ``.markdown`` files are read as UTF-8 text (a form feed starts a new page). ``password``
    opens an encrypted PDF; it is never part of an error message. ``on_page(n, total)`` sees
    each PDF page as it is read (progress).
    """
    file = Path(path)
    data = read_bytes(file)
    if not data:
        raise fail(file, "empty file (0 bytes)")
    suffix = file.suffix.lower()
    if b"%PDF-" in data[:1024]:
        pages, metadata_title = pdf_pages(file, data, password, on_page)
        return parse_paper(str(path), pages, metadata_title=metadata_title)
    if suffix == ".pdf":
        raise fail(file, "not a PDF (it does not start with %PDF-)")
    if suffix not in TEXT_SUFFIXES:
        raise fail(file, f"unsupported file type {suffix or '(none)'!r}: use .pdf, .txt or .md")
    pages = text_pages(file, data)
    return parse_paper(str(path), pages, markdown=suffix in (".md", ".markdown"))


def check_paper(
    path: str | Path, password: str | None = None, *, loader: PaperLoader | None = None
) -> Paper:
    """Load ``path`` before a saga starts, so bad input fails fast (the CLI exits with 2).

    Pass the saga's ``loader`` to keep the parsed paper in its cache for the agents.
    """
    if loader is not None:
        return loader.load(path, password)
    return load_paper(path, password)
