"""Checking a model's review against the paper: a point may cite only sections the paper has.

A point cites a section by number ("Section 4", "Sec. 3.2", "§5") or by its heading in quotes
("'4 Experiments'"). :func:`ungrounded_points` lists the points whose citations the paper's
outline does not back; the engine sends them back once, then drops what is still ungrounded
(with the points whose quote is not in the paper, :mod:`~sagagraph.agents.quote_check`).
"""

from __future__ import annotations

import re

from sagagraph.agents.engine import Review
from sagagraph.agents.headings import normalize_title
from sagagraph.agents.paper import Paper

_BY_NUMBER = re.compile(r"(?:\b[Ss]ections?|\b[Ss]ecs?\.|§)\s*(\d{1,2}(?:\.\d{1,2})*|[IVX]{1,5})\b")
_BY_HEADING = re.compile(r"['‘\"“]([^'’\"”]{3,80})['’\"”]")
_LEADING_NUMBER = re.compile(r"^(\d{1,2}(?:\.\d{1,2})*|[IVX]{1,5}|[A-H])\.?\s")
_BY_SECTION_WORD = re.compile(r"\b(?:section|sections)\b", re.IGNORECASE)
_EVIDENCE = re.compile(r"\(p\.\s?\d{1,4}\)\s*[\"“][^\"”]*[\"”]")


def section_numbers(paper: Paper) -> set[str]:
    """Numbers of the paper's headings: ``{"1", "2", "2.1", "IV"}``."""
    numbers = set()
    for section in paper.sections:
        m = _LEADING_NUMBER.match(section.heading)
        if m:
            numbers.add(m.group(1))
    return numbers


def _cites_known_heading(quoted: str, names: list[str]) -> bool:
    claimed = normalize_title(_LEADING_NUMBER.sub("", quoted))
    return any(claimed == n or (len(claimed) > 3 and (claimed in n or n in claimed)) for n in names)


def point_is_grounded(point: str, paper: Paper) -> bool:
    """False when ``point`` cites a section number or a quoted heading the paper lacks.

    A quotation counts as a heading when it starts with a section number ("'4 Results'")
    or stands next to the word section ("the 'Results' section", "section 'Results'").
    """
    # The point's evidence, (p.N) "...", quotes the paper: it cites no section.
    point = _EVIDENCE.sub(" ", point)
    numbers = section_numbers(paper)
    if any(number not in numbers for number in _BY_NUMBER.findall(point)):
        return False
    names = [s.name for s in paper.sections]
    for m in _BY_HEADING.finditer(point):
        quoted = m.group(1)
        around = point[max(0, m.start() - 10) : m.end() + 10]
        if (_LEADING_NUMBER.match(quoted) or _BY_SECTION_WORD.search(around)) and not (
            _cites_known_heading(quoted, names)
        ):
            return False
    return True


def ungrounded_points(review: Review, paper: Paper) -> list[str]:
    """Every point of ``review`` that cites a section the paper does not have."""
    points = review.strengths + review.weaknesses + review.suggestions
    return [p for p in points if not point_is_grounded(p, paper)]
