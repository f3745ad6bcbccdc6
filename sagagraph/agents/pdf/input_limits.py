"""Limits on what a paper file may be, so a hostile or mistaken input is refused, not read.

``/dev/zero`` would be read until memory runs out, a FIFO named ``paper.md`` would block for
ever, and a 50 MB text "paper" costs minutes and hundreds of model requests. Every limit has a
default and an environment variable; :meth:`InputLimits.from_env` reads them.

| limit | default | environment |
|---|---|---|
| size of any paper file | 25 MB | ``SAGAGRAPH_MAX_PAPER_MB`` |
| size of a text paper (.txt, .md) | 2 MB | ``SAGAGRAPH_MAX_TEXT_MB`` |
| pages of a paper | 500 | ``SAGAGRAPH_MAX_PAGES`` |
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sagagraph.errors import ConfigurationError

DEFAULT_MAX_PAPER_MB = 25.0
DEFAULT_MAX_TEXT_MB = 2.0
DEFAULT_MAX_PAGES = 500
_MB = 1024 * 1024


@dataclass(frozen=True)
class InputLimits:
    """How large a paper may be."""

    max_paper_mb: float = DEFAULT_MAX_PAPER_MB
    """Largest paper file, PDF or text, in MiB (``SAGAGRAPH_MAX_PAPER_MB``)."""
    max_text_mb: float = DEFAULT_MAX_TEXT_MB
    """Largest text paper (not a PDF), in MiB: about 300,000 words (``SAGAGRAPH_MAX_TEXT_MB``)."""
    max_pages: int = DEFAULT_MAX_PAGES
    """Most pages a paper may have (``SAGAGRAPH_MAX_PAGES``)."""

    def __post_init__(self) -> None:
        for name in ("max_paper_mb", "max_text_mb", "max_pages"):
            if not getattr(self, name) > 0:
                raise ConfigurationError(f"{name}: must be positive, got {getattr(self, name)}")

    @classmethod
    def from_env(cls) -> InputLimits:
        """The defaults, overridden by the environment variables that are set."""
        return cls(
            max_paper_mb=_number("SAGAGRAPH_MAX_PAPER_MB", DEFAULT_MAX_PAPER_MB),
            max_text_mb=_number("SAGAGRAPH_MAX_TEXT_MB", DEFAULT_MAX_TEXT_MB),
            max_pages=int(_number("SAGAGRAPH_MAX_PAGES", DEFAULT_MAX_PAGES, whole=True)),
        )

    @property
    def max_paper_bytes(self) -> int:
        return int(self.max_paper_mb * _MB)

    @property
    def max_text_bytes(self) -> int:
        return int(self.max_text_mb * _MB)

    def too_large(self, size: int, *, is_pdf: bool) -> str | None:
        """Why a file of ``size`` bytes is refused, or None when it is within the limits."""
        if size > self.max_paper_bytes:
            return _over(size, self.max_paper_mb, "SAGAGRAPH_MAX_PAPER_MB")
        if not is_pdf and size > self.max_text_bytes:
            return "text " + _over(size, self.max_text_mb, "SAGAGRAPH_MAX_TEXT_MB")
        return None

    def too_many_pages(self, pages: int) -> str | None:
        """Why a paper of ``pages`` pages is refused, or None."""
        if pages > self.max_pages:
            return f"{pages} pages, more than the limit of {self.max_pages} (SAGAGRAPH_MAX_PAGES)"
        return None


def _over(size: int, limit_mb: float, variable: str) -> str:
    return f"file of {size / _MB:.1f} MB, larger than the limit of {limit_mb:g} MB ({variable})"


def _number(variable: str, default: float, *, whole: bool = False) -> float:
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if whole else float(raw)
    except ValueError:
        kind = "a whole number" if whole else "a number"
        raise ConfigurationError(f"{variable}={raw!r}: expected {kind}") from None
    if not value > 0:
        raise ConfigurationError(f"{variable}={raw!r}: must be positive")
    return value
