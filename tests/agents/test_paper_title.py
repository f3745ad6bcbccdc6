"""The title comes from the first page's layout: the largest text near the top.

Each case is a class of first page seen in real PDFs: a running head and an author line around
the title, a title set over two lines, stale metadata, a cover page whose title is only a little
larger than the rest.
"""

from __future__ import annotations

from pathlib import Path

from pypdf import PdfReader, PdfWriter

from sagagraph.agents.pdf.loader import load_paper
from tests.support.synthetic_papers import BODY, Builder, write_paper


def _paper_after(b: Builder) -> None:
    b.heading("Abstract")
    b.prose(6)
    b.heading("1 Introduction")
    b.prose(8)


def _with_metadata_title(path: Path, title: str) -> Path:
    writer = PdfWriter(clone_from=PdfReader(path))
    writer.add_metadata({"/Title": title})
    with path.open("wb") as out:
        writer.write(out)
    return path


def test_the_largest_line_wins_over_running_head_author_line_and_metadata(tmp_path: Path) -> None:
    b = Builder(header="Journal of Reliable Agents 12 (2024) 1-9")
    b.line("Jane Doe, Kim Roe and Ada Moe")  # an author line above the title
    b.line("Creativity in Machine Learning", 18, bold=True)
    b.line("University of Example")
    _paper_after(b)
    path = _with_metadata_title(write_paper(tmp_path / "p.pdf", b), "Art in Machine Learning")
    assert load_paper(path).title == "Creativity in Machine Learning"


def test_a_title_set_over_two_lines_is_whole(tmp_path: Path) -> None:
    b = Builder()
    b.line("A Comparative Study of Compensation Strategies", 16, bold=True)
    b.line("for Dynamic Agent Pipelines", 16, bold=True)
    b.line("Jane Doe and Kim Roe")
    _paper_after(b)
    title = load_paper(write_paper(tmp_path / "p.pdf", b)).title
    assert title == ("A Comparative Study of Compensation Strategies for Dynamic Agent Pipelines")


def test_a_cover_page_title_only_a_little_larger_than_the_rest(tmp_path: Path) -> None:
    b = Builder()
    b.line("Variational Mixture of Normalizing Flows", 1.14 * 14)
    b.line("Guilherme Example", 14)
    b.line("Thesis to obtain the Master of Science Degree in", 12)
    b.line("Examination Committee", 14)
    b.line("November 2019", 14)
    b.new_page()
    _paper_after(b)
    path = _with_metadata_title(write_paper(tmp_path / "t.pdf", b), "Thesis")
    assert load_paper(path).title == "Variational Mixture of Normalizing Flows"


def test_without_a_larger_line_the_first_title_like_line_is_used(tmp_path: Path) -> None:
    b = Builder()
    b.line("Checkpointed Sagas for Agent Pipelines", BODY)
    b.line("Jane Doe and Kim Roe", BODY)
    _paper_after(b)
    assert load_paper(write_paper(tmp_path / "p.pdf", b)).title == (
        "Checkpointed Sagas for Agent Pipelines"
    )


def test_an_accent_set_apart_over_a_dotless_i_is_put_back() -> None:
    from sagagraph.agents.pdf.pages import tidy_title

    assert tidy_title("Diagnóstico de Patolog \u0301ıas en Pacientes") == (
        "Diagnóstico de Patologías en Pacientes"
    )
