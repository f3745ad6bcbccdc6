"""The Blackboard mode through the Python API: the three reference scenarios on every
checkpointer, the board's versions, the reviewer's refinement and its retraction, the LLM
controller behind the guard, and the openai engine through the real ChatOpenAI client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from sagagraph.agents.paper_agents import REVIEW_FILE, PaperDeps
from sagagraph.agents.paper_blackboard import (
    REFINED_HEADING,
    ReviewRefiner,
    contradicted_claims,
    paper_blackboard_graph,
    render_refinement,
    strip_refinement,
)
from sagagraph.agents.paper_saga import PAPER_STEPS, paper_saga_definition
from sagagraph.agents.pdf.loader import load_paper
from sagagraph.blackboard.board import BoardEntry, add_entries, entry, is_live, withdrawals
from sagagraph.blackboard.builder import build_blackboard_graph
from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.errors import ConfigurationError
from sagagraph.graph.async_runner import arun_saga
from sagagraph.graph.runner import run_saga
from sagagraph.saga.protocol import SagaDefinition, StepContext, StepResult
from tests.agents.test_openai_engine import (
    API_KEY,
    SAMPLE,
    engine_for,
    sample_responder,
    schema_of,
)
from tests.agents.test_paper_saga import COMPLETE, INCOMPLETE, visible_files
from tests.graph.test_llm_router import ScriptedRouter, chat_model
from tests.support.openai_server import Reply, ScriptedOpenAIServer, structured

FILES = ["review.txt", "summary.txt", "validation.txt"]


@contextmanager
def board_app(url: str, definition: SagaDefinition, **options: Any) -> Iterator[Any]:
    with open_checkpointer(url) as checkpointer:
        yield paper_blackboard_graph(definition, **options).compile(checkpointer=checkpointer)


def run_board(
    url: str, outputs: Path, paper: str, *, fail_at: str | None = None, **options: Any
) -> dict[str, Any]:
    definition = paper_saga_definition(outputs_dir=outputs, engine=options.pop("engine", None))
    with board_app(url, definition, **options) as app:
        return run_saga(app, {"paper": paper}, fail_at=fail_at)


def versions(view: dict[str, Any]) -> list[tuple[str, int, str, str]]:
    return [(e["topic"], e["version"], e["author"], e["status"]) for e in view["board"]]


# --- the three reference scenarios, on memory, SQLite and PostgreSQL ------------------------


def test_scenario_1_complete_paper_completes_with_a_refined_review(
    checkpointer_url: str, tmp_path: Path
) -> None:
    outputs = tmp_path / "outputs"
    view = run_board(checkpointer_url, outputs, COMPLETE)
    saga_id = view["saga_id"]
    assert (view["status"], view["mode"], view["reason"]) == ("completed", "blackboard", None)
    assert view["completed"] == list(PAPER_STEPS)
    assert view["compensated"] == []
    assert visible_files(outputs) == [f"{saga_id}/{name}" for name in FILES]
    assert versions(view) == [
        ("validator", 1, "validator", "posted"),
        ("reviewer", 1, "reviewer", "posted"),
        ("summarizer", 1, "summarizer", "posted"),
        ("reviewer", 2, "reviewer", "refined"),
    ]
    # The refined version is a new entry over a changed file, never a silent overwrite.
    first, refined = view["board"][1], view["board"][3]
    assert first["digest"] != refined["digest"]
    assert REFINED_HEADING in (outputs / saga_id / REVIEW_FILE).read_text()
    routes = [
        (e["step"], e["detail"].split(":")[0]) for e in view["events"] if e["action"] == "route"
    ]
    assert routes == [
        ("validator", "rule"),
        ("reviewer", "rule"),
        ("summarizer", "rule"),
        ("reviewer_refinement", "rule"),
        ("finish", "rule"),
    ]


def test_scenario_2_invalid_paper_ends_early_with_nothing_on_the_board(
    checkpointer_url: str, tmp_path: Path
) -> None:
    outputs = tmp_path / "outputs"
    view = run_board(checkpointer_url, outputs, INCOMPLETE)
    assert view["status"] == "rolled_back"
    assert view["reason"] == (
        "not a complete research paper: missing abstract, body, conclusion, references"
    )
    assert (view["completed"], view["compensated"], view["outputs"]) == ([], [], {})
    assert view["board"] == []
    assert visible_files(outputs) == []
    executed = [e["step"] for e in view["events"] if e["action"] == "execute"]
    assert executed == ["validator"]  # the reviewer and summarizer are never called


def test_scenario_3_summarizer_failure_retracts_every_contribution(
    checkpointer_url: str, tmp_path: Path
) -> None:
    outputs = tmp_path / "outputs"
    view = run_board(checkpointer_url, outputs, COMPLETE, fail_at="summarizer")
    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["summarizer", "reviewer", "validator"]
    assert (view["completed"], view["outputs"]) == ([], {})
    assert visible_files(outputs) == []
    assert versions(view) == [
        ("validator", 1, "validator", "posted"),
        ("reviewer", 1, "reviewer", "posted"),
        ("reviewer", 2, "reviewer", "withdrawn"),
        ("validator", 2, "validator", "withdrawn"),
    ]
    board = view["board"]
    assert not any(is_live(board, topic) for topic in PAPER_STEPS)
    assert all("InjectedFailure" in e["note"] for e in board if e["status"] == "withdrawn")


def test_the_async_driver_runs_the_same_board(tmp_path: Path) -> None:
    definition = paper_saga_definition(outputs_dir=tmp_path / "outputs")
    app = paper_blackboard_graph(definition).compile(checkpointer=InMemorySaver())
    view = asyncio.run(arun_saga(app, {"paper": COMPLETE}, saga_id="async-board"))
    assert view["status"] == "completed"
    assert [e["version"] for e in view["board"]] == [1, 1, 1, 2]


# --- the reviewer's refinement -------------------------------------------------------------


def test_a_claim_of_absence_the_summary_contradicts_is_marked() -> None:
    claims = [
        "Section 4 Experiments does not report variance over the runs.",
        "The abstract is long (321 words).",
        "No link to code or data appears in the paper.",
    ]
    summary = (
        "The authors evaluate sagas on three models. They report the variance over the runs "
        "for every model. The conclusion restates the method."
    )
    marks = contradicted_claims(claims, summary)
    assert marks == [
        "Section 4 Experiments does not report variance over the runs. -- the summary says: "
        "They report the variance over the runs for every model."
    ]


def test_a_section_named_in_both_is_not_a_contradiction() -> None:
    claim = "Results in '5 Experiments: Passage Retrieval' are reported without variance."
    summary = "Passage retrieval experiments select candidate contexts for readers."
    assert contradicted_claims([claim], summary) == []


def test_refining_twice_reads_the_same_and_stripping_restores_the_first_version() -> None:
    review = "Review of: X\n\nWeaknesses\n- no ablation\n"
    once = render_refinement(review, ["no ablation -- the summary says: An ablation."])
    assert render_refinement(once, ["no ablation -- the summary says: An ablation."]) == once
    assert strip_refinement(once) == review


def test_a_failed_refinement_is_retracted_and_the_board_still_solves_the_problem(
    tmp_path: Path,
) -> None:
    outputs = tmp_path / "outputs"
    view = run_board("memory://", outputs, COMPLETE, fail_at="reviewer_refinement")
    saga_id = view["saga_id"]
    assert view["status"] == "completed", view["reason"]
    assert (view["compensated"], view["failure"]) == ([], None)
    assert versions(view) == [
        ("validator", 1, "validator", "posted"),
        ("reviewer", 1, "reviewer", "posted"),
        ("summarizer", 1, "summarizer", "posted"),
    ]
    trail = [(e["step"], e["action"], e["outcome"]) for e in view["events"]]
    assert trail[-3:] == [
        ("reviewer_refinement", "execute", "error"),
        ("reviewer_refinement", "compensate", "ok"),
        ("finish", "route", "ok"),
    ]
    review = (outputs / saga_id / REVIEW_FILE).read_text()
    assert REFINED_HEADING not in review
    assert visible_files(outputs) == [f"{saga_id}/{name}" for name in FILES]


def test_the_refinement_compensation_puts_the_first_review_back(tmp_path: Path) -> None:
    from sagagraph.agents.store import OutputStore

    store = OutputStore(tmp_path)
    path = store.write("s1:reviewer", REVIEW_FILE, "Review of: X\n- no ablation\n")
    path.write_text(render_refinement(path.read_text(), []))
    results = {
        "reviewer": StepResult(data={"weaknesses": ["no ablation"]}, output=str(path)),
        "summarizer": StepResult(data={"text": "An ablation."}),
    }
    ctx = StepContext("s1", "reviewer_refinement", {}, results, deps=PaperDeps(None, None, store))
    ReviewRefiner().compensate(ctx, None)
    ReviewRefiner().compensate(ctx, None)  # idempotent
    assert path.read_text() == "Review of: X\n- no ablation\n"


# --- the board's reducer -------------------------------------------------------------------


def test_a_version_posted_again_after_a_crash_is_kept_once() -> None:
    first = entry([], "reviewer", "reviewer", "posted", note="3 strengths")
    again = entry([], "reviewer", "reviewer", "posted", note="3 strengths")
    board = add_entries(add_entries([], [first]), [again])
    assert [(e["topic"], e["version"]) for e in board] == [("reviewer", 1)]
    refined: BoardEntry = entry(board, "reviewer", "reviewer", "refined", note="marked")
    board = add_entries(board, [refined])
    assert [e["version"] for e in board] == [1, 2]
    gone = withdrawals(board, ["reviewer", "summarizer"], "retracted: test")
    assert [(e["topic"], e["version"], e["status"]) for e in gone] == [("reviewer", 3, "withdrawn")]


def test_a_refinement_must_revisit_a_topic_of_the_definition(tmp_path: Path) -> None:
    from sagagraph.agents.paper_blackboard import paper_refinements
    from sagagraph.blackboard.refinement import Refinement

    definition = paper_saga_definition(outputs_dir=tmp_path)
    (refine,) = paper_refinements(definition.step("reviewer"))
    wrong = Refinement(refine.step, topic="publisher", after=("summarizer",))
    with pytest.raises(ConfigurationError, match="topic 'publisher' must be one"):
        build_blackboard_graph(definition, refinements=[wrong])


# --- the LLM controller behind the guard, through ChatOpenAI over HTTP ---------------------


@pytest.fixture
def router_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(ScriptedRouter()) as server:
        yield server


def test_the_llm_controller_picks_sources_behind_the_guard(
    router_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    router_server.responder = ScriptedRouter(["publisher", "summarizer"])
    view = run_board(
        "memory://",
        tmp_path / "outputs",
        COMPLETE,
        router="llm",
        router_model=chat_model(router_server),
    )
    assert (view["status"], view["router"]) == ("completed", "llm")
    rejected = [e["detail"] for e in view["events"] if e["outcome"] == "rejected"]
    assert len(rejected) == 2
    assert "'publisher' is not a step" in rejected[0]
    assert "'summarizer' skips ahead" in rejected[1]
    executed = [e["step"] for e in view["events"] if e["action"] == "execute"]
    assert executed == ["validator", "reviewer", "summarizer", "reviewer_refinement"]
    assert [e["version"] for e in view["board"]] == [1, 1, 1, 2]
    routing = view["usage_by_step"]["supervisor"]
    assert routing["input_tokens"] == router_server.prompt_tokens > 0
    # The router saw step names and progress only, never the paper.
    assert all("Abstract" not in json.dumps(r["messages"]) for r in router_server.requests)


def test_a_router_that_proposes_only_nonsense_is_overruled_by_the_fallback(
    router_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    router_server.responder = ScriptedRouter(["publish"] * 10)  # two per decision, five decisions
    view = run_board(
        "memory://",
        tmp_path / "outputs",
        COMPLETE,
        router="llm",
        router_model=chat_model(router_server),
    )
    assert view["status"] == "completed"
    fallbacks = [e["step"] for e in view["events"] if e["detail"].startswith("fallback:")]
    assert fallbacks == ["validator", "reviewer", "summarizer", "reviewer_refinement", "finish"]
    assert len(router_server.requests) == 10
    assert [e["version"] for e in view["board"]] == [1, 1, 1, 2]


# --- the openai engine through the real ChatOpenAI client ----------------------------------


def openai_responder(
    *, summary_mentions: str = "", verdict: dict[str, Any] | None = None
) -> Callable[[dict[str, Any]], Reply]:
    """The sample paper's well-behaved model, with a summary that may contradict the review."""
    base = sample_responder(load_paper(SAMPLE))

    def respond(request: dict[str, Any]) -> Reply:
        kind = schema_of(request)
        if verdict is not None and kind == "ValidationReport":
            return structured(request, verdict)
        if kind == "Summary" and summary_mentions:
            sentences = [f"The paper shows result number {i} about sagas." for i in range(48)]
            return structured(request, {"text": " ".join([summary_mentions, *sentences])})
        return base(request)

    return respond


