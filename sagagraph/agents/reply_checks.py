"""Checking an engine's reply against its paper: the quotes of a review, the sections it cites,
and what a schema cannot express of a summary or a validation report.

Quotes: a review point carries its evidence as ``(p.N) "verbatim words"``.
:func:`verify_review` looks each quote up in the text of page N (or a page break after it),
after normalising what PDF text garbles and a quote legitimately changes: case, whitespace,
hyphenation at line ends, ligatures (``ﬁ`` -> ``fi``, and a glyph with no text mapping that
dropped the letters: "signicant"), typographic quotes and dashes, accents set apart from their
letter. A quote found on another page is kept with its page corrected; a point whose quote is
nowhere, or that has none, is dropped and reported.

A claim of absence says what it searched for: ``searched the whole text (...) for 'a',
'b': none found``. The verifier repeats that search over every page, references and
appendices included, and drops the claim when any of the terms is there.

Cited sections: a point may cite only sections the paper has. It cites one by number
("Section 4", "Sec. 3.2", "§5") or by its heading in quotes ("'4 Experiments'").
:func:`ungrounded_points` lists the points whose citations the paper's outline does not back;
the OpenAI engine sends them back once, then drops what is still ungrounded (with the points
whose quote is not in the paper).

:func:`check_summary` and :func:`check_report` each return a problem to send back, or None; the
OpenAI engine sends a reply that fails one back to the model, as it does a reply that does not
parse (:mod:`sagagraph.agents.openai_calls`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sagagraph.agents.engine import QuotedPoint, QuotedReview, Review, Summary, ValidationReport
from sagagraph.agents.headings import normalize_line, normalize_title
from sagagraph.agents.paper import Paper
from sagagraph.errors import MalformedModelOutput

MIN_QUOTE_LETTERS = 15
"""A quote shorter than this (letters and digits) proves nothing: the point is dropped."""

QUOTED = re.compile(r"\(p\.\s?(\d{1,4})\)\s*[\"“]([^\"”]{3,600})[\"”]")
"""``(p.4) "the words"``: a point's page and quote."""
ABSENCE = re.compile(r"searched the whole text\b[^:]*?\bfor ((?:'[^']{2,60}',?\s*(?:or\s+)?)+)")
"""The searched terms of a claim of absence (``... for 'ablation', 'we vary': none found``)."""
_TERM = re.compile(r"'([^']{2,60})'")
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|…)\s*")
# A ligature glyph without a text mapping drops its letters: "signicant", "data les", "benets".
_LIGATURES = re.compile(r"ffi|ffl|ff|fi|fl")
_NOT_KEY = re.compile(r"[^0-9a-z]+")


def text_key(text: str) -> str:
    """``text`` as the verifier compares it: lower-case letters and digits only.

    NFKC splits ligatures, accents are dropped, and everything else (spaces, line breaks,
    hyphens at line ends, quotes, dashes, punctuation) goes, so the PDF's layout cannot make
    a verbatim quote miss.
    """
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _NOT_KEY.sub("", plain.lower())


def _ligature_pattern(key: str) -> re.Pattern[str]:
    """``key`` where each ``fi``/``fl``/``ff``/``ffi``/``ffl`` may also be missing."""
    parts = []
    last = 0
    for m in _LIGATURES.finditer(key):
        parts.append(re.escape(key[last : m.start()]))
        parts.append(f"(?:{m.group(0)})?")
        last = m.end()
    parts.append(re.escape(key[last:]))
    return re.compile("".join(parts))


def _pieces(quote: str) -> list[str]:
    """The keys of a quote's pieces; an ellipsis marks words left out."""
    return [k for k in (text_key(p) for p in _ELLIPSIS.split(quote)) if k]


def _find(haystack: str, pieces: Sequence[str]) -> int:
    """Where the first of ``pieces`` starts when all are in ``haystack`` in order (each may
    have lost a ligature's letters); -1 when they are not."""
    at = 0
    start = -1
    for piece in pieces:
        found = haystack.find(piece, at)
        if found < 0:
            m = _ligature_pattern(piece).search(haystack, at) if _LIGATURES.search(piece) else None
            if m is None:
                return -1
            found, end = m.start(), m.end()
        else:
            end = found + len(piece)
        start = found if start < 0 else start
        at = end
    return start


def _contains(haystack: str, pieces: Sequence[str]) -> bool:
    return _find(haystack, pieces) >= 0


@dataclass(frozen=True)
class PageKeys:
    """Every page of a paper as :func:`text_key` leaves it, built once per review."""

    pages: tuple[str, ...]
    raw: tuple[str, ...] = ()
    """The pages as printed (NFKC), searched for terms without letters or digits (``±``)."""

    @classmethod
    def of(cls, pages: Iterable[str]) -> PageKeys:
        printed = tuple(unicodedata.normalize("NFKC", p) for p in pages)
        return cls(tuple(text_key(p) for p in printed), printed)

    def locate(self, quote: str, page: int | None = None, within: int | None = None) -> int | None:
        """The 1-based page ``quote`` is printed on (``page`` first, then the rest); None
        when it is on none. A quote may run over a page break onto the next page.

        ``within`` limits the search to that many pages after ``page`` (and the one before),
        for callers that look up every sentence of a long paper.
        """
        pieces = _pieces(quote)
        if sum(len(p) for p in pieces) < MIN_QUOTE_LETTERS:
            return None
        order = list(range(len(self.pages)))
        if page is not None and 1 <= page <= len(self.pages):
            order.remove(page - 1)
            order.insert(0, page - 1)
            if within is not None:
                order = [i for i in order if page - 2 <= i <= page - 1 + within]
        for i in order:
            page_key = self.pages[i]
            following = self.pages[i + 1][:2000] if i + 1 < len(self.pages) else ""
            start = _find(page_key + following, pieces)
            if 0 <= start < len(page_key):  # it starts on this page
                return i + 1
        return None

    def mentions(self, term: str) -> bool:
        """True when ``term`` occurs on any page (references and appendices included)."""
        key = text_key(term)
        if not key:
            return any(term in page for page in self.raw)
        return any(_contains(p, [key]) for p in self.pages)


