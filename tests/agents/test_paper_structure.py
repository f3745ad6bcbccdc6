"""Structure found on synthetic PDFs, one per failure class: layout and text patterns together."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sagagraph.agents.offline_engine import OfflineEngine
from sagagraph.agents.pdf.loader import PaperLoader, load_paper, parse_paper
from sagagraph.agents.validation_rules import REQUIRED_PARTS
from tests.support.synthetic_papers import INVALID_CASES, VALID_CASES

Build = Callable[[Path], Path]


@pytest.mark.parametrize("name", sorted(VALID_CASES))
def test_synthetic_paper_is_valid_with_each_part_on_its_page(name: str, tmp_path: Path) -> None:
    paper = load_paper(VALID_CASES[name](tmp_path / f"{name}.pdf"))
    report, _ = OfflineEngine().validate(paper)
    assert report.is_valid, (report.reason, paper.outline())
    assert [p.part for p in report.found] == list(REQUIRED_PARTS)
    for part in report.found:
        assert 1 <= part.page <= len(paper.pages)
        # The heading is printed on that page (or it is a marker for an unheaded part).
        assert part.heading.startswith("(") or part.heading in paper.pages[part.page - 1]


@pytest.mark.parametrize("name", sorted(INVALID_CASES))
def test_synthetic_non_paper_is_refused(name: str, tmp_path: Path) -> None:
    paper = load_paper(INVALID_CASES[name](tmp_path / f"{name}.pdf"))
    report, _ = OfflineEngine().validate(paper)
    assert not report.is_valid and report.missing


def test_running_header_and_table_of_contents_are_not_body(tmp_path: Path) -> None:
    paper = load_paper(VALID_CASES["journal_with_toc"](tmp_path / "toc.pdf"))
    assert paper.toc, "the table of contents is kept as outline evidence"
    assert any("Conclusions" in line for line in paper.toc)
    headings = [s.heading for s in paper.sections]
    assert headings.count("1. Introduction") == 1
    assert [s.page for s in paper.sections if s.heading == "1. Introduction"] == [3]
    assert all("Journal of Reliable Agents" not in s.text for s in paper.sections)
    assert all("....." not in s.text for s in paper.sections)


def test_footnotes_are_kept_apart_from_the_body(tmp_path: Path) -> None:
    paper = load_paper(VALID_CASES["journal_with_toc"](tmp_path / "toc.pdf"))
    assert any("Corresponding author" in note for note in paper.notes)
    assert "Corresponding author" not in paper.main_text()
    assert "Corresponding author" not in paper.abstract


def test_inline_abstract_with_a_hyphen_is_the_abstract(tmp_path: Path) -> None:
    paper = load_paper(VALID_CASES["ieee_inline_abstract"](tmp_path / "ieee.pdf"))
    assert paper.abstract.startswith("As compared to two-phase commit")


def test_author_year_list_without_heading_is_the_references(tmp_path: Path) -> None:
    paper = load_paper(VALID_CASES["background_first"](tmp_path / "old.pdf"))
    refs = paper.references_section()
    assert refs is not None and "AuthorA, J." in refs.text
    last = next(s for s in paper.sections if s.name.startswith("concluding"))
    assert "AuthorA" not in last.text


def test_layout_finds_headings_the_vocabulary_does_not_know(tmp_path: Path) -> None:
    paper = load_paper(VALID_CASES["german"](tmp_path / "de.pdf"))
    assert [s.heading for s in paper.sections][:3] == [
        "Zusammenfassung",
        "Einleitung",
        "Verwandte Arbeiten",
    ]


@pytest.mark.parametrize(
    ("text", "joined"),
    [
        ("the multi-\nple datasets", "the multiple datasets"),
        ("English-\nto-German translation", "English-to-German translation"),
        ("ﬁne-tuned eﬀort", "fine-tuned effort"),
        ("the Open Re-\nsearch Corpus for research", "the Open Research Corpus"),
        ("a dual-\nencoder, as dual-encoder models do", "a dual-encoder, as"),
    ],
)
def test_line_break_hyphens_and_ligatures_are_normalised(text: str, joined: str) -> None:
    paper = parse_paper("x.txt", [f"Title Of It\nAbstract\n{text}\n"])
    assert joined in paper.abstract


def test_on_page_reports_every_page_through_the_loader(tmp_path: Path) -> None:
    pdf = VALID_CASES["german"](tmp_path / "de.pdf")
    seen: list[tuple[int, int]] = []
    paper = PaperLoader().load(pdf, on_page=lambda n, total: seen.append((n, total)))
    total = len(paper.pages)
    assert seen == [(n, total) for n in range(1, total + 1)]
