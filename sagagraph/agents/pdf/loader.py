"""The paper loader service: each paper parsed once, shared by the three agents.

A saga's validator, reviewer and summarizer all need the same paper. The loader caches
loaded papers by (path, modification time, size, password), so a 39-page PDF is parsed once
per process, and again only when the file changes. It also holds the PDF password, so the
password never travels through the saga's input, state, events or outputs.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path

from sagagraph.agents.paper import Paper
from sagagraph.agents.pdf.files import PageProgress, fail
from sagagraph.agents.pdf.input_limits import InputLimits
from sagagraph.agents.pdf.parsing import load_paper
from sagagraph.errors import ConfigurationError
from sagagraph.redaction import register_secret

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
