"""The paper app: three agents (validator, reviewer, summarizer) that review a paper as one saga.

The app is one user of the engine, like ``examples/``: it builds a
:class:`~sagagraph.saga.protocol.SagaDefinition` from its agents
(:func:`paper_saga_definition`) and runs it with the engine's runners. Its parts: the agents
and their saga (``paper_agents``, ``paper_saga``, ``paper_blackboard``), their engines (offline
rules, or a chat model through ``openai_engine``), the output store, and PDF loading in
:mod:`sagagraph.agents.pdf`. The engine below never imports this package.

Each name is imported on first use (PEP 562), as in :mod:`sagagraph`.
"""

from typing import TYPE_CHECKING

from sagagraph.saga import lazy_exports

if TYPE_CHECKING:
    from sagagraph.agents.engine import (
        PaperEngine,
        PartFound,
        QuotedPoint,
        QuotedReview,
        Review,
        Summary,
        ValidationReport,
    )
    from sagagraph.agents.models import make_chat_model, make_engine, resolve_llm
    from sagagraph.agents.offline_engine import OfflineEngine
    from sagagraph.agents.openai_engine import OpenAIEngine
    from sagagraph.agents.paper import Paper, PaperTooShortError, Section
    from sagagraph.agents.paper_agents import (
        PaperProfile,
        ReproducibilityAgent,
        ReviewerAgent,
        SummarizerAgent,
        SurveyReviewerAgent,
        ValidatorAgent,
        profile_paper,
    )
    from sagagraph.agents.paper_app import PAPER_APP, PaperApp, PaperSettings
    from sagagraph.agents.paper_blackboard import paper_blackboard_graph, paper_refinements
    from sagagraph.agents.paper_saga import ADAPTIVE_STEPS, PAPER_STEPS, paper_saga_definition
    from sagagraph.agents.pdf.loader import PaperLoader, check_paper, load_paper
    from sagagraph.agents.store import OutputStore
    from sagagraph.errors import MalformedModelOutput, ModelCallError, PaperLoadError

_EXPORTS = {
    "sagagraph.agents.engine": (
        "PaperEngine PartFound QuotedPoint QuotedReview Review Summary ValidationReport"
    ),
    "sagagraph.agents.models": "make_chat_model make_engine resolve_llm",
    "sagagraph.agents.offline_engine": "OfflineEngine",
    "sagagraph.agents.openai_engine": "OpenAIEngine",
    "sagagraph.agents.paper": "Paper PaperTooShortError Section",
    "sagagraph.agents.paper_agents": (
        "PaperProfile ReproducibilityAgent ReviewerAgent SummarizerAgent SurveyReviewerAgent "
        "ValidatorAgent profile_paper"
    ),
    "sagagraph.agents.paper_blackboard": "paper_blackboard_graph paper_refinements",
    "sagagraph.agents.paper_app": "PAPER_APP PaperApp PaperSettings",
    "sagagraph.agents.paper_saga": "ADAPTIVE_STEPS PAPER_STEPS paper_saga_definition",
    "sagagraph.agents.pdf.loader": "PaperLoader check_paper load_paper",
    "sagagraph.agents.store": "OutputStore",
    "sagagraph.errors": "MalformedModelOutput ModelCallError PaperLoadError",
}
"""Each module that defines public names, and those names (the TYPE_CHECKING imports above)."""

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


__all__ = [
    "ADAPTIVE_STEPS",
    "PAPER_APP",
    "PAPER_STEPS",
    "MalformedModelOutput",
    "ModelCallError",
    "OfflineEngine",
    "OpenAIEngine",
    "OutputStore",
    "Paper",
    "PaperApp",
    "PaperEngine",
    "PaperLoadError",
    "PaperLoader",
    "PaperProfile",
    "PaperSettings",
    "PaperTooShortError",
    "PartFound",
    "QuotedPoint",
    "QuotedReview",
    "ReproducibilityAgent",
    "Review",
    "ReviewerAgent",
    "Section",
    "SummarizerAgent",
    "Summary",
    "SurveyReviewerAgent",
    "ValidationReport",
    "ValidatorAgent",
    "check_paper",
    "load_paper",
    "make_chat_model",
    "make_engine",
    "paper_blackboard_graph",
    "paper_refinements",
    "paper_saga_definition",
    "profile_paper",
    "resolve_llm",
]
