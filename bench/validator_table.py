"""The offline validator over every labelled PDF: label, decision, parts found and reason.

    python -m bench.validator_table                  # ../shared/corpus and ../shared/corpus-next
    python -m bench.validator_table FOLDER ...       # other folders, each with a labels.json
    python -m bench.validator_table --markdown       # the table docs/validator.md shows

Each folder holds PDFs and a ``labels.json`` (``valid``, ``invalid``, ``unreadable``,
``encrypted``). Every PDF is loaded and validated as ``sagagraph run`` would with the offline
engine; a file that cannot be loaded is shown with the cause it is refused for. The last line
counts the PDFs whose decision matches their label.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.common import ROOT
from sagagraph.agents.pdf.loader import PaperLoader
from sagagraph.agents.validation_rules import validation_report
from sagagraph.errors import PaperLoadError

SHARED = ROOT.parent / "shared"
FOLDERS = (SHARED / "corpus", SHARED / "corpus-next")
"""The folders read by default: the shared corpus and its hard kinds."""
PASSWORDS = {"not_papers/encrypted_password.pdf": "openpassword"}
"""Passwords of encrypted corpus files, used after the refusal without one is recorded."""


@dataclass(frozen=True)
class Row:
    """One PDF's outcome."""

    file: str
    """``folder/path`` of the PDF."""
    label: str
    decision: str
    """``valid``, ``invalid``, ``unreadable`` or ``encrypted`` (refused on loading)."""
    parts: str
    """The parts found, ``part 'heading' p.N``, or the load error."""
    sections: int
    """How many headings were detected."""
    reason: str

    @property
    def right(self) -> bool:
        return self.decision == self.label


def _refusal(error: PaperLoadError) -> str:
    text = str(error)
    if "password" in text:
        return "encrypted"
    return "unreadable"


def validate_file(folder: Path, name: str, label: str, loader: PaperLoader) -> Row:
    """Load and validate one PDF as the offline pipeline does."""
    file = f"{folder.name}/{name}"
    try:
        paper = loader.load(folder / name)
    except PaperLoadError as error:
        cause = str(error).split(": ", 1)[-1]
        return Row(file, label, _refusal(error), "(not loaded)", 0, cause)
    report = validation_report(paper)
    parts = "; ".join(f"{p.part} '{p.heading}' p.{p.page}" for p in report.found)
    decision = "valid" if report.is_valid else "invalid"
    return Row(file, label, decision, parts, len(paper.sections), report.reason)


def table_rows(folders: Sequence[Path] = FOLDERS) -> list[Row]:
    """A row for every labelled PDF of ``folders`` (a folder without labels is skipped)."""
    loader = PaperLoader()
    rows: list[Row] = []
    for folder in folders:
        try:
            labels: dict[str, str] = json.loads((folder / "labels.json").read_text())
        except OSError:
            continue
        labels.pop("_about", None)
        rows += [validate_file(folder, n, lab, loader) for n, lab in sorted(labels.items())]
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table, with the count of right decisions below it."""
    lines = [
        "| PDF | label | decision | headings | parts found | reason |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        mark = "" if row.right else " ✗"
        lines.append(
            f"| `{row.file}` | {row.label} | {row.decision}{mark} | {row.sections} | "
            f"{_cell(row.parts)} | {_cell(row.reason)} |"
        )
    right = sum(row.right for row in rows)
    lines += ["", f"{right}/{len(rows)} decisions match their label."]
    return "\n".join(lines)


def plain(rows: Sequence[Row]) -> str:
    """One block per PDF, for a terminal."""
    out = []
    for row in rows:
        mark = "ok" if row.right else "WRONG"
        out += [
            f"{row.file}: label {row.label}, decision {row.decision} ({mark}), "
            f"{row.sections} heading(s)",
            f"  parts: {row.parts or '(none)'}",
            f"  reason: {row.reason}",
        ]
    right = sum(row.right for row in rows)
    out.append(f"{right}/{len(rows)} decisions match their label.")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.validator_table", description=__doc__)
    parser.add_argument("folders", nargs="*", type=Path, help="folders with a labels.json")
    parser.add_argument("--markdown", action="store_true", help="print the Markdown table")
    args = parser.parse_args(argv)
    rows = table_rows(args.folders or FOLDERS)
    print(markdown(rows) if args.markdown else plain(rows))
    return 0 if all(row.right for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
