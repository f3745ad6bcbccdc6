"""Bad input through the real ``sagagraph run``: one clear line or a clean rollback, nothing left.

Every file of the corpus's ``not_papers`` folder, plus files made here (zero bytes, cut
short, random bytes, a PDF header over garbage, thousands of blank pages, thousands of pages
of text that is no paper, binary and non-UTF-8 text, an unsupported type, a name with a
newline), plus a missing file, a folder, an encrypted PDF with a wrong password and unsafe
saga ids. Each run must end with either

- exit 2 and exactly one line on stderr, ``sagagraph: error: <file>: <cause>``, or
- exit 5 (halted by the validator) and a clean ``rolled_back`` view with a reason and
  nothing completed,

(stderr may also carry progress lines: the saga id, pages loaded, steps starting and ending),

never a traceback, and with nothing at all under the outputs folder (not even the store's
hidden ledger: a rejected input creates nothing).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.corpus import read_labels

REPO = Path(__file__).resolve().parents[2]
SAGAGRAPH = Path(sys.executable).parent / "sagagraph"
REAL_PAPER = "papers/dpr_2004.04906.pdf"
MANY_PAGES = 2_500
EXIT_USAGE, EXIT_HALTED = 2, 5
PROGRESS = ("saga ", "loading ", "  ")
"""How the CLI's progress lines on stderr begin (also under --json)."""


def without_progress(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith(PROGRESS)]


def text_pdf(pages: int, line: Callable[[int], str]) -> bytes:
    """A valid PDF with one line of text per page, written by hand (no PDF library needed)."""
    out = bytearray(b"%PDF-1.4\n")
    offsets: dict[int, int] = {}

    def add(number: int, body: bytes) -> None:
        offsets[number] = len(out)
        out.extend(b"%d 0 obj\n%s\nendobj\n" % (number, body))

    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(pages))
    add(1, b"<< /Type /Catalog /Pages 2 0 R >>")
    add(2, f"<< /Type /Pages /Count {pages} /Kids [{kids}] >>".encode())
    add(3, b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i in range(pages):
        text = line(i).replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 11 Tf 72 720 Td ({text}) Tj ET".encode()
        resources = "/Resources << /Font << /F1 3 0 R >> >>"
        add(
            4 + 2 * i,
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] {resources} "
            f"/Contents {5 + 2 * i} 0 R >>".encode(),
        )
        add(5 + 2 * i, b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    xref = len(out)
    size = 4 + 2 * pages
    out.extend(b"xref\n0 %d\n0000000000 65535 f \n" % size)
    out.extend(b"".join(b"%010d 00000 n \n" % offsets[n] for n in sorted(offsets)))
    out.extend(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref))
    return bytes(out)


def blank_pdf(pages: int) -> bytes:
    from io import BytesIO

    from pypdf import PdfWriter

    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(612, 792)
    buffer = BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


@dataclass(frozen=True)
class Case:
    """One bad input: the file (made in the case's folder) and how the run must end."""

    name: str
    file_name: str
    content: bytes | None
    """Bytes to write; None: the path is made by ``make`` or is meant to be missing."""
    code: int
    cause: str = ""
    """Text the one-line error must contain (exit 2 only)."""
    extra: tuple[str, ...] = ()


