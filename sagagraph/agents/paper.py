"""A loaded paper: its pages, title and sections with their headings, and the parts they make.

:func:`~sagagraph.agents.pdf.loader.load_paper` reads one from a file (PDF, .txt, .md);
:class:`Paper` answers what the agents ask of it: the abstract, the outline, the references,
the main text, and that text in chunks for a long paper.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from sagagraph.agents.headings import normalize_title
from sagagraph.agents.words import count_words, split_sentences
from sagagraph.errors import StepError

BACK_MATTER_TITLES = frozenset(
    {"references", "bibliography", "works cited", "literature cited", "literatur"}
    | {"literaturverzeichnis", "quellen", "references bibliographiques", "bibliographie"}
    | {"referencias", "bibliografia", "riferimenti", "riferimenti bibliografici"}
)
"""Titles (:attr:`Section.name`) that head a reference list, in the languages papers use."""
_NOT_CONTENT = frozenset(
    {"keywords", "index terms", "ccs concepts", "funding", "author contributions"}
    | {"competing interests"}
)
_ABSTRACT_TITLES = frozenset(
    {"abstract", "resume", "zusammenfassung", "kurzfassung", "resumen", "resumo", "sommario"}
    | {"riassunto"}
)
_OPENING = re.compile(
    r"^(introduction|einleitung|einfuhrung|introduccion|introducao|introduzione)\b"
)
_FRONT_MATTER_END = re.compile(
    r"^(ccs concepts|additional key words|keywords|index terms|acm reference format)", re.I
)
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
    notes: tuple[str, ...] = ()
    """Footnotes and author or affiliation notes, kept apart from the body."""
    toc: tuple[str, ...] = ()
    """Entries of a printed table of contents: evidence of the outline, never body."""

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
            if _OPENING.match(section.name):
                break
            if section.name == "summary":
                return section
        return None

    def unheaded_abstract(self) -> str:
        """The abstract some formats (ACM) print without a heading, before the introduction.

        It is the longest run of full-width lines in the front matter, when the first heading
        is the introduction and the run has at least 50 words; else ''.
        """
        if not self.sections or not _OPENING.match(self.sections[0].name):
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
        return next((s for s in self.sections if s.name in BACK_MATTER_TITLES), None)

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
    """``block`` cut between sentences into pieces of at most ``max_chars`` characters.

    The block's first line (a section's heading) stays on a line of its own in the first
    piece, so it is never read as the start of the first sentence.
    """
    if len(block) <= max_chars:
        yield block
        return
    head, _, body = block.partition("\n")
    piece = f"{head}\n" if body else ""
    for sentence in split_sentences(body or head):
        while len(sentence) > max_chars:  # a run-on "sentence" (a table dump): cut it hard
            if piece:
                yield piece.rstrip("\n")
                piece = ""
            yield sentence[:max_chars]
            sentence = sentence[max_chars:]
        if piece and len(piece) + 1 + len(sentence) > max_chars:
            yield piece.rstrip("\n")
            piece = ""
        piece = f"{piece}{sentence}" if piece.endswith("\n") or not piece else f"{piece} {sentence}"
    if piece:
        yield piece.rstrip("\n")
