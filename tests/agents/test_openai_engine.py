"""The ``openai`` engine through the real ChatOpenAI client, over HTTP, against a scripted
OpenAI-compatible server on 127.0.0.1 (tests/support/openai_server.py). No test touches the
internet."""

from __future__ import annotations

import json
import logging
import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI

from sagagraph import build_saga_graph, open_checkpointer, run_saga
from sagagraph.agents.engine import Review, Summary, ValidationReport
from sagagraph.agents.models import make_chat_model
from sagagraph.agents.openai_engine import OpenAIEngine
from sagagraph.agents.paper import Paper, PaperTooShortError, Section
from sagagraph.agents.paper_saga import paper_saga_definition
from sagagraph.agents.pdf.loader import load_paper
from sagagraph.agents.words import count_words
from sagagraph.errors import (
    ConfigurationError,
    MalformedModelOutput,
    ModelCallError,
    StepError,
    StepTimeoutError,
)
from sagagraph.prompts import load_prompt, prompt_fields, render_prompt
from tests.support.openai_server import (
    SAMPLE_REVIEW,
    Reply,
    ScriptedOpenAIServer,
    quoted,
    request_text,
    structured,
    wants_schema,
)

API_KEY = "sk-test-SECRET-5f3a9c1e"
BODY_MARKER = "zebracrossing"
"""A word only the body sections use: the validator's request must not contain it."""

SECTIONS = [
    (
        "Abstract",
        1,
        "We study saga transactions for language model agents and show that "
        "compensation keeps every run all or nothing.",
    ),
    ("1 Introduction", 1, "Agents that write files leave debris when they fail half way."),
    ("2 Related Work", 2, "Sagas were proposed for long lived transactions in databases."),
    ("3 Method", 2, "Each agent commits a local transaction and owns its compensation."),
    ("4 Experiments", 3, "We ran one thousand sagas with injected failures on three models."),
    ("5 Conclusion", 4, "Compensation in reverse order leaves no partial outputs behind."),
    ("References", 4, "[1] H. Garcia-Molina and K. Salem. Sagas. SIGMOD 1987."),
]


def body_sentences(heading: str, n: int) -> str:
    topic = heading.split(" ", 1)[-1].lower()
    return " ".join(
        f"Sentence {i} of the {topic} section discusses the {BODY_MARKER} design in detail."
        for i in range(1, n + 1)
    )


def make_paper(sections: list[tuple[str, int, str]], *, padding: int = 8) -> Paper:
    """A paper built in memory: each section gets its lead sentence plus ``padding`` more."""
    built = []
    for heading, page, lead in sections:
        extra = "" if heading == "Abstract" else " " + body_sentences(heading, padding)
        built.append(Section(heading=heading, page=page, text=lead + extra))
    last_page = max(s.page for s in built)
    pages = []
    for page in range(1, last_page + 1):
        parts = ["Sagas for Agents"] if page == 1 else []
        parts += [f"{s.heading}\n{s.text}" for s in built if s.page == page]
        pages.append("\n\n".join(parts))
    return Paper(
        source="papers/sagas.md",
        title="Sagas for Agents",
        pages=tuple(pages),
        sections=tuple(built),
    )


@pytest.fixture
def paper() -> Paper:
    return make_paper(SECTIONS)


GOOD_REPORT = {
    "is_valid": True,
    "found": [
        {"part": "abstract", "heading": "Abstract", "page": 1},
        {"part": "introduction", "heading": "1 Introduction", "page": 1},
        {"part": "body", "heading": "2 Related Work", "page": 2},
        {"part": "method", "heading": "3 Method", "page": 2},
        {"part": "conclusion", "heading": "5 Conclusion", "page": 4},
        {"part": "references", "heading": "References", "page": 4},
    ],
    "missing": [],
    "reason": "All required parts are present.",
}
GOOD_REVIEW = {
    "strengths": [
        quoted(
            "Section 3 Method states the compensation contract clearly.",
            "Each agent commits a local transaction and owns its compensation.",
            2,
        )
    ],
    "weaknesses": [
        quoted(
            "Section 4 Experiments does not report variance over the runs.",
            "We ran one thousand sagas with injected failures",
            3,
        )
    ],
    "suggestions": [
        quoted(
            "Add a table of failure rates per model to Section 4.",
            "injected failures on three models",
            3,
        )
    ],
}


