"""Loading papers: sections with headings and pages, one-line errors, the caching loader."""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path

import pytest

from sagagraph.agents.headings import HeadingScanner, normalize_line, roman_value
from sagagraph.agents.paper import Paper
from sagagraph.agents.pdf.loader import PaperLoader, check_paper, load_paper, parse_paper
from sagagraph.errors import InputError, PaperLoadError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "papers"
PASSWORD = "openpassword"


def headings(paper: Paper) -> list[str]:
    return [s.heading for s in paper.sections]


# --- text and Markdown ---------------------------------------------------------------------


def test_markdown_sample_has_title_sections_and_levels() -> None:
    paper = load_paper(EXAMPLES / "complete_paper.md")
    assert paper.title.startswith("Checkpointed Sagas")
    assert headings(paper)[:4] == ["Abstract", "1 Introduction", "2 Related Work", "3 Method"]
    assert headings(paper)[-1] == "References"
    levels = {s.heading: s.level for s in paper.sections}
    assert levels["3 Method"] == 1
    assert levels["3.1 Participants and compensations"] == 2
    assert paper.abstract.startswith("Pipelines of language-model agents")
    assert paper.word_count > 1500
    assert paper.outline().splitlines()[1] == "p.1  1 Introduction"


def test_incomplete_sample_has_only_introduction_and_methodology() -> None:
    paper = load_paper(EXAMPLES / "incomplete_paper.md")
    assert paper.title == "Toward Reliable Agent Pipelines: A Work in Progress"
    assert headings(paper) == ["Introduction", "Methodology"]
    assert paper.abstract == ""


IEEE_TEXT = """\
A Study of Things
Ada Author, Bob Author
Abstract—We study things, and we find that things are interesting in many ways.
Index Terms—things, study.
I. Introduction
Things matter. 1. Since a single thing may affect the result of
the study, we look at many things.
II. Related Work
Others studied things before us.
\f
III. Approach
We count things.
IV. Conclusions
Things are countable.
References
[1] A. Person, Things, 2001.
"""


def test_ieee_style_text_inline_abstract_roman_numerals_and_pages(tmp_path: Path) -> None:
    path = tmp_path / "ieee.txt"
    path.write_text(IEEE_TEXT)
    paper = load_paper(path)
    assert paper.title == "A Study of Things"
    assert headings(paper) == [
        "Abstract",
        "Index Terms",
        "I. Introduction",
        "II. Related Work",
        "III. Approach",
        "IV. Conclusions",
        "References",
    ]
    assert paper.abstract.startswith("We study things")
    pages = {s.heading: s.page for s in paper.sections}
    assert pages["II. Related Work"] == 1
    assert pages["III. Approach"] == 2
    assert len(paper.pages) == 2


def test_unnumbered_headings_any_case_and_accents(tmp_path: Path) -> None:
    path = tmp_path / "paper.txt"
    path.write_text(
        "Un article\n\nRÉSUMÉ\nNous étudions.\n\nINTRODUCTION\nTexte.\n\nRelated Work:\n"
        "Texte.\n\nConclusions\nFin.\n\nBIBLIOGRAPHY\nA. Person. 2001. Livre.\n"
    )
    paper = load_paper(path)
    assert [s.name for s in paper.sections] == [
        "resume",
        "introduction",
        "related work",
        "conclusions",
        "bibliography",
    ]
    assert paper.abstract == "Nous étudions."
    assert paper.references_section() is not None


def test_numbering_must_follow_on() -> None:
    scanner = HeadingScanner()
    accepted = [
        line
        for line in [
            "1 Introduction",
            "2019. Latent retrieval for open domain QA",
            "3 Model Architecture",  # 2 was missed; 3 is still plausible
            "3.1 Encoder",
            "6 Things we skipped",  # jumps too far
            "0 or 1, and assume",
            "3.2 Decoder",
            "4 Results 27.3 41.8",  # a table row
            "4 Why Self-Attention",
        ]
        if scanner.scan(normalize_line(line)) is not None
    ]
    assert accepted == [
        "1 Introduction",
        "3 Model Architecture",
        "3.1 Encoder",
        "3.2 Decoder",
        "4 Why Self-Attention",
    ]


def test_wrapped_heading_is_joined() -> None:
    text = "Title Here\n1 Introduction\nText.\n2 CHARACTERIZING EXPOSITORY\nWRITING\nBody text.\n"
    paper = parse_paper("x.txt", [text])
    assert headings(paper) == ["1 Introduction", "2 CHARACTERIZING EXPOSITORY WRITING"]
    assert paper.sections[1].text == "Body text."


