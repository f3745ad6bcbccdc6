"""Which lines of a PDF are set larger or bolder than the body text: layout evidence of headings.

pypdf's ``extract_text(visitor_text=...)`` reports every run of text with its font and size.
:class:`PageStyles` groups the runs of one page into lines (same baseline) and remembers each
line's size and weight. :func:`page_layouts` then compares every line with the body size
of the whole document (the size that carries most characters) and keeps, page by page, the
short lines that stand out (and the small ones: notes, captions): the headings a publisher's
layout marks even when their words or numbering are unusual. Text patterns still decide
what a heading is; layout only vouches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sagagraph.agents.headings import normalize_line

LARGER = 1.12
"""A line at least this many times the body size counts as larger."""
SMALLER = 0.9
"""A line at most this many times the body size counts as smaller (notes, captions)."""
MAX_HEADING_WORDS = 16
"""Lines longer than this are prose, however they are set."""
_BOLD_MARKS = ("bold", "black", "heavy", "semibold", "demi", "cmbx", "cmb10", "-bd", ",bd")


def _is_bold(font: Any) -> bool:
    try:
        name = str(font.get("/BaseFont", "")).lower() if font is not None else ""
    except Exception:  # a damaged font dictionary only loses the weight
        return False
    return any(mark in name for mark in _BOLD_MARKS)


@dataclass
class PageStyles:
    """Collects the styled lines of one page from pypdf's text visitor."""

    lines: dict[float, list[tuple[str, float, bool]]] = field(default_factory=dict)
    """Text runs by baseline: ``(text, size, bold)``."""
    _bold: dict[int, tuple[Any, bool]] = field(default_factory=dict)
    """Weight of each font dictionary seen on the page, by ``id`` (the font kept alive)."""

    def visit(self, text: Any, cm: Any, tm: Any, font: Any, size: Any) -> None:
        """pypdf's ``visitor_text`` callback; kept small because it runs for every text run."""
        if not isinstance(text, str) or not text.strip():
            return
        scale = abs(float(tm[3]) * float(cm[3])) or 1.0
        y = round(float(tm[5]) * float(cm[3]) + float(cm[5]), 1)
        known = self._bold.get(id(font))
        if known is None or known[0] is not font:
            known = self._bold[id(font)] = (font, _is_bold(font))
        self.lines.setdefault(y, []).append((text, float(size or 0) * scale, known[1]))

    def styled(self) -> list[tuple[str, float, bool]]:
        """One ``(text, largest size, all bold)`` per line, in no particular order."""
        out = []
        for runs in self.lines.values():
            text = normalize_line("".join(t for t, _, _ in runs))
            if text:
                out.append((text, max(s for _, s, _ in runs), all(b for _, _, b in runs)))
        return out


def body_size(pages: Sequence[Sequence[tuple[str, float, bool]]]) -> float:
    """The font size that carries most characters over the document (0 when unknown)."""
    weight: Counter[float] = Counter()
    for lines in pages:
        for text, size, _ in lines:
            weight[round(size, 1)] += len(text)
    return weight.most_common(1)[0][0] if weight else 0.0


@dataclass(frozen=True)
class PageLayout:
    """What the layout says about one page's lines (texts with whitespace folded)."""

    emphasized: frozenset[str] = frozenset()
    """Short lines set larger than the body, or bold at body size: heading candidates."""
    small: frozenset[str] = frozenset()
    """Lines set smaller than the body: footnotes, author notes, captions, tables."""


def page_layouts(pages: Sequence[Sequence[tuple[str, float, bool]]]) -> list[PageLayout]:
    """The :class:`PageLayout` of each page, against the document's body size."""
    body = body_size(pages)
    out: list[PageLayout] = []
    for lines in pages:
        emphasized: set[str] = set()
        small: set[str] = set()
        if body > 0:
            for text, size, bold in lines:
                if size <= SMALLER * body:
                    small.add(text)
                elif len(text.split()) <= MAX_HEADING_WORDS and (
                    size >= LARGER * body or (bold and size >= 0.95 * body)
                ):
                    emphasized.add(text)
        out.append(PageLayout(frozenset(emphasized), frozenset(small)))
    return out
