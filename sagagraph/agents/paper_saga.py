"""The research-paper saga: validator, then reviewer, then summarizer.

The saga input is ``{"paper": "<path>"}`` and nothing else; the deps (engine, paper loader
with the PDF password, output store: :class:`~sagagraph.agents.paper_agents.PaperDeps`) come
from the definition, so no secret enters the saga's state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sagagraph.agents.engine import PaperEngine
from sagagraph.agents.offline_engine import OfflineEngine
from sagagraph.agents.paper_agents import (
    REVIEWED_AS_SURVEY,
    PaperDeps,
    ReproducibilityAgent,
    ReviewerAgent,
    SummarizerAgent,
    SurveyReviewerAgent,
    ValidatorAgent,
)
from sagagraph.agents.pdf.loader import PaperLoader
from sagagraph.agents.store import OutputStore
from sagagraph.errors import (
    ConfigurationError,
    InputError,
    ModelCallError,
    PaperLoadError,
    StepTimeoutError,
)
from sagagraph.saga.protocol import Retry, SagaDefinition, Step, StepResult

PAPER_SAGA = "paper_review"

PAPER_EVENT_NAMES = {
    "saga_started": "paper_submitted",
    "validator_done": "validated",
    "reviewer_done": "reviewed",
    "summarizer_done": "summarized",
    "validator_compensated": "validation_compensated",
    "reviewer_compensated": "review_compensated",
    "summarizer_compensated": "summary_compensated",
}
"""The paper saga's choreography vocabulary, as in DESIGN.md's subscription table."""
"""Name of the saga definition."""
PAPER_STEPS = ("validator", "reviewer", "summarizer")
"""Its steps, in order."""
ADAPTIVE_STEPS = ("validator", "reviewer", "survey_reviewer", "reproducibility", "summarizer")
"""The steps of the adaptive pipeline, in definition order (not all of them run)."""
PIPELINES = ("default", "adaptive")
"""``default``: validator, reviewer, summarizer. ``adaptive``: after the validator, reviewer or
survey_reviewer, then reproducibility when the paper reports experiments, then summarizer."""


def paper_saga_definition(
    *,
    engine: PaperEngine | None = None,
    outputs_dir: str | Path = "outputs",
    loader: PaperLoader | None = None,
    password: str | None = None,
    summary_words: int = 300,
    step_timeout: float | None = None,
    retry: Retry | None = None,
    parallel: bool = False,
    pipeline: str = "default",
) -> SagaDefinition[PaperDeps]:
    """The ``paper_review`` saga definition.

    ``engine`` defaults to the offline engine. Outputs go to ``<outputs_dir>/<saga_id>/``.
    ``password`` opens an encrypted PDF (it is held by the loader, never stored); give it
    either here or to your own ``loader``, not both. ``step_timeout`` bounds each step.
    ``retry`` is each step's retry policy; by default a model engine retries once on a
    transient error (unreachable server, HTTP error, timeout), the offline engine never.
    ``parallel=True`` runs reviewer and summarizer side by side once the paper is validated
    (both need only the validated paper); deterministic orchestration only.
    ``pipeline="adaptive"``: see :func:`adaptive_steps`.
    """
    if pipeline not in PIPELINES:
        raise ConfigurationError(
            f"pipeline: expected one of {', '.join(PIPELINES)}, got {pipeline!r}"
        )
    if pipeline == "adaptive" and parallel:
        raise ConfigurationError("the adaptive pipeline runs as a chain: not with parallel=True")
    if loader is not None and password is not None:
        raise ConfigurationError("paper saga: pass the password to the PaperLoader, not both")
    if summary_words < 1:
        raise ConfigurationError(f"summary_words must be positive, got {summary_words}")
    if step_timeout is not None and step_timeout <= 0:
        raise ConfigurationError(f"step_timeout must be positive seconds, got {step_timeout}")
    engine = engine if engine is not None else OfflineEngine()
    if retry is None:
        retry = (
            Retry()
            if engine.name == "offline"
            else Retry(max_attempts=2, backoff=1.0, retry_on=(ModelCallError, StepTimeoutError))
        )
    loader = loader if loader is not None else PaperLoader(password)
    deps = PaperDeps(engine, loader, OutputStore(outputs_dir))
    if pipeline == "adaptive":
        return SagaDefinition(
            PAPER_SAGA,
            adaptive_steps(retry, step_timeout, summary_words),
            deps,
            check_input=paper_input_check(loader),
            label=paper_label,
            route_facts=paper_route_facts,
        )
    steps = (
        Step(ValidatorAgent(), retry=retry, timeout=step_timeout, can_halt=True),
        Step(ReviewerAgent(), retry=retry, timeout=step_timeout),
        Step(
            SummarizerAgent(summary_words),
            retry=retry,
            timeout=step_timeout,
            after=("validator",) if parallel else None,
        ),
    )
    return SagaDefinition(
        PAPER_SAGA,
        steps,
        deps,
        check_input=paper_input_check(loader),
        label=paper_label,
        event_names=PAPER_EVENT_NAMES,
    )


def adaptive_steps(
    retry: Retry, step_timeout: float | None, summary_words: int
) -> tuple[Step[PaperDeps], ...]:
    """The adaptive pipeline: validator; then ``reviewer`` (empirical papers, the default) or
    ``survey_reviewer`` (surveys, position and theory papers); then ``reproducibility`` when
    the paper reports experiments (optional); then summarizer. The rules read the validator's
    profile of the paper (:func:`~sagagraph.agents.paper_agents.profile_paper`)."""
    return (
        Step(ValidatorAgent(profile=True), retry=retry, timeout=step_timeout, can_halt=True),
        Step(
            ReviewerAgent(),
            retry=retry,
            timeout=step_timeout,
            choice="review",
            description="peer review of an empirical or system paper: strengths, weaknesses, "
            "suggestions",
        ),
        Step(
            SurveyReviewerAgent(),
            retry=retry,
            timeout=step_timeout,
            choice="review",
            when=lambda facts: facts.get("kind") in REVIEWED_AS_SURVEY,
            description="review of a survey, position or theory paper: coverage, taxonomy, recency",
        ),
        Step(
            ReproducibilityAgent(),
            retry=retry,
            timeout=step_timeout,
            optional=True,
            when=lambda facts: bool(facts.get("reports_experiments")),
            description="which artefacts (code, data, seeds, hardware) a paper that reports "
            "experiments names",
        ),
        Step(SummarizerAgent(summary_words), retry=retry, timeout=step_timeout),
    )


def paper_route_facts(results: Mapping[str, StepResult]) -> dict[str, Any]:
    """What the adaptive pipeline's routers decide by: the validator's profile of the paper
    (kind, whether it reports experiments, the evidence), never the paper's text."""
    validator = results.get("validator")
    profile = dict((validator.data.get("profile") or {}) if validator else {})
    return {k: profile[k] for k in ("kind", "reports_experiments", "evidence") if k in profile}


def paper_label(saga_input: Mapping[str, Any]) -> str | None:
    """A paper saga's label: its paper's path, as ``list`` shows it."""
    paper = saga_input.get("paper")
    return paper if isinstance(paper, str) else None


def paper_input_check(loader: PaperLoader) -> Callable[[Mapping[str, Any]], None]:
    """The paper saga's input check: ``input.paper`` names a paper ``loader`` can read.

    ``run_saga`` calls it before a saga exists, as the CLI and the LangGraph Server check the
    paper before they start one. The loader keeps the parsed paper: the steps do not read it
    again.
    """

    def check(saga_input: Mapping[str, Any]) -> None:
        paper = saga_input.get("paper")
        if not isinstance(paper, str) or not paper.strip():
            raise InputError('input.paper: missing (expected {"paper": PATH})')
        try:
            loader.load(paper)
        except PaperLoadError as error:
            raise PaperLoadError(f"input.paper: {error}") from None

    return check
