"""The engine protocol: what the paper agents ask of a language model (or of the offline one).

An engine turns a loaded :class:`~sagagraph.agents.paper.Paper` into the structured outputs of
:mod:`sagagraph.agents.schemas`, and reports the tokens it spent. The participants (validator,
reviewer, summarizer) own the saga logic and the files; an engine owns only the thinking.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from sagagraph.agents.schemas import Review, Summary, ValidationReport
from sagagraph.saga.protocol import Usage

if TYPE_CHECKING:
    from sagagraph.agents.paper import Paper

NO_USAGE: Usage = {"input_tokens": 0, "output_tokens": 0}


class PaperEngine(Protocol):
    """Validator, reviewer and summarizer logic behind one interface."""

    name: str
    """``offline`` or ``openai``."""

    def validate(self, paper: Paper) -> tuple[ValidationReport, Usage]:
        """Judge whether ``paper`` is a complete research paper (from its outline and abstract)."""
        ...

    def review(self, paper: Paper) -> tuple[Review, Usage]:
        """Strengths, weaknesses and suggestions, each grounded in the paper."""
        ...

    def summarize(self, paper: Paper, words: int) -> tuple[Summary, Usage]:
        """A summary of exactly ``words`` words; raise StepError when the paper is too short."""
        ...