def rendered(points: list[dict[str, Any]]) -> list[str]:
    """Scripted points as the engine returns them: ``point (p.N) "quote"``."""
    return [f'{p["point"]} (p.{p["page"]}) "{p["quote"]}"' for p in points]


def model_summary(words: int) -> str:
    """A model's summary of exactly ``words`` words (at least 8): whole 8-word sentences, and
    the remainder in a last, longer sentence."""
    sentences = [f"The paper shows result number {i} about sagas." for i in range(words // 8)]
    extra = words - 8 * len(sentences)
    if extra:
        sentences[-1] = sentences[-1][:-1] + " and" + " more" * (extra - 1) + "."
    return " ".join(sentences)


def schema_of(request: dict[str, Any]) -> str | None:
    """The schema a request asks for, including json_mode (named in the prompt)."""
    name = wants_schema(request)
    if name:
        return name
    found = re.search(r"a valid (\w+) under this JSON schema", request_text(request))
    return found.group(1) if found else None


def well_behaved(summary_words: int = 300) -> Callable[[dict[str, Any]], Reply]:
    """A model that answers every schema correctly; summaries of ``summary_words`` words."""

    def respond(request: dict[str, Any]) -> Reply:
        kind = schema_of(request)
        if kind == "ValidationReport":
            return structured(request, GOOD_REPORT)
        if kind == "QuotedReview":
            return structured(request, GOOD_REVIEW)
        if kind == "Summary":
            return structured(request, {"text": model_summary(summary_words)})
        return Reply(status=400, content=f"unexpected request for {kind!r}")

    return respond


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(well_behaved()) as s:
        yield s


def engine_for(server: ScriptedOpenAIServer, **kw: Any) -> OpenAIEngine:
    chat = make_chat_model("gpt-4o-mini", base_url=server.base_url, api_key=API_KEY, max_retries=0)
    return OpenAIEngine(chat, **kw)


def messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = request["messages"]
    return result


# -- the well-behaved path ----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["json_schema", "function_calling", "json_mode"])
def test_engine_validates_reviews_and_summarises_a_complete_paper(
    server: ScriptedOpenAIServer, paper: Paper, method: str
) -> None:
    engine = engine_for(server, method=method)
    seen = {"input": 0, "output": 0}

    def spent_since_last() -> tuple[int, int]:
        spent = (server.prompt_tokens - seen["input"], server.completion_tokens - seen["output"])
        seen["input"], seen["output"] = server.prompt_tokens, server.completion_tokens
        return spent

    report, usage = engine.validate(paper)
    assert isinstance(report, ValidationReport) and report.is_valid
    assert [f.part for f in report.found][:2] == ["abstract", "introduction"]
    assert (usage["input_tokens"], usage["output_tokens"]) == spent_since_last()

    review, usage = engine.review(paper)
    assert isinstance(review, Review)
    assert review.weaknesses == rendered(GOOD_REVIEW["weaknesses"])
    assert review.dropped == []
    assert (usage["input_tokens"], usage["output_tokens"]) == spent_since_last()

    summary, usage = engine.summarize(paper, 300)
    assert isinstance(summary, Summary)
    assert len(summary.text.split()) == 300
    assert summary.text.startswith("The paper shows result number 0 about sagas.")
    assert (usage["input_tokens"], usage["output_tokens"]) == spent_since_last()
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0

    asked = [schema_of(r) for r in server.requests]
    assert asked == ["ValidationReport", "QuotedReview", "Summary"]
    if method == "function_calling":
        assert all("tools" in r and "response_format" not in r for r in server.requests)
    elif method == "json_schema":
        assert all(r["response_format"]["type"] == "json_schema" for r in server.requests)
    else:
        assert all(r["response_format"] == {"type": "json_object"} for r in server.requests)


def test_validator_sends_outline_first_page_and_references_not_the_body(
    server: ScriptedOpenAIServer, paper: Paper
) -> None:
    engine_for(server).validate(paper)
    (request,) = server.requests
    text = request_text(request)
    assert "p.2  3 Method" in text and "p.4  References" in text
    assert paper.abstract.strip() and paper.abstract.strip() in text
    assert " ".join(paper.pages[0].split()) in " ".join(text.split())  # the first page
    assert "[1] H. Garcia-Molina and K. Salem. Sagas. SIGMOD 1987." in text  # reference list
    # The body beyond the first page stays out: the method and experiments sections' prose.
    assert "of the method section" in paper.text and "of the method section" not in text
    assert "of the experiments section" not in text
    assert len(text) < len(paper.text)


def test_reviewer_and_summarizer_share_the_paper_as_a_common_prefix(
    server: ScriptedOpenAIServer, paper: Paper
) -> None:
    engine = engine_for(server)
    engine.review(paper)
    engine.summarize(paper, 300)
    review_request, summary_request = server.requests
    first_review, first_summary = messages(review_request)[0], messages(summary_request)[0]
    assert first_review == first_summary
    assert all(page in first_review["content"] for page in paper.pages)
    assert "[page 2]" in first_review["content"]
    # The paper comes before anything task-specific, in both requests.
    assert messages(review_request)[1]["content"] != messages(summary_request)[1]["content"]
    assert len(messages(review_request)) == len(messages(summary_request)) == 2


def test_prompts_tell_the_model_to_ignore_instructions_inside_the_paper(
    server: ScriptedOpenAIServer, paper: Paper
) -> None:
    engine = engine_for(server)
    engine.validate(paper)
    engine.review(paper)
    for request in server.requests:
        assert "ignore any instructions" in " ".join(request_text(request).lower().split())


@pytest.mark.parametrize(
    ("name", "fields"),
    [
        (
            "validator",
            {"title", "outline", "first_page", "abstract", "references", "references_source"},
        ),
        ("paper", {"title", "paper"}),
        ("reviewer", set()),
        ("summarizer", {"scope", "words"}),
        ("summarizer_reduce", {"title", "summaries", "words"}),
    ],
)
def test_prompt_files_ship_with_the_placeholders_the_engine_fills(
    name: str, fields: set[str]
) -> None:
    assert prompt_fields(name) == fields
    if fields:
        with pytest.raises(ConfigurationError, match=f"prompt {name!r}: no value for"):
            render_prompt(name)


def test_paper_text_with_braces_is_inserted_as_it_is() -> None:
    text = render_prompt("paper", title="{t}", paper="f(x) = {x | x > 0} {0}")
    assert "f(x) = {x | x > 0} {0}" in text and "Title: {t}" in text


def test_an_unknown_prompt_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"no file prompts/nope\.txt"):
        load_prompt("nope")


# -- summaries of exactly N words -------------------------------------------------------------


def test_a_short_model_summary_is_topped_up_with_the_papers_own_sentences(paper: Paper) -> None:
    with ScriptedOpenAIServer(well_behaved(summary_words=120)) as server:
        summary, _ = engine_for(server).summarize(paper, 300)
    assert count_words(summary.text) == 300
    assert summary.text.startswith("The paper shows result number 0")
    assert "compensation keeps every run all or nothing" in summary.text  # from the abstract


def test_a_paper_shorter_than_the_summary_fails_before_any_model_call(
    server: ScriptedOpenAIServer,
) -> None:
    short = make_paper(SECTIONS[:3], padding=1)
    assert count_words(short.text) < 300
    with pytest.raises(
        PaperTooShortError, match=r"papers/sagas.md: \d+ words, too short for a 300-word summary"
    ) as err:
        engine_for(server).summarize(short, 300)
    assert isinstance(err.value, StepError)
    assert server.requests == []


def test_a_long_paper_is_summarised_in_chunks_within_the_budget() -> None:
    long_paper = make_paper(SECTIONS, padding=60)
    budget = 4_000
    assert len(long_paper.text) > 3 * budget
    with ScriptedOpenAIServer(well_behaved(summary_words=200)) as server:
        engine = engine_for(server, context_chars=budget)
        summary, usage = engine.summarize(long_paper, 300)
    assert count_words(summary.text) == 300
    maps = [r for r in server.requests if "<paper>" in request_text(r)]
    reduces = [r for r in server.requests if "<paper_summaries>" in request_text(r)]
    assert len(maps) == len(long_paper.chunks(budget)) >= 4
    assert len(reduces) >= 1
    assert "Part 1:" in request_text(reduces[-1])
    for request in maps:
        paper_part = request_text(request).split("<paper>")[1].split("</paper>")[0]
        assert len(paper_part) <= budget + 100  # the chunk plus its title line
    assert usage == {
        "input_tokens": server.prompt_tokens,
        "output_tokens": server.completion_tokens,
    }


def test_many_chunk_summaries_are_combined_in_rounds_that_end() -> None:
    long_paper = make_paper(SECTIONS, padding=150)
    with ScriptedOpenAIServer(well_behaved(summary_words=300)) as server:
        summary, _ = engine_for(server, context_chars=3_000).summarize(long_paper, 300)
    reduces = [r for r in server.requests if "<paper_summaries>" in request_text(r)]
    assert len(reduces) >= 3  # more than one round was needed
    assert count_words(summary.text) == 300


# -- malformed replies --------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["json_schema", "function_calling", "json_mode"])
@pytest.mark.parametrize(
    "reply",
    [
        "not json",
        {"strengths": [quoted("only this", "We ran one thousand sagas", 3)]},
        {"strengths": [], "weaknesses": GOOD_REVIEW["weaknesses"], "suggestions": []},
    ],
    ids=["not-json", "missing-fields", "empty-list"],
)
def test_a_malformed_reply_raises_malformed_model_output_after_one_repair(
    paper: Paper, method: str, reply: Any
) -> None:
    with (
        ScriptedOpenAIServer(lambda request: structured(request, reply)) as server,
        pytest.raises(MalformedModelOutput) as err,
    ):
        engine_for(server, method=method).review(paper)
    message = str(err.value)
    assert "\n" not in message and len(message) < 400
    assert message.startswith(
        "reviewer: the model's reply is not a valid QuotedReview after 2 attempt"
    )
    assert "errors.pydantic.dev" not in message
    assert len(server.requests) == 2  # the first try and one repair, never more
    assert "Your previous reply was rejected" in request_text(server.requests[1])


def test_no_repair_when_repair_attempts_is_zero(paper: Paper) -> None:
    with (
        ScriptedOpenAIServer(lambda request: Reply(content="not json")) as server,
        pytest.raises(MalformedModelOutput, match="after 1 attempt"),
    ):
        engine_for(server, repair_attempts=0).review(paper)
    assert len(server.requests) == 1


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
def test_a_repaired_reply_succeeds_and_counts_both_calls(paper: Paper, method: str) -> None:
    replies = iter([{"strengths": GOOD_REVIEW["strengths"]}, GOOD_REVIEW])
    with ScriptedOpenAIServer(lambda request: structured(request, next(replies))) as server:
        review, usage = engine_for(server, method=method).review(paper)
    assert review.suggestions == rendered(GOOD_REVIEW["suggestions"])
    assert len(server.requests) == 2
    feedback = messages(server.requests[1])[-1]["content"]
    assert "weaknesses" in feedback and "Field required" in feedback
    if method == "function_calling":
        # The failed call's usage is known only when the client returns the raw reply.
        assert usage["input_tokens"] == server.prompt_tokens
    else:
        assert 0 < usage["input_tokens"] < server.prompt_tokens


def test_a_validator_report_citing_a_heading_not_in_the_outline_is_rejected(paper: Paper) -> None:
    invented = {
        **GOOD_REPORT,
        "found": [*GOOD_REPORT["found"], {"part": "body", "heading": "7 Ablations", "page": 9}],
    }
    with (
        ScriptedOpenAIServer(lambda request: structured(request, invented)) as server,
        pytest.raises(MalformedModelOutput, match="'7 Ablations', which is not in the outline"),
    ):
        engine_for(server).validate(paper)


def test_a_self_contradicting_validator_report_is_rejected(paper: Paper) -> None:
    contradiction = {**GOOD_REPORT, "missing": ["references"]}
    with (
        ScriptedOpenAIServer(lambda request: structured(request, contradiction)) as server,
        pytest.raises(MalformedModelOutput, match="is_valid is true but missing"),
    ):
        engine_for(server).validate(paper)


def test_the_models_invalid_verdict_decides(paper: Paper) -> None:
    invalid = {
        "is_valid": False,
        "found": [{"part": "introduction", "heading": "Introduction", "page": 1}],
        "missing": ["conclusion", "references"],
        "reason": "The paper has no conclusion and no references.",
    }
    with ScriptedOpenAIServer(lambda request: structured(request, invalid)) as server:
        report, _ = engine_for(server).validate(paper)
    assert not report.is_valid and report.missing == ["conclusion", "references"]


def test_an_empty_summary_is_malformed(paper: Paper) -> None:
    with (
        ScriptedOpenAIServer(lambda request: structured(request, {"text": "  "})) as server,
        pytest.raises(MalformedModelOutput, match="summary is empty"),
    ):
        engine_for(server).summarize(paper, 300)


# -- transport failures, and the key never shows ------------------------------------------------


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_a_server_error_is_a_clear_step_error_without_the_key(paper: Paper) -> None:
    with (
        ScriptedOpenAIServer(lambda r: Reply(status=500, content=f"boom near {API_KEY}")) as server,
        pytest.raises(ModelCallError) as err,
    ):
        engine_for(server).review(paper)
    message = str(err.value)
    assert isinstance(err.value, StepError) and not isinstance(err.value, MalformedModelOutput)
    assert "HTTP 500" in message and "reviewer" in message and "gpt-4o-mini" in message
    assert API_KEY not in message and "\n" not in message
    assert len(server.requests) == 1  # the engine does not retry transport errors itself


def test_a_refused_key_is_reported_without_echoing_it(paper: Paper) -> None:
    echo = f"Incorrect API key provided: {API_KEY}"
    with (
        ScriptedOpenAIServer(lambda r: Reply(status=401, content=echo)) as server,
        pytest.raises(ModelCallError, match=r"refused the API key \(HTTP 401\)") as err,
    ):
        engine_for(server).validate(paper)
    assert API_KEY not in str(err.value) and "SECRET" not in str(err.value)


def test_connection_refused_is_a_clear_step_error_without_the_key(
    paper: Paper, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    chat = make_chat_model("gpt-4o-mini", base_url=base_url, api_key=API_KEY, max_retries=0)
    with pytest.raises(ModelCallError, match="cannot reach the model 'gpt-4o-mini' at") as err:
        OpenAIEngine(chat).summarize(paper, 300)
    assert base_url in str(err.value) and "Connection refused" in str(err.value)
    assert API_KEY not in str(err.value) and "\n" not in str(err.value)
    assert API_KEY not in caplog.text


def test_a_hung_server_is_a_step_timeout(paper: Paper) -> None:
    with ScriptedOpenAIServer(lambda r: Reply(content="{}", delay=2.0)) as server:
        chat = make_chat_model(
            "gpt-4o-mini", base_url=server.base_url, api_key=API_KEY, max_retries=0, timeout=0.2
        )
        with pytest.raises(StepTimeoutError, match=r"did not answer within 0\.2s"):
            OpenAIEngine(chat).review(paper)


def test_the_key_stays_out_of_reprs_logs_and_requests(
    server: ScriptedOpenAIServer, paper: Paper, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    engine = engine_for(server)
    engine.validate(paper)
    assert API_KEY not in repr(engine) and API_KEY not in repr(engine.chat)
    assert API_KEY not in caplog.text
    assert API_KEY not in json.dumps(server.requests)
    assert isinstance(engine.chat, ChatOpenAI)


# -- end to end: the paper saga on the openai engine ----------------------------------------------

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "papers" / "complete_paper.md"


def run_paper_saga(
    engine: OpenAIEngine, outputs: Path, saga_id: str, paper: Path = SAMPLE
) -> dict[str, Any]:
    definition = paper_saga_definition(engine=engine, outputs_dir=outputs)
    with open_checkpointer("memory://") as checkpointer:
        app = build_saga_graph(definition).compile(checkpointer=checkpointer)
        return run_saga(app, {"paper": str(paper)}, saga_id=saga_id)


def sample_responder(sample: Paper, *, review: Any = None) -> Callable[[dict[str, Any]], Reply]:
    """A well-behaved model for the sample paper: its report cites the sample's own outline."""
    found = [
        {"part": part, "heading": s.heading, "page": s.page}
        for part, words in [
            ("abstract", ("abstract",)),
            ("introduction", ("introduction",)),
            ("body", ("related", "background")),
            ("method", ("method", "approach")),
            ("conclusion", ("conclusion",)),
            ("references", ("references", "bibliography")),
        ]
        for s in sample.sections
        if any(w in s.heading.lower() for w in words)
    ]
    report = {"is_valid": True, "found": found, "missing": [], "reason": "All parts are present."}

    def respond(request: dict[str, Any]) -> Reply:
        kind = schema_of(request)
        if kind == "ValidationReport":
            return structured(request, report)
        if kind == "QuotedReview":
            return structured(request, SAMPLE_REVIEW if review is None else review)
        return structured(request, {"text": model_summary(330)})

    return respond


def test_the_paper_saga_completes_on_the_openai_engine(tmp_path: Path) -> None:
    sample = load_paper(SAMPLE)
    with ScriptedOpenAIServer(sample_responder(sample)) as server:
        view = run_paper_saga(engine_for(server), tmp_path, "openai-ok")
    assert view["status"] == "completed", view["reason"]
    assert view["completed"] == ["validator", "reviewer", "summarizer"]
    folder = tmp_path / "openai-ok"
    assert sorted(p.name for p in folder.iterdir()) == [
        "review.txt",
        "summary.txt",
        "validation.txt",
    ]
    assert len((folder / "summary.txt").read_text().split()) == 300
    assert view["usage"] == {
        "input_tokens": server.prompt_tokens,
        "output_tokens": server.completion_tokens,
    }
    assert view["usage"]["input_tokens"] > 0
    assert set(view["usage_by_step"]) == {"validator", "reviewer", "summarizer"}
    assert API_KEY not in json.dumps(view)


def test_a_malformed_review_rolls_the_paper_saga_back(tmp_path: Path) -> None:
    sample = load_paper(SAMPLE)
    with ScriptedOpenAIServer(sample_responder(sample, review="not json")) as server:
        view = run_paper_saga(engine_for(server), tmp_path, "openai-bad-review")
    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["reviewer", "validator"]
    assert "MalformedModelOutput" in view["reason"] and "not a valid QuotedReview" in view["reason"]
    assert view["outputs"] == {}
    folder = tmp_path / "openai-bad-review"
    assert not folder.exists() or list(folder.iterdir()) == []
    assert not any(schema_of(r) == "Summary" for r in server.requests)


def test_a_refused_key_rolls_the_saga_back_and_the_key_is_nowhere_in_its_json(
    tmp_path: Path,
) -> None:
    echo = f"Incorrect API key provided: {API_KEY}"
    with ScriptedOpenAIServer(lambda r: Reply(status=401, content=echo)) as server:
        view = run_paper_saga(engine_for(server), tmp_path, "openai-bad-key")
    assert view["status"] == "rolled_back"
    assert "refused the API key" in view["reason"]
    assert API_KEY not in json.dumps(view) and "SECRET" not in json.dumps(view)


def test_the_models_invalid_verdict_ends_the_paper_saga_early(tmp_path: Path) -> None:
    incomplete = SAMPLE.with_name("incomplete_paper.md")
    verdict = {
        "is_valid": False,
        "found": [
            {"part": "introduction", "heading": "Introduction", "page": 1},
            {"part": "method", "heading": "Methodology", "page": 1},
        ],
        "missing": ["abstract", "body", "conclusion", "references"],
        "reason": "Only an introduction and a methodology are present.",
    }
    with ScriptedOpenAIServer(lambda request: structured(request, verdict)) as server:
        view = run_paper_saga(engine_for(server), tmp_path, "openai-invalid", incomplete)
    assert view["status"] == "rolled_back"
    assert "missing abstract, body, conclusion, references" in view["reason"]
    assert view["completed"] == [] and view["outputs"] == {}
    assert [schema_of(r) for r in server.requests] == ["ValidationReport"]
    assert view["usage"]["input_tokens"] == server.prompt_tokens > 0


# -- quotes: a point whose quote is not in the paper is dropped ---------------------------------

INVENTED = quoted(
    "Section 4 reports a 99% success rate on a public benchmark.",
    "achieves a 99% success rate on the public SagaBench benchmark",
)


def test_an_invented_quote_is_sent_back_once_then_dropped_and_recorded_in_events(
    tmp_path: Path,
) -> None:
    """The model invents a quote twice: the saga completes without that point, and the
    reviewer's events say which point was dropped and why."""
    sample = load_paper(SAMPLE)
    inventing = dict(SAMPLE_REVIEW, strengths=[*SAMPLE_REVIEW["strengths"], INVENTED])
    with ScriptedOpenAIServer(sample_responder(sample, review=inventing)) as server:
        view = run_paper_saga(engine_for(server), tmp_path, "openai-invented")
    assert view["status"] == "completed", view["reason"]
    reviews = [r for r in server.requests if schema_of(r) == "QuotedReview"]
    assert len(reviews) == 2  # the first answer and the one sent back
    assert "SagaBench" in request_text(reviews[1]).split("not grounded in the paper")[-1]
    review_text = (tmp_path / "openai-invented" / "review.txt").read_text()
    assert "SagaBench" not in review_text and "99%" not in review_text
    assert "compensating action" in review_text  # the true point stays
    dropped = [e for e in view["events"] if e["action"] == "quote_check"]
    assert {e["step"] for e in dropped} == {"reviewer"}
    assert len(dropped) == 1 and dropped[0]["outcome"] == "dropped"
    assert "quote not found in the paper" in dropped[0]["detail"]
    assert "SagaBench" in dropped[0]["detail"]


def test_a_quote_corrected_after_the_resend_keeps_every_point(paper: Paper) -> None:
    fixed = dict(GOOD_REVIEW)
    replies = iter([dict(GOOD_REVIEW, strengths=[INVENTED]), fixed])
    with ScriptedOpenAIServer(lambda request: structured(request, next(replies))) as server:
        review, _ = engine_for(server).review(paper)
    assert review.strengths == rendered(GOOD_REVIEW["strengths"]) and review.dropped == []
    assert len(server.requests) == 2


def test_a_quote_on_another_page_is_kept_with_its_page_corrected(paper: Paper) -> None:
    moved = dict(GOOD_REVIEW, strengths=[dict(GOOD_REVIEW["strengths"][0], page=4)])
    with ScriptedOpenAIServer(lambda request: structured(request, moved)) as server:
        review, _ = engine_for(server).review(paper)
    assert review.strengths == rendered(GOOD_REVIEW["strengths"])  # p.2, where it is printed
    assert len(server.requests) == 1