def test_roman_value() -> None:
    assert [roman_value(n) for n in ("I", "IV", "VI", "IX", "XII")] == [1, 4, 6, 9, 12]


def test_chunks_cover_the_main_text_in_order() -> None:
    paper = load_paper(EXAMPLES / "complete_paper.md")
    chunks = paper.chunks(1500)
    assert len(chunks) > 3
    assert all(len(c) <= 1500 for c in chunks)
    assert chunks[0].startswith("Abstract\n")
    joined = " ".join(chunks)
    assert joined.index("1 Introduction") < joined.index("5 Conclusion")
    assert "Garcia-Molina and Kenneth Salem. 1987" not in joined  # references are not content
    with pytest.raises(ValueError):
        paper.chunks(10)


# --- PDFs ----------------------------------------------------------------------------------


def test_pdf_sections_have_headings_and_pages(corpus: Path) -> None:
    paper = load_paper(corpus / "papers" / "dpr_2004.04906.pdf")
    assert paper.title == "Dense Passage Retrieval for Open-Domain Question Answering"
    pages = {s.heading: s.page for s in paper.sections}
    assert pages["Abstract"] == 1
    assert pages["1 Introduction"] == 1
    assert pages["7 Related Work"] == 8
    assert pages["8 Conclusion"] == 9
    assert pages["References"] == 9
    assert len(paper.pages) == 13


def test_ieee_pdf_inline_abstract(corpus: Path) -> None:
    paper = load_paper(corpus / "papers" / "individual_dp_ieee_tifs.pdf")
    assert headings(paper)[0] == "Abstract"
    assert paper.abstract.startswith("Differential privacy is a popular privacy model")
    assert "III. Related Work" in headings(paper)


def test_encrypted_pdf_opens_with_its_password(corpus: Path) -> None:
    paper = load_paper(corpus / "not_papers" / "encrypted_password.pdf", password=PASSWORD)
    assert "Lorem ipsum" in paper.text


def test_pdf_with_empty_user_password_opens_without_one(corpus: Path) -> None:
    paper = load_paper(corpus / "not_papers" / "encrypted_empty_userpw_report.pdf")
    assert "Digital Millennium Copyright Act" in paper.title
    # A password given for a file that does not need one does no harm.
    assert load_paper(corpus / "not_papers" / "encrypted_empty_userpw_report.pdf", "x").pages


# --- errors --------------------------------------------------------------------------------


def _cut(source: Path, target: Path, fraction: float) -> Path:
    data = source.read_bytes()
    target.write_bytes(data[: int(len(data) * fraction)])
    return target


def make_bad_file(kind: str, tmp_path: Path, corpus: Path) -> tuple[Path, str | None]:
    """A file that cannot be loaded, and the password to try."""
    rng = random.Random(7)
    dpr = corpus / "papers" / "dpr_2004.04906.pdf"
    if kind == "missing":
        return tmp_path / "nowhere.pdf", None
    if kind == "folder":
        return tmp_path, None
    if kind == "text_named_pdf":
        (tmp_path / "fake.pdf").write_text("just some text, not a PDF\n")
        return tmp_path / "fake.pdf", None
    if kind == "truncated_half":
        return _cut(dpr, tmp_path / "half.pdf", 0.5), None
    if kind == "truncated_tail":
        return _cut(dpr, tmp_path / "tail.pdf", 0.995), None
    if kind == "random_bytes":
        (tmp_path / "random.pdf").write_bytes(rng.randbytes(4096))
        return tmp_path / "random.pdf", None
    if kind == "corrupt_with_header":
        (tmp_path / "corrupt.pdf").write_bytes(b"%PDF-1.7\n" + rng.randbytes(4096) + b"\n%%EOF\n")
        return tmp_path / "corrupt.pdf", None
    if kind == "zero_bytes":
        (tmp_path / "empty.pdf").write_bytes(b"")
        return tmp_path / "empty.pdf", None
    if kind == "encrypted_no_password":
        return corpus / "not_papers" / "encrypted_password.pdf", None
    if kind == "encrypted_wrong_password":
        return corpus / "not_papers" / "encrypted_password.pdf", "hunter2-secret"
    if kind == "image_only":
        return corpus / "not_papers" / "thesis_chapter_image_only.pdf", None
    if kind == "empty_txt":
        (tmp_path / "empty.txt").write_text("  \n\n \t\n")
        return tmp_path / "empty.txt", None
    if kind == "binary_txt":
        (tmp_path / "binary.txt").write_bytes(b"abc\x00\x01\x02")
        return tmp_path / "binary.txt", None
    if kind == "latin1_md":
        (tmp_path / "latin.md").write_bytes("# R\xe9sum\xe9\n".encode("latin-1"))
        return tmp_path / "latin.md", None
    if kind == "unsupported":
        (tmp_path / "paper.docx").write_bytes(b"PK\x03\x04 not really")
        return tmp_path / "paper.docx", None
    raise AssertionError(kind)


