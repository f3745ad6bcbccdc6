"""The offline engine: deterministic, no network, no tokens.

It validates with heading rules (:mod:`~sagagraph.agents.validation_rules`), reviews with
heuristics over the paper's own content (:mod:`~sagagraph.agents.offline_review`) and
summarises extractively (:mod:`~sagagraph.agents.offline_summary`). The same paper always gets
the same results, which makes it the engine for tests, notebooks and machines without a key.
"""

from __future__ import annotations

from sagagraph.agents.engine import Review, Summary, ValidationReport
from sagagraph.agents.offline_review import offline_review
from sagagraph.agents.offline_summary import DEFAULT_CHUNK_CHARS, offline_summary
from sagagraph.agents.paper import Paper
from sagagraph.agents.validation_rules import validation_report
from sagagraph.saga.protocol import Usage


def _no_usage() -> Usage:
    return {"input_tokens": 0, "output_tokens": 0}


class OfflineEngine:
    """:class:`~sagagraph.agents.engine.PaperEngine` without a model; usage is always zero."""

    name = "offline"

    def __init__(self, *, chunk_chars: int = DEFAULT_CHUNK_CHARS) -> None:
        self.chunk_chars = chunk_chars
        """Characters per chunk when summarising a long paper."""

    def __repr__(self) -> str:
        return f"OfflineEngine(chunk_chars={self.chunk_chars})"

    def validate(self, paper: Paper) -> tuple[ValidationReport, Usage]:
        """Find each required part by its heading; list what is missing."""
        return validation_report(paper), _no_usage()

    def review(self, paper: Paper) -> tuple[Review, Usage]:
        """Strengths, weaknesses and suggestions, each naming the paper's sections or counts."""
        return offline_review(paper), _no_usage()

    def summarize(self, paper: Paper, words: int) -> tuple[Summary, Usage]:
        """An extractive summary of exactly ``words`` words; PaperTooShortError if too short."""
        return Summary(text=offline_summary(paper, words, chunk_chars=self.chunk_chars)), (
            _no_usage()
        )