def generated_cases(corpus: Path) -> list[Case]:
    rng = random.Random(5)
    real = (corpus / REAL_PAPER).read_bytes()
    return [
        Case("zero-bytes", "zero.pdf", b"", EXIT_USAGE, "empty file"),
        Case("truncated", "cut.pdf", real[: len(real) * 2 // 5], EXIT_USAGE, "truncated"),
        Case("random-bytes", "noise.pdf", rng.randbytes(64_000), EXIT_USAGE, "not a PDF"),
        Case(
            "header-over-garbage",
            "garbage.pdf",
            b"%PDF-1.7\n" + rng.randbytes(64_000) + b"\n%%EOF\n",
            EXIT_USAGE,
            "corrupt PDF",
        ),
        Case(
            "many-blank-pages", "blank.pdf", blank_pdf(MANY_PAGES), EXIT_USAGE, "pages, more than"
        ),
        Case(
            "many-pages-of-text",
            "pages.pdf",
            text_pdf(MANY_PAGES, lambda i: f"Page {i + 1}: ordinary words that make no paper."),
            EXIT_USAGE,
            "pages, more than the limit",  # SAGAGRAPH_MAX_PAGES, checked before extraction
        ),
        Case("empty-text", "empty.txt", b"  \n\n", EXIT_USAGE, "empty file"),
        Case("binary-text", "binary.md", b"# Title\x00\x01\x02", EXIT_USAGE, "binary data"),
        Case("latin-1-text", "latin1.txt", "Résumé".encode("latin-1"), EXIT_USAGE, "not UTF-8"),
        Case("unsupported-type", "paper.docx", b"PK\x03\x04", EXIT_USAGE, "unsupported file type"),
        Case("newline-in-name", "bad\nname.pdf", b"junk", EXIT_USAGE, "not a PDF"),
        Case("missing", "missing.pdf", None, EXIT_USAGE, "no such file"),
        Case("folder", "folder.pdf", None, EXIT_USAGE, "is a folder"),
        Case(
            "wrong-password",
            "encrypted.pdf",
            (corpus / "not_papers" / "encrypted_password.pdf").read_bytes(),
            EXIT_USAGE,
            "wrong password",
            ("--password", "not-the-password"),
        ),
        Case(
            "unsafe-saga-id",
            "paper.pdf",
            real,
            EXIT_USAGE,
            "saga id '../escape'",
            ("--saga-id", "../escape"),
        ),
    ]


def corpus_cases(corpus: Path, labels: dict[str, str], prefix: str = "corpus") -> list[Case]:
    causes = {"encrypted": "a password is needed", "unreadable": "no text layer"}
    return [
        Case(
            f"{prefix}-{Path(name).stem}",
            Path(name).name,
            (corpus / name).read_bytes(),
            EXIT_HALTED if label == "invalid" else EXIT_USAGE,
            causes.get(label, ""),
        )
        for name, label in sorted(labels.items())
        if name.startswith("not_papers/")
    ]


@dataclass
class Outcome:
    case: Case
    folder: Path
    paper: Path
    proc: subprocess.CompletedProcess[str]


def run_case(root: Path, case: Case) -> Outcome:
    folder = root / case.name
    folder.mkdir()
    paper = folder / case.file_name
    if case.content is not None:
        paper.write_bytes(case.content)
    elif case.name == "folder":
        paper.mkdir()
    command = [str(SAGAGRAPH)] if SAGAGRAPH.exists() else [sys.executable, "-m", "sagagraph.cli"]
    args = [str(paper), "--outputs", "outputs", "--db", f"sqlite:///{folder / 'sagas.sqlite'}"]
    args += ["--llm", "offline", "--json", *case.extra]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    proc = subprocess.run(
        [*command, "run", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=300
    )
    return Outcome(case, folder, paper, proc)


@pytest.fixture(scope="module")
def outcomes(
    tmp_path_factory: pytest.TempPathFactory,
    corpus: Path,
    corpus_labels: dict[str, str],
    corpus_next: Path,
) -> dict[str, Outcome]:
    root = tmp_path_factory.mktemp("bad-input")
    cases = corpus_cases(corpus, corpus_labels) + generated_cases(corpus)
    cases += corpus_cases(corpus_next, read_labels(corpus_next), "corpus-next")
    # The big files (slow to parse) go first, so the small ones fill in around them.
    cases.sort(key=lambda case: -len(case.content or b""))
    with ThreadPoolExecutor(4) as pool:
        done = list(pool.map(lambda case: run_case(root, case), cases))
    return {outcome.case.name: outcome for outcome in done}


CASE_NAMES = [
    "corpus-encrypted_empty_userpw_report",
    "corpus-encrypted_password",
    "corpus-form_irs_1040nr",
    "corpus-invoice",
    "corpus-slides_beamer_research_talk",
    "corpus-thesis_chapter_image_only",
    "corpus-next-book_chapter_fr_nephrologie",
    "corpus-next-extended_abstract_one_page_qd",
    "corpus-next-lecture_notes_sddp",
    "corpus-next-poster_sc18_mixed_precision",
    "corpus-next-research_proposal_masters_rnn",
    "zero-bytes",
    "truncated",
    "random-bytes",
    "header-over-garbage",
    "many-blank-pages",
    "many-pages-of-text",
    "empty-text",
    "binary-text",
    "latin-1-text",
    "unsupported-type",
    "newline-in-name",
    "missing",
    "folder",
    "wrong-password",
    "unsafe-saga-id",
]


def test_every_not_paper_of_the_corpus_is_covered(outcomes: dict[str, Outcome]) -> None:
    assert sorted(outcomes) == sorted(CASE_NAMES)


@pytest.mark.slow
@pytest.mark.parametrize("name", CASE_NAMES)
def test_bad_input_ends_cleanly_and_leaves_nothing(outcomes: dict[str, Outcome], name: str) -> None:
    outcome = outcomes[name]
    case, proc = outcome.case, outcome.proc

    assert proc.returncode == case.code, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    if case.code == EXIT_USAGE:
        lines = without_progress(proc.stderr)
        assert len(lines) == 1, proc.stderr
        assert lines[0].startswith("sagagraph: error: ")
        assert case.cause in lines[0]
        if case.name != "unsafe-saga-id":
            # The file is named, printably (a newline in a name is shown escaped).
            shown = (
                str(outcome.paper) if str(outcome.paper).isprintable() else repr(str(outcome.paper))
            )
            assert shown in lines[0]
        # --json: stdout holds one object even for a refused input, never an empty document.
        assert json.loads(proc.stdout) == {
            "error": lines[0].removeprefix("sagagraph: error: "),
            "exit": EXIT_USAGE,
        }
    else:
        view = json.loads(proc.stdout)
        assert view["status"] == "rolled_back"
        assert view["reason"].startswith("not a complete research paper")
        assert (view["completed"], view["compensated"], view["outputs"]) == ([], [], {})
        assert without_progress(proc.stderr) == [], proc.stderr
    # Nothing at all under outputs: no saga folder, no ledger, not even the folder itself.
    assert not (outcome.folder / "outputs").exists()