def test_scenario_1_on_the_openai_engine_marks_what_the_summary_contradicts(
    tmp_path: Path,
) -> None:
    mention = "The experiments report the variance over the runs of every model."
    with ScriptedOpenAIServer(openai_responder(summary_mentions=mention)) as server:
        view = run_board("memory://", tmp_path / "outputs", str(SAMPLE), engine=engine_for(server))
    assert view["status"] == "completed", view["reason"]
    refined = view["board"][-1]
    assert (refined["topic"], refined["version"], refined["status"]) == ("reviewer", 2, "refined")
    assert refined["marks"] == [
        "Section 4 Experiments does not report variance over the runs. (p.1) "
        '"added a median overhead of 11 milliseconds per step" -- the summary says: ' + mention
    ]
    review = Path(view["outputs"]["reviewer"]).read_text()
    assert "- contradicted: Section 4 Experiments does not report variance" in review
    assert view["usage"] == {
        "input_tokens": server.prompt_tokens,
        "output_tokens": server.completion_tokens,
    }
    assert API_KEY not in json.dumps(view)


def test_scenario_2_on_the_openai_engine_ends_early(tmp_path: Path) -> None:
    verdict = {
        "is_valid": False,
        "found": [{"part": "introduction", "heading": "Introduction", "page": 1}],
        "missing": ["abstract", "body", "method", "conclusion", "references"],
        "reason": "Only an introduction is present.",
    }
    outputs = tmp_path / "outputs"
    with ScriptedOpenAIServer(openai_responder(verdict=verdict)) as server:
        view = run_board("memory://", outputs, INCOMPLETE, engine=engine_for(server))
    assert view["status"] == "rolled_back"
    assert "missing abstract, body, method, conclusion, references" in view["reason"]
    assert (view["board"], view["outputs"], visible_files(outputs)) == ([], {}, [])
    assert [schema_of(r) for r in server.requests] == ["ValidationReport"]


def test_scenario_3_on_the_openai_engine_leaves_no_file(tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    with ScriptedOpenAIServer(openai_responder()) as server:
        view = run_board(
            "memory://", outputs, str(SAMPLE), engine=engine_for(server), fail_at="summarizer"
        )
    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["summarizer", "reviewer", "validator"]
    assert visible_files(outputs) == []
    assert [e["status"] for e in view["board"]] == ["posted", "posted", "withdrawn", "withdrawn"]
