"""Synthetic papers for each failure class of structure detection, built as real text PDFs.

Headings are set in Helvetica-Bold at a larger size than the 10 pt body, so loading goes through
the layout path (pypdf's text visitor) as it does for a publisher's PDF. Each builder returns
the page lines; :func:`write_paper` lays them out (running header, page-number footer, a
footnote in small type) with :func:`bench.pdfgen.write_lines_pdf`.
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench.pdfgen import Line, write_lines_pdf

BODY = 10.0
HEADING = 12.0
NOTE = 7.5
LINES_PER_PAGE = 50

_SUBJECTS = (
    "The proposed estimator",
    "Our retrieval model",
    "The annotation protocol",
    "Each training run",
    "The baseline system",
    "The compensation step",
    "A careful error analysis",
    "The evaluation corpus",
)
_VERBS = (
    "reduces the variance of",
    "improves the stability of",
    "changes the behaviour of",
    "clarifies the role of",
    "bounds the cost of",
    "exposes the weakness of",
)
_OBJECTS = (
    "long document summarisation",
    "sparse passage retrieval",
    "the saga coordinator",
    "human faithfulness judgements",
    "distributed checkpoint storage",
    "multilingual heading detection",
    "the privacy budget",
)
_TAILS = (
    "on every dataset we tried",
    "when the input grows beyond ten thousand tokens",
    "compared with the strongest earlier system",
    "without any additional supervision",
    "at a fraction of the usual compute",
    "in the settings that practitioners care about",
)


def _sentences() -> Iterator[str]:
    """Distinct, grammatical sentences, so every section reads as its own prose."""
    for n, (s, v, o, t) in enumerate(itertools.product(_SUBJECTS, _VERBS, _OBJECTS, _TAILS)):
        yield f"{s} {v} {o} {t} (case {n + 1})."


@dataclass
class Builder:
    """Page lines of a paper under construction; ``header`` repeats at the top of each page."""

    header: str = ""
    pages: list[list[Line]] = field(default_factory=lambda: [[]])
    prose_source: Iterator[str] = field(default_factory=_sentences)

    def _room(self, lines: int) -> None:
        if len(self.pages[-1]) + lines > LINES_PER_PAGE:
            self.pages.append([])

    def line(self, text: str, size: float = BODY, bold: bool = False) -> None:
        self._room(1)
        self.pages[-1].append(("F2" if bold else "F1", size, text))

    def heading(self, text: str, size: float = HEADING) -> None:
        self._room(4)
        self.line("")
        self.line(text, size, bold=True)

    def prose(self, sentences: int = 8, lead: str = "") -> None:
        text = " ".join([lead] * bool(lead) + [next(self.prose_source) for _ in range(sentences)])
        for wrapped in textwrap.wrap(text, 95):
            self.line(wrapped)

    def new_page(self) -> None:
        self.pages.append([])

    def laid_out(self, footnote: str = "") -> list[list[Line]]:
        """Pages with the running header, the page number as footer, a footnote on page 1."""
        out: list[list[Line]] = []
        for number, lines in enumerate(self.pages, start=1):
            page: list[Line] = []
            if self.header:
                page += [("F1", 8.0, self.header), ("F1", BODY, "")]
            page += lines
            if footnote and number == 1:
                page += [("F1", BODY, ""), ("F1", NOTE, footnote)]
            page += [("F1", BODY, ""), ("F1", 8.0, str(number))]
            out.append(page)
        return out


def write_paper(path: Path, builder: Builder, footnote: str = "") -> Path:
    return write_lines_pdf(path, builder.laid_out(footnote))


def _references(b: Builder, heading: str | None, author_year: bool = False) -> None:
    if heading is not None:
        b.heading(heading)
    for i in range(1, 13):
        if author_year:
            b.line(
                f"Author{chr(64 + i)}, J. and Writer, K. ({1990 + i}). A study of sagas, part {i}."
            )
            b.line(f"    Journal of Reliable Systems, {i}(2):1-{10 + i}.")
        else:
            b.line(f"[{i}] J. Author{chr(64 + i)} and K. Writer. A study of sagas, part {i}.")
            b.line(f"    In Proceedings of the Workshop on Reliable Agents, {1990 + i}.")


def journal_with_toc(path: Path) -> Path:
    """Single column, a running header on every page, a table of contents on page 2."""
    b = Builder(header="Journal of Reliable Agents 12 (2024) 1-9   J. Doe, K. Roe")
    b.line("Reliable Sagas for Language Model Agents", 16, bold=True)
    b.line("Jane Doe and Kim Roe")
    b.heading("Abstract")
    b.prose(6)
    b.new_page()
    b.line("Contents", HEADING, bold=True)
    entries = ["1. Introduction", "2. Related work", "3. Method", "4. Experiments"]
    entries += ["5. Discussion", "6. Conclusions", "References"]
    for n, entry in enumerate(entries):
        b.line(f"{entry} {'.' * (60 - len(entry))} {3 + n}")
    b.new_page()
    for title in entries[:-1]:
        b.heading(title)
        b.prose(10)
    _references(b, "References")
    return write_paper(path, b, footnote="* Corresponding author: jane.doe@example.org")


def ieee_inline_abstract(path: Path) -> Path:
    """IEEE style: the abstract starts inline as "Abstract- As compared to..."; caps roman."""
    b = Builder()
    b.line("Robust Compensation in Agent Pipelines", 16, bold=True)
    b.line("A. Author, Member, IEEE, and B. Author")
    b.line("Abstract- As compared to two-phase commit, sagas trade isolation for availability.", 9)
    b.prose(5)
    for n, title in enumerate(
        ["INTRODUCTION", "RELATED WORK", "PROPOSED APPROACH", "EVALUATION", "CONCLUSION"], 1
    ):
        b.heading(f"{['I', 'II', 'III', 'IV', 'V'][n - 1]}. {title}")
        b.prose(10)
    _references(b, "REFERENCES")
    return write_paper(path, b)


def background_first(path: Path) -> Path:
    """An older paper whose first section is "1 Background"; author-year references, no heading."""
    b = Builder()
    b.line("Sagas Revisited", 16, bold=True)
    b.line("R. Older")
    b.heading("Summary")
    b.prose(6)
    for n, title in enumerate(
        ["Background", "The Saga Model", "Case Studies", "Concluding remarks"]
    ):
        b.heading(f"{n + 1} {title}")
        b.prose(12)
    b.line("")
    _references(b, None, author_year=True)
    return write_paper(path, b)


def french(path: Path) -> Path:
    """A French conference paper: Résumé, Introduction ... Conclusion, Références."""
    b = Builder(header="Actes de la conférence CORIA 2024")
    b.line("Des sagas pour les agents conversationnels", 16, bold=True)
    b.line("Jeanne Dupont")
    b.heading("Résumé")
    b.prose(6)
    titles = ["Introduction", "Travaux connexes", "Méthode proposée", "Expérimentations"]
    for n, title in enumerate([*titles, "Conclusion et perspectives"], 1):
        b.heading(f"{n} {title}")
        b.prose(10)
    _references(b, "Références")
    return write_paper(path, b)


def german(path: Path) -> Path:
    """A German paper: Zusammenfassung, Einleitung ... Fazit, Literatur (unnumbered headings)."""
    b = Builder()
    b.line("Sagas für Sprachmodell-Agenten", 16, bold=True)
    b.line("Max Mustermann")
    b.heading("Zusammenfassung")
    b.prose(6)
    for title in ["Einleitung", "Verwandte Arbeiten", "Ansatz", "Experimente", "Fazit"]:
        b.heading(title)
        b.prose(10)
    _references(b, "Literatur")
    return write_paper(path, b)


def slides(path: Path) -> Path:
    """A talk: one short title per page and a few bullets; no abstract, no references."""
    b = Builder()
    for title in ["Introduction", "Method", "Results", "Conclusion", "Thank you"]:
        b.line(title, 20, bold=True)
        b.line("- one point about the work")
        b.line("- another point about the work")
        b.new_page()
    return write_paper(path, b)


def extended_abstract(path: Path) -> Path:
    """One page of prose under a title: no sections, no references."""
    b = Builder()
    b.line("A Short Note on Sagas", 16, bold=True)
    b.heading("Abstract")
    b.prose(20)
    return write_paper(path, b)


VALID_CASES = {
    "journal_with_toc": journal_with_toc,
    "ieee_inline_abstract": ieee_inline_abstract,
    "background_first": background_first,
    "french": french,
    "german": german,
}
INVALID_CASES = {"slides": slides, "extended_abstract": extended_abstract}
