"""The engine protocol: what the paper agents ask of a language model (or of the offline one),
and the structured outputs it answers with, as pydantic models.

An engine turns a loaded :class:`~sagagraph.agents.paper.Paper` into a
:class:`ValidationReport`, a :class:`Review` and a :class:`Summary`, and reports the tokens it
spent. The participants (validator, reviewer, summarizer) own the saga logic and the files; an
engine owns only the thinking. The same models are what the offline engine builds and what the
OpenAI engine asks the chat model for (``with_structured_output``), so both engines are checked
against one schema. How the chat model is asked for them (:func:`resolve_method`:
``json_schema``, ``function_calling`` or ``json_mode``) is an option the model factory and the
OpenAI engine share.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal, Protocol, cast, get_args

from pydantic import BaseModel, Field

from sagagraph.errors import ConfigurationError
from sagagraph.saga.protocol import Usage

if TYPE_CHECKING:
    from sagagraph.agents.paper import Paper


StructuredOutputMethod = Literal["json_schema", "function_calling", "json_mode"]
"""How a structured output is asked of the model (``SAGAGRAPH_STRUCTURED_OUTPUT``)."""


def choice(value: str, allowed: tuple[str, ...], source: str) -> str:
    """``value`` lower-cased if it is one of ``allowed``; else one line naming ``source``."""
    normalised = value.strip().lower()
    if normalised not in allowed:
        raise ConfigurationError(f"{source}={value!r}: expected one of {', '.join(allowed)}")
    return normalised


def resolve_method(method: str | None = None) -> StructuredOutputMethod:
    """How to ask for structured output: ``method=``, else ``SAGAGRAPH_STRUCTURED_OUTPUT``."""
    allowed = get_args(StructuredOutputMethod)
    if method is not None:
        return cast(StructuredOutputMethod, choice(method, allowed, "method"))
    from_env = os.environ.get("SAGAGRAPH_STRUCTURED_OUTPUT", "").strip()
    if from_env:
        return cast(
            StructuredOutputMethod, choice(from_env, allowed, "SAGAGRAPH_STRUCTURED_OUTPUT")
        )
    return "json_schema"


class PartFound(BaseModel):
    """A required part of a paper and where it was found."""

    part: str = Field(
        description="required part: abstract, introduction, body, method, conclusion or references"
    )
    heading: str = Field(description="the heading as printed in the paper")
    page: int = Field(ge=1, description="1-based page where the heading was found")


class ValidationReport(BaseModel):
    """Whether a document is a complete research paper, and why."""

    is_valid: bool = Field(description="true when every required part is present")
    found: list[PartFound] = Field(default_factory=list, description="parts found, in order")
    missing: list[str] = Field(default_factory=list, description="required parts not found")
    reason: str = Field(description="one sentence: why the paper is valid or not")


class Review(BaseModel):
    """A peer review grounded in the paper's own content.

    Each point ends with its evidence, ``(p.N) "words printed on page N"``; the points whose
    quote is not in the paper are removed and listed in ``dropped``
    (:mod:`~sagagraph.agents.reply_checks`).
    """

    strengths: list[str] = Field(min_length=1, description="what the paper does well")
    weaknesses: list[str] = Field(min_length=1, description="what is missing or unconvincing")
    suggestions: list[str] = Field(min_length=1, description="concrete improvements")
    dropped: list[str] = Field(
        default_factory=list,
        description="points removed because their evidence is not in the paper, with why",
    )
    kind: str = Field(
        default="",
        description="what kind of paper it is (empirical, system, survey, theory, qualitative "
        "or clinical study, software...) and the evidence for it",
    )


class QuotedPoint(BaseModel):
    """One review point and the paper's own words it rests on."""

    point: str = Field(description="the remark, one or two sentences of plain prose")
    page: int = Field(ge=1, description="1-based page of the paper where the quote is printed")
    quote: str = Field(
        description="words copied verbatim from that page (one sentence or part of one) that "
        "the remark rests on"
    )


class QuotedReview(BaseModel):
    """A peer review as a model writes it: every point with a verbatim quote and its page."""

    strengths: list[QuotedPoint] = Field(min_length=1, description="what the paper does well")
    weaknesses: list[QuotedPoint] = Field(
        min_length=1, description="what is missing or unconvincing"
    )
    suggestions: list[QuotedPoint] = Field(min_length=1, description="concrete improvements")


class Summary(BaseModel):
    """A summary of the paper."""

    text: str = Field(description="the summary, as plain prose")


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
