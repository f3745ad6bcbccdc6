"""Long papers on small models: the openai engine reviews and summarises by sections when a paper
does not fit the model's context, and plans again when a server refuses a request as too long.

The model is the scripted OpenAI-compatible server on 127.0.0.1 (tests/support/openai_server.py)
with a context window: it answers HTTP 400 ``context_length_exceeded`` (or llama.cpp's
``exceed_context_size_error``) to any longer request, as llama.cpp and vLLM do. Its reviewer
quotes sentences printed on the pages it is shown, plus one invented quote per request, so the
quote check has something to drop. The long paper is a real 39-page PDF of the corpus.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sagagraph import build_saga_graph, open_checkpointer, run_saga
from sagagraph.agents.models import make_chat_model
from sagagraph.agents.openai_calls import (
    ENV,
    LOCAL_DEFAULT,
    context_tokens,
    is_overflow,
    overflow_limit,
    paper_chars,
    window_of,
)
from sagagraph.agents.openai_engine import OpenAIEngine, page_parts
from sagagraph.agents.paper import Paper
from sagagraph.agents.paper_saga import paper_saga_definition
from sagagraph.agents.pdf.loader import PaperLoader
from sagagraph.agents.words import count_words
from sagagraph.errors import ConfigurationError, ModelCallError
from tests.agents.long_paper_model import INVENTED, reviewing_model, sentences_on
from tests.support.openai_server import (
    Reply,
    ScriptedOpenAIServer,
    quoted,
    request_text,
    structured,
    wants_schema,
)
from tests.support.output_checks import assert_review_is_grounded

SMALL = 8_192
"""The small model's context window, in tokens."""
LONG_PAPER = "papers/paperplain_2203.00130v1.pdf"


@pytest.fixture(scope="module")
def long_paper(corpus: Path) -> Paper:
    paper = PaperLoader().load(corpus / LONG_PAPER)
    assert len(paper.pages) >= 35
    return paper


def engine_on(server: ScriptedOpenAIServer, **kw: Any) -> OpenAIEngine:
    chat = make_chat_model("llama3.1:8b", base_url=server.base_url, api_key="ollama")
    return OpenAIEngine(chat, **kw)


# -- the context window ---------------------------------------------------------------------------


def test_the_window_comes_from_the_setting_then_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert window_of("gpt-4o-mini") == 128_000 and window_of("gpt-4.1-nano") == 1_047_576
    assert window_of("llama3.1:8b") == LOCAL_DEFAULT == window_of("qwen2.5:7b-instruct")
    assert context_tokens("gpt-4o") == 128_000
    monkeypatch.setenv(ENV, "16_384")
    assert context_tokens("gpt-4o") == 16_384
    assert context_tokens("gpt-4o", 32_768) == 32_768
    monkeypatch.setenv(ENV, "lots")
    with pytest.raises(ConfigurationError, match=f"{ENV}='lots'"):
        context_tokens("gpt-4o")
    with pytest.raises(ConfigurationError, match=">= 2048"):
        context_tokens("gpt-4o", 512)


@pytest.mark.parametrize(
    ("status", "message", "code", "limit"),
    [
        (
            400,
            "This model's maximum context length is 8192 tokens. However, you requested",
            None,
            8192,
        ),
        (400, "Please reduce the length.", "context_length_exceeded", None),
        (400, "the request exceeds the available context size, try increasing it", None, None),
        (400, "Input is too long for requested model.", None, None),
    ],
    ids=["vllm", "openai-code", "llama.cpp", "bedrock-like"],
)
def test_a_refusal_as_too_long_is_recognised(
    status: int, message: str, code: str | None, limit: int | None
) -> None:
    assert is_overflow(status, message, code)
    assert overflow_limit(message) == limit


def test_other_errors_are_not_taken_for_a_refusal_as_too_long() -> None:
    assert not is_overflow(400, "response_format json_schema is not supported", None)
    assert not is_overflow(500, "maximum context length is 8192 tokens", None)


# -- reviewing a long paper by sections -----------------------------------------------------------


def test_a_40_page_paper_on_an_8k_model_is_reviewed_by_sections_with_verified_quotes(
    long_paper: Paper,
) -> None:
    calls: list[str] = []
    with ScriptedOpenAIServer(reviewing_model(calls), max_prompt_tokens=SMALL) as server:
        review, usage = engine_on(server, context_tokens=SMALL).review(long_paper)
    parts = page_parts(long_paper.pages, paper_chars(SMALL))
    assert server.refused == 0  # planned within the window: no request was refused
    assert calls.count("part") == len(parts) >= 4 and calls.count("reduce") >= 1
    assert "whole" not in calls
    assert review.strengths and review.weaknesses and review.suggestions
    assert_review_is_grounded(long_paper, review.model_copy(update={"dropped": []}))
    assert any(INVENTED[:40] in d for d in review.dropped)
    assert not any(INVENTED in p for p in review.suggestions)
    assert usage == {
        "input_tokens": server.prompt_tokens,
        "output_tokens": server.completion_tokens,
    }


