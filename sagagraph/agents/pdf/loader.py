"""Loading a paper: a file's pages parsed into a :class:`~sagagraph.agents.paper.Paper`, and the
loader service that parses each paper once for the three agents.

:func:`load_paper` reads one file. Anything that stops it from being read (missing, not a PDF,
truncated, encrypted without the password, no text layer, empty) is a
:class:`~sagagraph.errors.PaperLoadError` with one line naming the file and the cause.

A saga's validator, reviewer and summarizer all need the same paper. :class:`PaperLoader`
caches loaded papers by (path, modification time, size, password), so a 39-page PDF is parsed
once per process, and again only when the file changes. It also holds the PDF password, so the
password never travels through the saga's input, state, events or outputs.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from sagagraph.agents.headings import (
    KNOWN_HEADINGS,
    HeadingScanner,
    normalize_line,
    normalize_title,
)
from sagagraph.agents.paper import BACK_MATTER_TITLES, Paper, Section
from sagagraph.agents.pdf.files import (
    InputLimits,
    PageProgress,
    fail,
    pdf_pages,
    read_bytes,
    text_pages,
)
from sagagraph.agents.pdf.pages import (
    PageLayout,
    clean_pages,
    reference_run,
    repair_slashed_marks,
    strip_line_numbers,
)
from sagagraph.errors import ConfigurationError
from sagagraph.redaction import register_secret

TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown"})
"""Plain-text formats read as UTF-8; ``.md`` and ``.markdown`` use ``#`` headings."""
UNHEADED_REFERENCES = "(unheaded reference list)"
"""The heading given to a reference list printed at the end without a heading."""

_NOTICE = re.compile(
    r"proceedings|©|copyright|arxiv|permission|transactions|journal|\bvol\.|volume|conference|"
    r"workshop|preprint|licen[cs]e|\bdoi\b|issn|https?:|www\.",
    re.IGNORECASE,
)
# "Jane Doe and Kim Roe", "A. Turing, G. Hopper & J. Doe": names joined by commas or "and".
_NAME = r"(?:[A-Z][\w'’-]*\.?\s+){1,3}[A-Z][\w'’-]+"
_AUTHOR_LINE = re.compile(rf"^{_NAME}(?:\s*(?:,|\band\b|&)\s*(?:and\s+)?{_NAME})+$")
_AUTHOR_MARKS = frozenset("∗*†‡§¶♠♢♡♣♦□⋄@,")
_NOTHING: frozenset[str] = frozenset()


def _good_metadata_title(title: str) -> bool:
    words = title.split()
    lowered = title.lower()
    return (
        len(words) >= 2
        and not lowered.endswith((".pdf", ".doc", ".docx", ".dvi", ".tex"))
        and not lowered.startswith(("microsoft word", "untitled"))
    )


def _title_like(line: str) -> bool:
    words = line.split()
    if not 2 <= len(words) <= 20 or _NOTICE.search(line) or line.endswith("."):
        return False
    if not line[0].isupper() or any(c in _AUTHOR_MARKS for c in line):
        return False
    long_words = [w for w in words if len(w) > 3]
    capitalised = sum(w[0].isupper() for w in long_words)
    return not long_words or capitalised >= 0.5 * len(long_words)


def guess_title(
    front: Sequence[str], metadata_title: str, fallback: str, layout_title: str = ""
) -> str:
    """The title: the first page's largest text near the top (:mod:`.title`), else the
    metadata title when it is meaningful, else the first title-like lines."""
    if layout_title:
        return layout_title
    if _good_metadata_title(metadata_title):
        return " ".join(metadata_title.split())
    lines = [ln for ln in front[:25] if ln]
    for i, line in enumerate(lines):
        if not _title_like(line):
            continue
        title = line
        for extra in lines[i + 1 : i + 3]:
            if not _title_like(extra) or len(extra.split()) > 12 or _AUTHOR_LINE.match(extra):
                break
            title = f"{title} {extra}"
        return title
    return lines[0] if lines else fallback


def _split_references(
    found: list[tuple[str, int, int, str, list[tuple[int, str]]]],
) -> None:
    """A reference list printed without a heading at the end becomes its own section."""
    if not found or any(normalize_title(f[3]) in BACK_MATTER_TITLES for f in found):
        return
    body = found[-1][4]
    start = reference_run([line for _, line in body])
    if start is None:
        return
    found[-1] = (*found[-1][:4], body[:start])
    found.append((UNHEADED_REFERENCES, body[start][0], 1, "References", body[start:]))