BAD_FILES = {
    "missing": "no such file",
    "folder": "is a folder",
    "text_named_pdf": "not a PDF",
    "truncated_half": "truncated or corrupt PDF",
    "truncated_tail": "truncated or corrupt PDF",
    "random_bytes": "not a PDF",
    "corrupt_with_header": "corrupt PDF",
    "zero_bytes": "empty file",
    "encrypted_no_password": "password is needed",
    "encrypted_wrong_password": "wrong password",
    "image_only": "no text layer",
    "empty_txt": "empty file",
    "binary_txt": "binary data",
    "latin1_md": "not UTF-8",
    "unsupported": "unsupported file type",
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_unreadable_input_is_one_line_naming_file_and_cause(
    kind: str, tmp_path: Path, corpus: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path, password = make_bad_file(kind, tmp_path, corpus)
    with pytest.raises(PaperLoadError) as caught:
        load_paper(path, password)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert BAD_FILES[kind] in message
    assert isinstance(caught.value, InputError) and caught.value.exit_code == 2
    if password:
        assert password not in message
    out, err = capfd.readouterr()
    assert out == "" and err == ""  # pypdf's repair notices stay off the terminal


def test_check_paper_raises_the_same_error(tmp_path: Path) -> None:
    with pytest.raises(PaperLoadError, match="no such file"):
        check_paper(tmp_path / "missing.md")
    assert check_paper(EXAMPLES / "incomplete_paper.md").sections


# --- the loader service --------------------------------------------------------------------


def test_loader_parses_each_file_once(tmp_path: Path) -> None:
    path = tmp_path / "paper.md"
    path.write_text((EXAMPLES / "complete_paper.md").read_text())
    loader = PaperLoader()
    first = loader.load(path)
    assert loader.load(path) is first
    assert loader.load(str(path)) is first
    assert loader.parses == 1


def test_loader_reloads_a_changed_file(tmp_path: Path) -> None:
    path = tmp_path / "paper.md"
    path.write_text("# T\n\n## Introduction\n\nOld text.\n")
    loader = PaperLoader()
    assert "Old" in loader.load(path).text
    path.write_text("# T\n\n## Introduction\n\nNew text, longer.\n")
    os.utime(path, ns=(1, 10**9))  # a different mtime, even on coarse file systems
    assert "New" in loader.load(path).text
    assert loader.parses == 2


def test_loader_does_not_cache_failures(tmp_path: Path) -> None:
    loader = PaperLoader()
    path = tmp_path / "later.md"
    with pytest.raises(PaperLoadError):
        loader.load(path)
    path.write_text("# T\n\n## Introduction\n\nText.\n")
    assert loader.load(path).sections


def test_loader_holds_the_password_and_never_shows_it(corpus: Path) -> None:
    path = corpus / "not_papers" / "encrypted_password.pdf"
    loader = PaperLoader(PASSWORD)
    assert "Lorem ipsum" in loader.load(path).text
    assert PASSWORD not in repr(loader)
    with pytest.raises(PaperLoadError, match="password is needed"):
        PaperLoader().load(path)


def test_check_paper_with_the_loader_warms_its_cache() -> None:
    loader = PaperLoader()
    paper = check_paper(EXAMPLES / "complete_paper.md", loader=loader)
    assert loader.load(EXAMPLES / "complete_paper.md") is paper
    assert loader.parses == 1


def test_concurrent_loads_parse_once() -> None:
    loader = PaperLoader()
    results: list[Paper] = []
    barrier = threading.Barrier(4)

    def load() -> None:
        barrier.wait(timeout=10)
        results.append(loader.load(EXAMPLES / "complete_paper.md"))

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(results) == 4
    assert all(r is results[0] for r in results)
    assert loader.parses == 1


def test_a_broken_font_maps_characters_never_reach_the_text() -> None:
    """NULs and other control characters are dropped, a lone surrogate (which no UTF-8 file
    or model request can carry) becomes U+FFFD; the words around them are kept."""
    assert normalize_line("\x00I\x00n\x00t\x00r\x00o 1\x07") == "Intro 1"
    assert (
        normalize_line("Résumé \x1b[0m\x7f of \ud835 the ﬁrst") == "Résumé [0m of \ufffd the first"
    )
    assert normalize_line("tab\tand\x0bspace") == "tab and space"
    normalize_line("x \ud800 é").encode("utf-8")