def test_a_part_may_quote_only_the_pages_it_was_shown(long_paper: Paper) -> None:
    """A point of part 1 quoting a sentence printed on the last page is dropped: the part could
    not have read it."""
    last = sentences_on(long_paper.pages[-3])[0]
    calls: list[str] = []
    inner = reviewing_model(calls)

    def respond(request: dict[str, Any]) -> Reply:
        reply = inner(request)
        text = request_text(request)
        if "is part 1 of" in text and reply.content:
            answer = json.loads(reply.content)
            answer["strengths"].append(quoted("Cites the last pages.", last, 1))
            return structured(request, answer)
        return reply

    with ScriptedOpenAIServer(respond, max_prompt_tokens=SMALL) as server:
        review, _ = engine_on(server, context_tokens=SMALL).review(long_paper)
    assert any("Cites the last pages" in d for d in review.dropped)
    assert not any(last[:40] in p for p in review.strengths)


def test_the_same_paper_on_a_large_context_is_reviewed_in_one_call(long_paper: Paper) -> None:
    calls: list[str] = []
    with ScriptedOpenAIServer(reviewing_model(calls, invent=False)) as server:
        review, usage = engine_on(server, context_tokens=128_000).review(long_paper)
    assert calls == ["whole"]
    assert_review_is_grounded(long_paper, review.model_copy(update={"dropped": []}))
    assert usage["input_tokens"] == server.prompt_tokens > 0


@pytest.mark.parametrize("style", ["openai", "llama.cpp"])
def test_a_server_that_refuses_as_too_long_makes_the_engine_plan_again(
    long_paper: Paper, style: str
) -> None:
    """The engine believes in a 64k window; the server has 8k. Its refusal (naming the window,
    or not) makes the engine plan for less, by sections, and the review completes."""
    calls: list[str] = []
    with ScriptedOpenAIServer(
        reviewing_model(calls), max_prompt_tokens=SMALL, overflow_style=style
    ) as server:
        engine = engine_on(server, context_tokens=65_536)
        review, _ = engine.review(long_paper)
        summary, _ = engine.summarize(long_paper, 300)
    assert server.refused >= 1
    assert engine.context_tokens <= SMALL
    assert calls.count("part") >= 4
    assert review.strengths and count_words(summary.text) == 300


def test_a_window_too_small_for_any_request_fails_the_step_with_the_servers_reason(
    long_paper: Paper,
) -> None:
    with (
        ScriptedOpenAIServer(reviewing_model([]), max_prompt_tokens=500) as server,
        pytest.raises(ModelCallError, match="refused a request longer than its context"),
    ):
        engine_on(server, context_tokens=4_096).review(long_paper)
    assert server.refused >= 1


# -- the whole saga on a small model -----------------------------------------------------------


@pytest.fixture
def small_model() -> Iterator[ScriptedOpenAIServer]:
    calls: list[str] = []
    review_and_summary = reviewing_model(calls)
    report = {
        "is_valid": True,
        "found": [
            {"part": "abstract", "heading": "Abstract", "page": 1},
            {"part": "introduction", "heading": "1 INTRODUCTION", "page": 1},
            {"part": "body", "heading": "2 BACKGROUND AND RELATED WORK", "page": 4},
            {
                "part": "method",
                "heading": "4 PAPER PLAIN: READING SUPPORT FOR MEDICAL RESEARCH PAPERS",
                "page": 12,
            },
            {"part": "conclusion", "heading": "9 CONCLUSION", "page": 29},
            {"part": "references", "heading": "REFERENCES", "page": 30},
        ],
        "missing": [],
        "reason": "All parts are present.",
    }

    def respond(request: dict[str, Any]) -> Reply:
        if wants_schema(request) == "ValidationReport":
            return structured(request, report)
        return review_and_summary(request)

    with ScriptedOpenAIServer(respond, max_prompt_tokens=SMALL) as server:
        yield server


def test_the_paper_saga_completes_on_an_8k_model(
    small_model: ScriptedOpenAIServer, corpus: Path, tmp_path: Path
) -> None:
    engine = engine_on(small_model, context_tokens=SMALL)
    definition = paper_saga_definition(engine=engine, outputs_dir=tmp_path)
    with open_checkpointer("memory://") as checkpointer:
        app = build_saga_graph(definition).compile(checkpointer=checkpointer)
        view = run_saga(app, {"paper": str(corpus / LONG_PAPER)}, saga_id="small-model")
    assert view["status"] == "completed", view["reason"]
    assert small_model.refused == 0
    assert view["usage"] == {
        "input_tokens": small_model.prompt_tokens,
        "output_tokens": small_model.completion_tokens,
    }
    assert len((tmp_path / "small-model" / "summary.txt").read_text().split()) == 300