@dataclass(frozen=True)
class Dropped:
    """A point the verifier removed, and why."""

    part: str
    """``strengths``, ``weaknesses`` or ``suggestions``."""
    point: str
    why: str

    def describe(self) -> str:
        """One line for the step's events: ``weaknesses: <why>: <point>``."""
        point = self.point if len(self.point) <= 160 else self.point[:157] + "..."
        return f"{self.part}: {self.why}: {point}"


def check_point(point: str, keys: PageKeys) -> tuple[str | None, str]:
    """``(point, "")`` with its pages corrected when its evidence holds; ``(None, why)`` when
    a quote is not in the paper, a point has no quote, or a claimed absence is contradicted."""
    quotes = list(QUOTED.finditer(point))
    if not quotes:
        return None, 'no (p.N) "quote" from the paper'
    fixed = point
    for m in reversed(quotes):
        page, quote = int(m.group(1)), m.group(2)
        found = keys.locate(quote, page)
        if found is None:
            shown = quote if len(quote) <= 60 else quote[:57] + "..."
            return None, f'quote not found in the paper: "{shown}"'
        if found != page:
            fixed = f"{fixed[: m.start(1)]}{found}{fixed[m.end(1) :]}"
    absence = ABSENCE.search(point)
    if absence:
        present = [t for t in _TERM.findall(absence.group(1)) if keys.mentions(t)]
        if present:
            return None, f"claims an absence but the paper has '{present[0]}'"
    return fixed, ""


def verify_review(review: Review, pages: Sequence[str]) -> tuple[Review, list[Dropped]]:
    """``review`` with only the points whose evidence ``pages`` bear out, and those dropped.

    A list may be left empty; the caller decides whether that review is still worth writing.
    """
    keys = PageKeys.of(pages)
    kept: dict[str, list[str]] = {}
    dropped: list[Dropped] = []
    for part in ("strengths", "weaknesses", "suggestions"):
        kept[part] = []
        for point in getattr(review, part):
            fixed, why = check_point(point, keys)
            if fixed is None:
                dropped.append(Dropped(part, point, why))
            else:
                kept[part].append(fixed)
    verified = Review.model_construct(
        strengths=kept["strengths"],
        weaknesses=kept["weaknesses"],
        suggestions=kept["suggestions"],
        dropped=[*review.dropped, *(d.describe() for d in dropped)],
        kind=review.kind,
    )
    return verified, dropped


def quote_point(text: str, page: int, quote: str) -> str:
    """A point as the verifier reads it: ``text (p.N) "quote"``."""
    return f'{text.rstrip()} (p.{page}) "{quote}"'


def from_quoted(review: QuotedReview) -> Review:
    """A model's :class:`QuotedReview` as a :class:`Review` of ``point (p.N) "quote"`` lines
    (not yet verified)."""

    def lines(points: list[QuotedPoint]) -> list[str]:
        return [quote_point(p.point, p.page, " ".join(p.quote.split())) for p in points]

    return Review.model_construct(
        strengths=lines(review.strengths),
        weaknesses=lines(review.weaknesses),
        suggestions=lines(review.suggestions),
        dropped=[],
        kind="",
    )


def as_quoted(review: Review) -> QuotedReview:
    """``review``'s points as a :class:`QuotedReview` (each point's first quote), the form a
    model answers in: for scripted models that replay an offline review."""

    def points(lines: list[str]) -> list[QuotedPoint]:
        out = []
        for line in lines:
            m = QUOTED.search(line)
            if m is not None:
                text = " ".join((line[: m.start()] + line[m.end() :]).split())
                out.append(QuotedPoint(point=text, page=int(m.group(1)), quote=m.group(2)))
        return out

    return QuotedReview.model_construct(
        strengths=points(review.strengths),
        weaknesses=points(review.weaknesses),
        suggestions=points(review.suggestions),
    )


def checked_review(review: Review, pages: Sequence[str]) -> Review:
    """``review`` with only the points whose evidence ``pages`` bear out
    (:func:`verify_review`); MalformedModelOutput when a list is left without a point."""
    verified, _ = verify_review(review, pages)
    for part in ("strengths", "weaknesses", "suggestions"):
        if not getattr(verified, part):
            raise MalformedModelOutput(
                f"reviewer: no point of {part} quotes the paper verbatim "
                f"({len(verified.dropped)} point(s) dropped: {'; '.join(verified.dropped)[:300]})"
            )
    return verified


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
