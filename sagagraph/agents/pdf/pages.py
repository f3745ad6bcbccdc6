"""What a PDF's pages show besides their running text: how lines are set, the title, and what
a page prints that is not body text.

Layout evidence of headings: pypdf's ``extract_text(visitor_text=...)`` reports every run of
text with its font and size. :class:`PageStyles` groups the runs of one page into lines (same
baseline) and remembers each line's size and weight. :func:`page_layouts` then compares every
line with the body size of the whole document (the size that carries most characters) and
keeps, page by page, the short lines that stand out (and the small ones: notes, captions): the
headings a publisher's layout marks even when their words or numbering are unusual. Text
patterns still decide what a heading is; layout only vouches.

The title, read off the first page's layout: PDF metadata titles are often stale ("Art in
Machine Learning" for a paper printed as "Creativity in Machine Learning") or empty, and the
first text lines are often a journal's running head or the author line. The title is what the
page sets largest in its upper half: :class:`TitleRuns` collects the first page's text runs
with their size and position from pypdf's text visitor, and :func:`layout_title` takes the
lines set at the largest size, in reading order, with the spacing of the page's extracted text.

Cleaning page lines before headings are looked for: a PDF page carries a running header and
footer (journal name, authors, page number), footnotes and author notes at its foot, sometimes
a table of contents, and words hyphenated across line breaks. :func:`clean_pages` removes each
of these, or sets it apart (notes and the contents stay available as evidence), so the
sections of a :class:`~sagagraph.agents.paper.Paper` hold only the body.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sagagraph.agents.headings import known_heading, normalize_line, normalize_title

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


Lines = list[tuple[int, str]]
"""``(page, line)`` pairs in reading order."""

_DIGITS = re.compile(r"\d+")
_TOC_TITLES = frozenset(
    {"contents", "table of contents", "table des matieres", "sommaire", "inhaltsverzeichnis"}
    | {"inhalt", "indice", "sumario", "indice general", "sommario", "contenido", "conteudo"}
)
_REFERENCE_TITLES = frozenset(
    {"references", "bibliography", "literatur", "references bibliographiques", "bibliographie"}
    | {"literaturverzeichnis", "referencias", "bibliografia", "riferimenti", "works cited"}
)
_LEADER_ENTRY = re.compile(r"^(?P<title>\S.*?)\s*(?:\.\s*){4,}\s*(?P<page>\d{1,4})$")
_PAGED_ENTRY = re.compile(
    r"^(?P<title>(?:\d{1,2}(?:\.\d{1,2})*\.?|[IVX]{1,5}\.)\s+\S.*?)\s+\d{1,4}$"
)
_NOTE_MARK = re.compile(r"^(?:[∗*†‡§¶]+|\d{1,2}(?=\s?[A-Z]))\s?\S")
_SYMBOL_NOTE = re.compile(r"^[∗*†‡§¶]+\s?\S")
_HYPHEN_END = re.compile(r"(?P<head>[A-Za-zÀ-ÿ]*[A-Za-zÀ-ÿ])-$")
_WORDS = re.compile(r"[A-Za-zÀ-ÿ][A-Za-zÀ-ÿ-]*")


_SLASHED = re.compile(r"/(?=[\d.,;:()\[\]=+\-`'!?])")
SLASHED_PER_1000 = 2.0
"""Marks per 1,000 characters above which a text layer is taken to slash its punctuation."""
MIN_SLASHED = 20
"""...and at least this many: a few fractions or URLs in a short text are not the pattern."""


def repair_slashed_marks(pages: Sequence[Sequence[str]]) -> list[list[str]]:
    """Pages whose font map prefixes every digit and mark with a slash, repaired.

    Some TeX fonts of the 1990s map ``.`` to ``/.``, ``[1]`` to ``/[/1/]``, ``1989`` to
    ``/1/9/8/9``: headings read ``I I/. SOLUTION`` and references ``/[/1/] N/. Isgur``. The
    slashes go only when the whole document shows the pattern, so a ``1/2`` or an
    ``and/or`` elsewhere is left alone.
    """
    chars = sum(len(line) for page in pages for line in page)
    marks = sum(len(_SLASHED.findall(line)) for page in pages for line in page)
    if marks < MIN_SLASHED or marks * 1000 < SLASHED_PER_1000 * chars:
        return [list(page) for page in pages]
    return [[_SLASHED.sub("", line) for line in page] for page in pages]


def _key(line: str) -> str:
    """A line compared without spaces, as layout and text extraction space runs differently."""
    return "".join(line.split())


def running_lines(pages: Sequence[Sequence[str]]) -> set[str]:
    """Lines printed at the top or bottom of many pages: running headers, page numbers.

    Lines are compared with their digits masked, so ``Title 21`` and ``Title 22`` match.
    """
    if len(pages) < 3:
        return set()
    counts: Counter[str] = Counter()
    for lines in pages:
        text = [ln for ln in lines if ln]
        counts.update({_DIGITS.sub("#", ln) for ln in text[:3] + text[-3:]})
    threshold = max(3, int(0.3 * len(pages)))
    return {key for key, n in counts.items() if n >= threshold}


def _toc_entry(line: str) -> str | None:
    if not line[-1:].isdigit():
        return None
    m = _LEADER_ENTRY.match(line) or _PAGED_ENTRY.match(line)
    return m.group("title").strip() if m else None


def table_of_contents(page: Sequence[str]) -> list[int]:
    """Indexes of the lines of ``page`` that form a table of contents (empty when none).

    A contents page has a "Contents" heading (in any of the usual languages) followed by
    entries, or at least four entries with dot leaders; an entry ends with a page number.
    """
    entries = [i for i, line in enumerate(page) if line and _toc_entry(line)]
    if not entries:
        return []
    titled = [
        i
        for i, line in enumerate(page)
        if line and len(line) <= 30 and normalize_title(line) in _TOC_TITLES
    ]
    leaders = [i for i in entries if _LEADER_ENTRY.match(page[i])]
    if titled and len([i for i in entries if i > titled[0]]) >= 3:
        return [titled[0], *(i for i in entries if i > titled[0])]
    return leaders if len(leaders) >= 4 else []


@dataclass
class CleanPages:
    """Body lines, with what was set apart from them."""

    lines: Lines = field(default_factory=list)
    """The body: ``(page, line)`` in reading order."""
    notes: list[str] = field(default_factory=list)
    """Footnotes and author or affiliation notes."""
    toc: list[str] = field(default_factory=list)
    """Entries of a table of contents (evidence of the outline, never body)."""


def _note_start(line: str, small: bool, bottom: bool) -> bool:
    if small:
        return bool(_NOTE_MARK.match(line))
    return bottom and bool(_SYMBOL_NOTE.match(line))


def _heading_line(line: str) -> bool:
    return len(line) <= 40 and line[:1].isupper() and known_heading(line) is not None


def clean_pages(
    pages: Sequence[Sequence[str]],
    small: Sequence[frozenset[str]] = (),
    *,
    markdown: bool = False,
) -> CleanPages:
    """Running lines dropped, contents and notes set apart, in reading order.

    ``small`` holds, per page, the lines set smaller than the body (from the layout): a note
    is a small line that starts with a mark (``1``, ``*``, ``†``) and the small lines after
    it. Without layout, a line that starts with a note symbol in the lower part of a page is
    a note. References are never taken for notes: they start after a references heading.
    """
    out = CleanPages()
    running = set() if markdown else running_lines(pages)
    in_references = False
    for number, page in enumerate(pages, start=1):
        toc = set() if markdown else set(table_of_contents(page))
        smalls = {_key(s) for s in small[number - 1]} if number <= len(small) else set()
        in_note = False
        for i, line in enumerate(page):
            if running and line and _DIGITS.sub("#", line) in running:
                continue
            if i in toc:
                entry = _toc_entry(line)
                if entry:
                    out.toc.append(entry)
                continue
            if len(line) <= 40 and normalize_title(line) in _REFERENCE_TITLES:
                in_references = True
            is_small = bool(smalls) and _key(line) in smalls
            # A heading is never a note, however small the journal sets it ("ABSTRACT" under
            # a block of small affiliation lines).
            if not markdown and line and not in_references and not _heading_line(line):
                bottom = i >= 0.6 * len(page)
                if in_note and (is_small or (not smalls and bottom)):
                    out.notes[-1] += " " + line
                    continue
                if _note_start(line, is_small, bottom):
                    out.notes.append(line)
                    in_note = True
                    continue
            in_note = False
            out.lines.append((number, line))
    out.lines = join_hyphenated(out.lines)
    return out


def join_hyphenated(lines: Lines) -> Lines:
    """Words split across line breaks re-joined: ``multi-`` + ``ple`` -> ``multiple``.

    The hyphen stays when it is part of the word (``English-`` + ``to-German``): when the
    word before is capitalised, when the piece after holds a hyphen itself, or when the paper
    prints the hyphenated form elsewhere and never the joined one.
    """
    if not any(line.endswith("-") for _, line in lines):
        return lines  # nothing to join: skip building the vocabulary
    vocabulary = Counter(w.lower() for _, line in lines for w in _WORDS.findall(line))
    out: Lines = []
    carry = ""
    at = -1  # index in ``out`` of the line that ends with the hyphen
    for page, line in lines:
        if carry and line:
            first, _, rest = line.partition(" ")
            before = out[at][1][: -len(carry) - 1].rstrip()
            out[at] = (out[at][0], before)
            line = f"{_join(carry, first, vocabulary)} {rest}".rstrip()
            carry = ""
        m = _HYPHEN_END.search(line)
        if m and len(m.group("head")) >= 2:
            carry, at = m.group("head"), len(out)
        out.append((page, line))
    return out


def _join(head: str, tail: str, vocabulary: Counter[str]) -> str:
    word = tail.rstrip(".,;:)")
    if not word or not word[0].isalpha():
        return f"{head}-{tail}"
    joined = (head + word).lower()
    hyphenated = vocabulary[f"{head}-{word}".lower()]
    # A compound's hyphen: a hyphenated second part ("to-German"), a capital after the
    # break, the paper's own spelling elsewhere, or a capitalised first part ("English-to")
    # unless the paper prints the joined word ("Re-" + "search" -> "Research").
    keep = "-" in word or not word[0].islower()
    if not keep and vocabulary[joined] and vocabulary[joined] >= hyphenated:
        keep = False
    elif not keep:
        keep = bool(hyphenated) or (head[0].isupper() and not head.isupper())
    return f"{head}-{tail}" if keep else f"{head}{tail}"


_REFERENCE_ENTRY = re.compile(
    r"^(?:\[\d{1,3}\]\s*\S"  # [12] A. Author ... ([12]A.Author from a font without spaces)
    r"|\d{1,3}\.\s+[A-Z][^\s,]*,?\s"  # 12. Author, A. ...
    r"|[A-Z][\w'’-]+,\s+(?:[A-Z]\.\s?)+.*?(?:19|20)\d\d"  # Author, A. B. (2019)
    r"|[A-Z][\w'’-]+,\s+[A-Z][\w'’-]+.*?\(?(?:19|20)\d\d[a-z]?\)?[.,])"  # Author, Name 2019.
)
MIN_REFERENCES = 5
"""Entries a list needs, at the end of a paper, to be taken for its references."""


def reference_run(lines: Sequence[str]) -> int | None:
    """Index where a reference list without a heading starts at the end of ``lines``, or None.

    The list is a run of at least :data:`MIN_REFERENCES` entries (numbered ``[1]``, ``1.``
    or author-year) reaching the end, with at most three wrapped lines per entry.
    """
    entries = [i for i, line in enumerate(lines) if _REFERENCE_ENTRY.match(line)]
    for k, start in enumerate(entries):
        after = len(entries) - k
        tail = [ln for ln in lines[start:] if ln]
        if after >= MIN_REFERENCES and len(tail) <= 4 * after:
            return start
    return None


# Not the end of a decimal, a range or a date ("0.25", "10-20", "1/2"); after a word's hyphen
# it is ("dif-269": the line broke inside "different").
_TRAILING_NUMBER = re.compile(r"(?<!\d[.,])(?<!\d-)(?<![\d/:])(\d{1,4})$")
_GLUED_AFTER_DECIMAL = re.compile(r"(?<=\d\.)(\d{1,4})$")
_LEADING_NUMBER = re.compile(r"^(\d{1,4})(?:\s+|$)(?![\d.,%])")
LINE_NUMBER_RUN = 20
"""Lines whose numbers go up by one, at least this many, mark a line-numbered manuscript."""
LINE_NUMBER_SHARE = 0.3
"""... and at least this share of its non-empty lines."""
LINE_NUMBER_STEP = 12
"""A line number may skip this many (lines the text extraction dropped or merged)."""


def _line_number(line: str, last: int) -> re.Match[str] | None:
    """The number at the end or start of ``line`` that continues a run ending at ``last``."""
    for pattern in (_TRAILING_NUMBER, _LEADING_NUMBER):
        m = pattern.search(line.rstrip())
        if m is not None and last < int(m.group(1)) <= last + LINE_NUMBER_STEP:
            return m
    # After a decimal that ends a sentence ("is 0.734.418"), only the very next number is one.
    m = _GLUED_AFTER_DECIMAL.search(line.rstrip())
    return m if m is not None and int(m.group(1)) == last + 1 else None


def strip_line_numbers(pages: Sequence[Sequence[str]]) -> list[list[str]]:
    """The pages of a line-numbered manuscript without its line numbers.

    Text extraction glues a manuscript's line numbers to the ends of lines ("Abstract5",
    "... a broad10", "dif-269") or sets them at the starts. A paper is line-numbered when at
    least :data:`LINE_NUMBER_RUN` lines carry a number one more than the last one found; then
    every number that continues the run is taken off, and nothing else is touched. A number
    alone on a line may be the page's ("1" under the title page): it never moves the run on,
    so "Abstract1" on the next page is still line 1, and it is dropped when it is the next
    line number (a numbered blank line, or a page number that looks like one). Other papers
    come back as they were.
    """
    last, steps = 0, 0
    lines = sum(1 for page in pages for line in page if line.strip())
    for page in pages:
        for line in page:
            m = _line_number(line, last)
            if m is not None and line.strip() != m.group(1):
                steps += int(m.group(1)) == last + 1
                last = int(m.group(1))
    # A numbered list or reference list is a small share of a paper's lines; line numbers
    # are on most of them.
    if steps < max(LINE_NUMBER_RUN, LINE_NUMBER_SHARE * lines):
        return [list(page) for page in pages]
    out: list[list[str]] = []
    last = 0
    for page in pages:
        kept: list[str] = []
        for line in page:
            m = _line_number(line, last)
            alone = m is not None and line.strip() == m.group(1)
            if alone and m is not None and int(m.group(1)) == last + 1:
                continue  # a numbered blank line, or the page's number: neither is text
            if m is None or alone:
                kept.append(line)
                continue
            last = int(m.group(1))
            kept.append((line.rstrip()[: m.start()] + line.rstrip()[m.end() :]).strip())
        out.append(kept)
    return out
