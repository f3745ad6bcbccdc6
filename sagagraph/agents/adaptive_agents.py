"""The adaptive pipeline's extra participants: ``survey_reviewer`` and ``reproducibility``.

Like the other paper agents, each writes one file through the saga's ``store`` under
``<outputs>/<saga_id>/`` and its compensation deletes it (the store refuses a late write after
that). Their readings are rules over the paper's text (:mod:`sagagraph.agents.adaptive_review`).
"""

from __future__ import annotations

from sagagraph.agents.adaptive_review import (
    render_reproducibility,
    render_survey_review,
    reproducibility_check,
    survey_review,
)
from sagagraph.agents.paper_agents import PaperAgent, PaperContext
from sagagraph.saga.protocol import StepResult

SURVEY_REVIEW_FILE = "survey_review.txt"
REPRODUCIBILITY_FILE = "reproducibility.txt"


class SurveyReviewerAgent(PaperAgent):
    """Step ``survey_reviewer``: coverage, taxonomy and recency, in ``survey_review.txt``;
    the alternative of ``reviewer`` for surveys, position and theory papers."""

    name = "survey_reviewer"
    file_name = SURVEY_REVIEW_FILE

    def execute(self, ctx: PaperContext) -> StepResult:
        paper = self._paper(ctx)
        review = survey_review(paper)
        output = self._write(ctx, render_survey_review(paper, review))
        return StepResult(data=review, output=output)


class ReproducibilityAgent(PaperAgent):
    """Step ``reproducibility``: which artefacts the paper names (code, data, seeds, hardware),
    with quotes, in ``reproducibility.txt``; optional, for papers that report experiments."""

    name = "reproducibility"
    file_name = REPRODUCIBILITY_FILE

    def execute(self, ctx: PaperContext) -> StepResult:
        paper = self._paper(ctx)
        check = reproducibility_check(paper)
        output = self._write(ctx, render_reproducibility(paper, check))
        return StepResult(data=check, output=output)
