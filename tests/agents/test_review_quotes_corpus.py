"""Every review point's quote is printed in its paper, on every corpus paper, for both engines.

The offline engine's review must pass the quote check untouched. The openai engine runs through
the real ChatOpenAI client against a scripted server whose model answers with that review's
points plus one it invented: the invented point is dropped and listed, every other kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sagagraph.agents.models import make_chat_model
from sagagraph.agents.offline_engine import OfflineEngine
from sagagraph.agents.openai_engine import OpenAIEngine
from sagagraph.agents.paper import Paper
from sagagraph.agents.pdf.loader import PaperLoader
from sagagraph.agents.reply_checks import as_quoted
from tests.agents.test_corpus import VALID
from tests.support.openai_server import ScriptedOpenAIServer, quoted, structured
from tests.support.output_checks import assert_review_is_grounded
from tests.support.services import CORPUS

# Reads the shared corpus of real PDFs (../shared/corpus): not part of `make check`.
pytestmark = pytest.mark.corpus

NEXT = CORPUS.parent / "corpus-next"
NEXT_VALID = (
    sorted(f"papers/{p.name}" for p in (NEXT / "papers").glob("*.pdf"))
    if (NEXT / "papers").is_dir()
    else []
)
INVENTED = quoted(
    "Reports a 99% accuracy on the public PaperBench benchmark.",
    "our method reaches 99% accuracy on the public PaperBench benchmark",
)


@pytest.fixture(scope="module")
def loader() -> PaperLoader:
    return PaperLoader()


class ReplayingModel:
    """Answers a review request with the offline review of the paper at hand, plus a point
    whose quote the paper never printed."""

    def __init__(self) -> None:
        self.answer: dict[str, Any] = {}

    def __call__(self, request: dict[str, Any]) -> Any:
        return structured(request, self.answer)


@pytest.fixture(scope="module")
def model() -> Iterator[tuple[ReplayingModel, OpenAIEngine]]:
    replaying = ReplayingModel()
    with ScriptedOpenAIServer(replaying) as server:
        chat = make_chat_model("gpt-4o-mini", base_url=server.base_url, api_key="sk-test")
        yield replaying, OpenAIEngine(chat)


def _both_engines(paper: Paper, model: tuple[ReplayingModel, OpenAIEngine]) -> None:
    offline, _ = OfflineEngine().review(paper)
    assert_review_is_grounded(paper, offline)
    replaying, engine = model
    answer = as_quoted(offline).model_dump()
    answer["strengths"].append(INVENTED)
    replaying.answer = answer
    review, _ = engine.review(paper)
    assert len(review.dropped) == 1 and "PaperBench" in review.dropped[0]
    assert "quote not found in the paper" in review.dropped[0]
    kept = review.strengths + review.weaknesses + review.suggestions
    assert len(kept) == sum(len(answer[p]) for p in ("strengths", "weaknesses", "suggestions")) - 1
    assert not any("PaperBench" in p for p in kept)
    assert_review_is_grounded(paper, review.model_copy(update={"dropped": []}))


@pytest.mark.parametrize("name", VALID)
def test_every_corpus_review_quotes_its_paper_on_both_engines(
    name: str, corpus: Path, loader: PaperLoader, model: tuple[ReplayingModel, OpenAIEngine]
) -> None:
    _both_engines(loader.load(corpus / name), model)


@pytest.mark.parametrize("name", NEXT_VALID or ["(corpus-next missing)"])
def test_every_corpus_next_review_quotes_its_paper_on_both_engines(
    name: str, corpus: Path, loader: PaperLoader, model: tuple[ReplayingModel, OpenAIEngine]
) -> None:
    if not NEXT_VALID:
        pytest.skip(f"no corpus-next beside {corpus}")
    _both_engines(loader.load(NEXT / name), model)
