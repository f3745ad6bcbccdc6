"""A paper's title read off its first page's layout: the largest text near the top.

PDF metadata titles are often stale ("Art in Machine Learning" for a paper printed as
"Creativity in Machine Learning") or empty, and the first text lines are often a journal's
running head or the author line. The title is what the page sets largest in its upper half:
:class:`TitleRuns` collects the first page's text runs with their size and position from
pypdf's text visitor, and :func:`layout_title` takes the lines set at the largest size, in
reading order, with the spacing of the page's extracted text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from sagagraph.agents.headings import normalize_line

MAX_TITLE_WORDS = 40
"""More words than this at the largest size is not a title (a poster's body, a cover)."""
_NOTICE = re.compile(
    r"arxiv|©|copyright|doi\b|issn|https?:|www\.|proceedings|\bvol\.|preprint|to appear|"
    r"journal of|transactions on|printed in",
    re.IGNORECASE,
)


def _squeeze(text: str) -> str:
    return "".join(text.split()).lower()


@dataclass
class TitleRuns:
    """The upright text runs of one page, by baseline: ``y -> [(text, size)]``."""

    lines: dict[float, list[tuple[str, float]]] = field(default_factory=dict)

    def visit(self, text: Any, cm: Any, tm: Any, font: Any, size: Any) -> None:
        """pypdf's ``visitor_text`` callback; rotated text (an arXiv side stamp) is skipped."""
        if not isinstance(text, str) or not text.strip():
            return
        if abs(float(tm[1])) > 1e-6 or abs(float(tm[2])) > 1e-6:
            return
        scale = abs(float(tm[3]) * float(cm[3])) or 1.0
        y = round(float(tm[5]) * float(cm[3]) + float(cm[5]), 0)
        self.lines.setdefault(y, []).append((text, float(size or 0) * scale))


def layout_title(runs: TitleRuns, page_text: str) -> str:
    """The title: the largest lines in the page's upper half, as the page text spells them.

    '' when the layout says nothing useful (no sizes, a single word, a notice, too long).
    """
    sized = [
        (y, max(s for _, s in parts), "".join(t for t, _ in parts))
        for y, parts in runs.lines.items()
    ]
    sized = [(y, s, t) for y, s, t in sized if sum(c.isalpha() for c in t) >= 2 and s > 0]
    if not sized:
        return ""
    top, bottom = max(y for y, _, _ in sized), min(y for y, _, _ in sized)
    upper = [(y, s, t) for y, s, t in sized if y >= bottom + 0.45 * (top - bottom)]
    upper = [(y, s, t) for y, s, t in upper if not _NOTICE.search(t)]
    if not upper:
        return ""
    largest = max(s for _, s, _ in upper)
    body = sorted(s for _, s, _ in sized)[len(sized) // 2]
    if largest < 1.1 * body:  # nothing stands out: no title by layout
        return ""
    ordered = sorted(upper, key=lambda line: -line[0])
    first = next(i for i, (_, s, _) in enumerate(ordered) if s >= 0.97 * largest)
    block = []
    for _, s, t in ordered[first:]:
        if s < 0.97 * largest:
            break
        block.append(t)
    return _as_printed(block, page_text)


def _as_printed(block: list[str], page_text: str) -> str:
    """The title lines with the page text's spacing (runs may lack the spaces between them)."""
    wanted = _squeeze("".join(block))
    lines = [normalize_line(line) for line in page_text.splitlines()]
    lines = [line for line in lines if line]
    for i in range(len(lines)):
        taken: list[str] = []
        for line in lines[i : i + 6]:
            taken.append(line)
            got = _squeeze(" ".join(taken))
            if got == wanted:
                return tidy_title(" ".join(taken))
            if not wanted.startswith(got):
                break
    return tidy_title(normalize_line(" ".join(block)))


# TeX sets an accent over a dotless i apart from it: "Patolog ́ıas" is "Patologías".
_LOOSE_MARK = re.compile(r"\s?([\u0300-\u036f])\s?([A-Za-zı])")


def tidy_title(title: str) -> str:
    """``title`` with loose accents put on their letters; '' when it has too few or too many
    words to be a title."""
    title = unicodedata.normalize(
        "NFC", _LOOSE_MARK.sub(lambda m: m.group(2).replace("ı", "i") + m.group(1), title)
    )
    words = title.split()
    if not 2 <= len(words) <= MAX_TITLE_WORDS:
        return ""
    return title
