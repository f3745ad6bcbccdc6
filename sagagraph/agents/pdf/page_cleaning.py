"""Cleaning page lines before headings are looked for: what a page prints that is not body text.

A PDF page carries a running header and footer (journal name, authors, page number), footnotes
and author notes at its foot, sometimes a table of contents, and words hyphenated across line
breaks. Each of these is removed here, or set apart (notes and the contents stay available as
evidence), so the sections of a :class:`~sagagraph.agents.paper.Paper` hold only the body.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from sagagraph.agents.headings import known_heading, normalize_title

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
