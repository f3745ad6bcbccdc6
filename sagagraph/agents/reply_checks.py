"""Checks of a model's reply that its schema cannot express, each a problem to send back or None.

The OpenAI engine sends a reply that fails one back to the model, as it does a reply that does
not parse (:mod:`sagagraph.agents.openai_calls`).
"""

from __future__ import annotations

import re

from sagagraph.agents.engine import Summary, ValidationReport
from sagagraph.agents.headings import normalize_line, normalize_title
from sagagraph.agents.paper import Paper

_NUMBERING = re.compile(r"^(?:\d+(?:\.\d+)*|[IVXLC]+|[A-Za-z])[.)]?\s+")


def _normalise_heading(heading: str) -> str:
    """``III. Related-Work:`` -> ``related work``, for matching a cited heading to the outline."""
    title = normalize_title(_NUMBERING.sub("", normalize_line(heading)))
    return " ".join(re.sub(r"[^0-9a-z]+", " ", title).split())


def check_summary(summary: Summary) -> str | None:
    """A summary must have text."""
    return None if summary.text.strip() else "text: the summary is empty"


def check_report(report: ValidationReport, paper: Paper, seen: str = "") -> str | None:
    """A report must agree with itself and cite headings the evidence shows.

    ``seen`` is the evidence text beyond the outline (first page, reference evidence,
    table of contents): a run-in "Abstract-" or an unheaded list is found there.
    """
    if report.is_valid and report.missing:
        return f"is_valid is true but missing lists {report.missing}"
    if not report.is_valid and not report.missing:
        return "is_valid is false but missing is empty: name the missing parts"
    headings = [_normalise_heading(s.heading) for s in paper.sections]
    for found in report.found:
        if found.part.strip().lower() == "abstract" and paper.abstract.strip():
            continue
        if found.part.strip().lower() == "references" and paper.references_section():
            continue  # a list without a heading is found by its entries, not its name
        claimed = _normalise_heading(found.heading)
        if claimed and claimed in _normalise_heading(seen):
            continue
        if not claimed or not any(
            claimed == h or (h and (claimed in h or h in claimed)) for h in headings
        ):
            return (
                f"found: part {found.part!r} cites heading {found.heading!r}, "
                "which is not in the outline"
            )
    return None