def _drop_title_lines(
    found: list[tuple[str, int, int, str, list[tuple[int, str]]]],
    front: list[str],
    metadata_title: str,
) -> None:
    """The paper's own title, set large on its first page, is no section heading (PLOS prints
    the abstract before it): its lines go back to the text before it."""
    title = normalize_title(metadata_title)
    if len(title.split()) < 3:
        return
    for i in range(len(found) - 1, -1, -1):
        heading, page, _, name, body = found[i]
        words = normalize_title(name)
        if page > 2 or len(words.split()) < 3 or words not in title or name != heading:
            continue
        lines = [(page, heading), *body]
        del found[i]
        if i > 0:
            found[i - 1][4].extend(lines)
        else:
            front.extend(line for _, line in lines)


def parse_paper(
    source: str,
    pages: Sequence[str],
    *,
    markdown: bool = False,
    metadata_title: str = "",
    layout: Sequence[PageLayout] = (),
    layout_title: str = "",
) -> Paper:
    """Split page texts into a :class:`Paper`: title, front matter and headed sections.

    ``layout`` (per page, from the PDF) marks the lines set apart as headings and the small
    lines that notes are made of; text patterns work without it. ``layout_title`` is the
    first page's largest text, preferred to the metadata title.
    """
    page_lines = [[normalize_line(line) for line in page.splitlines()] for page in pages]
    page_lines = repair_slashed_marks(page_lines)
    if not markdown:
        page_lines = strip_line_numbers(page_lines)
    cleaned = clean_pages(page_lines, [pl.small for pl in layout], markdown=markdown)
    lines = cleaned.lines
    emphasized: list[set[str] | frozenset[str]] = [
        {"".join(e.split()) for e in pl.emphasized} for pl in layout
    ]
    scanner = HeadingScanner(markdown=markdown)
    front: list[str] = []
    # heading, page, level, title, body lines with their pages
    found: list[tuple[str, int, int, str, list[tuple[int, str]]]] = []
    i = 0
    while i < len(lines):
        page, line = lines[i]
        # The next non-empty line, in case the heading wrapped onto it.
        j = i + 2 if i + 2 < len(lines) and not lines[i + 1][1] and lines[i + 2][1] else i + 1
        following = lines[j][1] if j < len(lines) else None
        marked = emphasized[page - 1] if page <= len(emphasized) else _NOTHING
        vouched = bool(marked) and "".join(line.split()) in marked
        heading = scanner.scan(line, following, emphasized=vouched) if line else None
        if heading is None:
            if found:
                found[-1][4].append((page, line))
            else:
                front.append(line)
            i += 1
            continue
        body = [(page, heading.rest)] if heading.rest else []
        found.append((heading.heading, page, heading.level, heading.title, body))
        i = j + 1 if heading.lines == 2 else i + 1
    if not markdown:
        _drop_title_lines(found, front, metadata_title)
        _split_references(found)
    title = ""
    if (
        markdown
        and found
        and found[0][2] == 1
        and normalize_title(found[0][3]) not in KNOWN_HEADINGS
    ):
        # "# Paper Title" starts a Markdown paper; it is the title, not a section.
        title = found[0][0]
        front += [line for _, line in found.pop(0)[4]]
    if not title:
        title = guess_title(front, metadata_title, Path(source).stem, layout_title)
    # Markdown papers under a "# Title" use "##" for sections: make the top level 1.
    shift = min((lvl for _, _, lvl, _, _ in found), default=1) - 1 if markdown else 0
    sections = tuple(
        Section(
            heading=h,
            page=p,
            text="\n".join(line for _, line in body).strip(),
            level=lvl - shift,
            title=t,
        )
        for h, p, lvl, t, body in found
    )
    return Paper(
        source=source,
        title=title,
        pages=tuple("\n".join(page) for page in page_lines),
        sections=sections,
        front_matter="\n".join(front).strip(),
        notes=tuple(cleaned.notes),
        toc=tuple(cleaned.toc),
    )


def load_paper(
    path: str | Path, password: str | None = None, on_page: PageProgress | None = None
) -> Paper:
    """Load a paper; PaperLoadError (one line, naming the file and the cause) if it cannot be.

    PDFs are recognised by their ``%PDF-`` header whatever their name; ``.txt``, ``.md`` and
    ``.markdown`` files are read as UTF-8 text (a form feed starts a new page). ``password``
    opens an encrypted PDF; it is never part of an error message. ``on_page(number, total)``
    is called after each PDF page is read, for progress reports.
    """
    file = Path(path)
    data = read_bytes(file)
    if not data:
        raise fail(file, "empty file (0 bytes)")
    suffix = file.suffix.lower()
    if b"%PDF-" in data[:1024]:
        pdf = pdf_pages(file, data, password, on_page)
        return parse_paper(
            str(path),
            pdf.pages,
            metadata_title=pdf.title,
            layout=pdf.layout,
            layout_title=pdf.layout_title,
        )
    if suffix == ".pdf":
        raise fail(file, "not a PDF (it does not start with %PDF-)")
    if suffix not in TEXT_SUFFIXES:
        raise fail(file, f"unsupported file type {suffix or '(none)'!r}: use .pdf, .txt or .md")
    pages = text_pages(file, data)
    return parse_paper(str(path), pages, markdown=suffix in (".md", ".markdown"))


