"""Loading a paper (PDF, .txt, .md) into text, pages and sections with their headings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Section:
    """A heading found in the paper, the page it is on, and the text under it."""

    heading: str
    """The heading as printed (``3 Approach``, ``RELATED WORK``)."""
    page: int
    """1-based page of the heading."""
    text: str
    """Text from after the heading up to the next heading."""


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

    @property
    def text(self) -> str:
        return "\n".join(self.pages)

    @property
    def abstract(self) -> str:
        """Text of the abstract, or '' when there is none."""
        raise NotImplementedError

    def outline(self) -> str:
        """One line per heading: ``p.3  2 Related Work``."""
        return "\n".join(f"p.{s.page}  {s.heading}" for s in self.sections)


def load_paper(path: str | Path, password: str | None = None) -> Paper:
    """Load a paper; PaperLoadError (one line, naming the file and the cause) if it cannot be."""
    raise NotImplementedError