CacheKey = tuple[str, int, int, str]


class PaperLoader:
    """Loads papers through :func:`load_paper`, with a small LRU cache; thread-safe."""

    def __init__(
        self,
        password: str | None = None,
        *,
        cache_size: int = 16,
        limits: InputLimits | None = None,
    ) -> None:
        """``password`` opens encrypted PDFs; it is held here and shown nowhere. ``limits``
        (default: from the environment) bound each paper's size and pages."""
        self._password = password
        self.limits = limits or InputLimits.from_env()
        """How large a paper this loader accepts."""
        self._cache_size = max(cache_size, 1)
        self._cache: OrderedDict[CacheKey, Paper] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[CacheKey, threading.Lock] = {}
        self.parses = 0
        """How many times a file was actually read and parsed (cache misses)."""

    def __repr__(self) -> str:
        state = "set" if self._password is not None else "none"
        return f"PaperLoader(cached={len(self._cache)}, password={state})"

    def _key(self, path: Path, password: str | None) -> CacheKey | None:
        try:
            stat = path.stat()
        except OSError:
            return None  # load_paper names the problem
        secret = hashlib.sha256(password.encode()).hexdigest() if password is not None else ""
        return (str(path.resolve()), stat.st_mtime_ns, stat.st_size, secret)

    def load(
        self,
        path: str | Path,
        password: str | None = None,
        *,
        on_page: PageProgress | None = None,
    ) -> Paper:
        """The paper at ``path``; PaperLoadError (one line) when it cannot be read.

        ``password`` overrides the loader's own. ``on_page(number, total)`` reports each PDF
        page read (not called when the paper comes from the cache). Failures are not cached:
        a fixed file loads on the next call.
        """
        secret = password if password is not None else self._password
        key = self._key(Path(path), secret)
        if key is None:
            return self._load(path, secret, on_page)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        # One parse per key even when several threads ask at once; other keys go on in parallel.
        with key_lock:
            with self._lock:
                cached = self._cache.get(key)
            if cached is not None:
                return cached
            try:
                paper = self._load(path, secret, on_page)
            finally:
                with self._lock:
                    self._key_locks.pop(key, None)
            with self._lock:
                self.parses += 1
                self._cache[key] = paper
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            return paper

    def _load(self, path: str | Path, secret: str | None, on_page: PageProgress | None) -> Paper:
        """Parse the paper, within this loader's limits (the reader itself enforces the
        environment's before it reads a byte)."""
        file = Path(path)
        try:
            size = file.stat().st_size if file.is_file() else 0
        except OSError:
            size = 0  # load_paper names the problem
        problem = self.limits.too_large(size, is_pdf=True)
        if problem:
            raise fail(file, problem)
        paper = load_paper(path, secret, on_page)
        problem = self.limits.too_many_pages(len(paper.pages))
        if problem:
            raise fail(file, problem)
        return paper

    def clear(self) -> None:
        """Forget every cached paper."""
        with self._lock:
            self._cache.clear()


PDF_PASSWORD_ENV = "SAGAGRAPH_PDF_PASSWORD"
"""Environment variable holding the password of encrypted PDFs (kept out of ``ps``)."""


def resolve_pdf_password(
    password: str | None = None, password_file: str | Path | None = None
) -> str | None:
    """The PDF password: ``--password``, else the first line of ``--password-file``, else
    ``$SAGAGRAPH_PDF_PASSWORD``, else None. It is registered for redaction, so no event, log
    line or error shows it. ConfigurationError when both flags are given or the file cannot be
    read (the message names the file, never its content)."""
    if password is not None and password_file is not None:
        raise ConfigurationError("--password and --password-file: give one of them, not both")
    if password_file is not None:
        try:
            text = Path(password_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            cause = getattr(error, "strerror", None) or type(error).__name__
            raise ConfigurationError(
                f"--password-file {password_file}: cannot read ({cause})"
            ) from None
        lines = text.splitlines()
        password = lines[0] if lines else ""
        if not password:
            raise ConfigurationError(f"--password-file {password_file}: the first line is empty")
    if password is None:
        password = os.environ.get(PDF_PASSWORD_ENV) or None
    register_secret(password)
    return password


def check_paper(
    path: str | Path, password: str | None = None, *, loader: PaperLoader | None = None
) -> Paper:
    """Load ``path`` before a saga starts, so bad input fails fast (the CLI exits with 2).

    Pass the saga's ``loader`` to keep the parsed paper in its cache for the agents.
    """
    if loader is not None:
        return loader.load(path, password)
    return load_paper(path, password)
