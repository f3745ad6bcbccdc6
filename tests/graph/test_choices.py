"""Sagas with optional and alternative steps, under every router: the route follows the rules
(deterministic, blackboard triggers) or the model's allowed choice (LLM router, the real
ChatOpenAI client over HTTP), and compensation covers exactly the steps that ran."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_openai import ChatOpenAI

from sagagraph.blackboard.builder import build_blackboard_graph
from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.errors import StepError
from sagagraph.graph.builder import build_saga_graph, successors
from sagagraph.graph.routing import RouterOptions
from sagagraph.graph.runner import run_saga
from sagagraph.saga.protocol import SagaDefinition, Step, StepContext, StepResult, participant
from tests.support.openai_server import ScriptedOpenAIServer, request_text, structured


def review_saga(ran: list[str], undone: list[str]) -> SagaDefinition:
    """intake -> (review | critique when the draft is contested) -> optional audit -> publish.

    Input ``{"kind": ..., "audit": bool, "confidence": float, "fail": step}``; ``intake`` copies
    it into its data, so the rules read it as earlier results.
    """

    def step(name: str) -> Any:
        def execute(ctx: StepContext) -> StepResult:
            if ctx.input.get("fail") == name:
                raise StepError(f"{name} failed on purpose")
            ran.append(name)
            data = dict(ctx.input) if name == "intake" else {"by": name}
            if name == "review":
                data["confidence"] = ctx.input.get("confidence", 1.0)
            return StepResult(data=data)

        def compensate(ctx: StepContext, result: StepResult | None) -> None:
            undone.append(name)

        return participant(name, execute, compensate)

    return SagaDefinition.of(
        "review",
        [
            step("intake"),
            Step(step("review"), choice="assess", description="a standard review"),
            Step(
                step("critique"),
                choice="assess",
                when=lambda f: f.get("intake", {}).get("kind") == "contested",
                description="an adversarial critique, for contested drafts",
            ),
            Step(
                step("audit"),
                optional=True,
                when=lambda f: bool(f.get("intake", {}).get("audit")),
                description="checks the numbers",
            ),
            step("publish"),
        ],
    )


def run(definition: SagaDefinition, saga_input: dict[str, Any], **build: Any) -> dict[str, Any]:
    builder = build.pop("builder", build_saga_graph)
    with open_checkpointer("memory://") as saver:
        app = builder(definition, **build).compile(checkpointer=saver)
        return run_saga(app, saga_input)


@pytest.mark.parametrize(
    ("saga_input", "route"),
    [
        ({"kind": "plain"}, ["intake", "review", "publish"]),
        ({"kind": "contested"}, ["intake", "critique", "publish"]),
        ({"kind": "plain", "audit": True}, ["intake", "review", "audit", "publish"]),
        ({"kind": "contested", "audit": True}, ["intake", "critique", "audit", "publish"]),
    ],
)
def test_deterministic_rules_choose_the_route(saga_input: dict[str, Any], route: list[str]) -> None:
    ran: list[str] = []
    view = run(review_saga(ran, []), saga_input)
    assert view["status"] == "completed"
    assert ran == route
    assert view["completed"] == route
    decisions = [e for e in view["events"] if e["action"] == "route"]
    assert decisions, "a rule's decision is in the audit trail"
    assert all(e["detail"].startswith("rules: ") for e in decisions)


@pytest.mark.parametrize(
    ("saga_input", "undone_expected"),
    [
        (
            {"kind": "contested", "audit": True, "fail": "publish"},
            ["publish", "audit", "critique", "intake"],
        ),
        ({"kind": "plain", "fail": "publish"}, ["publish", "review", "intake"]),
        ({"kind": "plain", "audit": True, "fail": "audit"}, ["audit", "review", "intake"]),
    ],
)
def test_compensation_covers_exactly_the_steps_that_ran(
    saga_input: dict[str, Any], undone_expected: list[str]
) -> None:
    ran: list[str] = []
    undone: list[str] = []
    view = run(review_saga(ran, undone), saga_input)
    assert view["status"] == "rolled_back"
    assert view["compensated"] == undone_expected
    assert undone == undone_expected


def test_the_graph_offers_each_step_its_possible_successors() -> None:
    definition = review_saga([], [])
    assert successors(definition, "intake") == ("review", "critique")
    assert successors(definition, "review") == ("audit", "publish")
    assert successors(definition, "publish") == ("__end__",)
    graph = build_saga_graph(definition).compile()
    edges = {(e.source, e.target) for e in graph.get_graph().edges}
    assert {("intake", "critique"), ("review", "audit"), ("audit", "publish")} <= edges


# --- the LLM router: chooses among the allowed options, with the facts in view ---------------


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    script: list[str] = []

    def respond(request: dict[str, Any]) -> Any:
        view = json.loads(request["messages"][-1]["content"])
        allowed = [o["step"] for o in view.get("options", [])]
        proposal = script.pop(0) if script else allowed[0]
        return structured(request, {"next_step": proposal, "reason": "scripted"})

    with ScriptedOpenAIServer(respond) as running:
        running.script = script  # type: ignore[attr-defined]
        yield running


def chat(server: ScriptedOpenAIServer) -> ChatOpenAI:
    return ChatOpenAI(model="gpt-test", base_url=server.base_url, api_key="sk-test", max_retries=0)


def test_llm_router_may_choose_any_allowed_option(server: ScriptedOpenAIServer) -> None:
    """A plain draft the rules would review; the model picks the critique and the audit."""
    server.script[:] = ["intake", "critique", "audit", "publish", "finish"]  # type: ignore[attr-defined]
    ran: list[str] = []
    view = run(review_saga(ran, []), {"kind": "plain"}, router="llm", router_model=chat(server))
    assert view["status"] == "completed"
    assert ran == ["intake", "critique", "audit", "publish"]
    assert not [e for e in view["events"] if e["outcome"] == "rejected"]
    second = json.loads(server.requests[1]["messages"][-1]["content"])
    assert [o["step"] for o in second["options"]] == ["review", "critique"]
    assert "critique" in request_text(server.requests[1])  # the description is shown
    assert "contested drafts" in request_text(server.requests[1])


def test_llm_router_refusals_and_fallback_by_the_rules(server: ScriptedOpenAIServer) -> None:
    """Undefined, premature, excluded and early-finish proposals are refused; after two bad
    proposals the declared rules decide (contested: critique; no audit: publish), never an
    invalid step."""
    server.script[:] = [  # type: ignore[attr-defined]
        "intake",
        "publish",  # skips the assessment
        "finish",  # early; then the rules choose: critique
        "review",  # excluded: the choice is made
        "summarize",  # undefined; then the rules choose: publish (no audit asked for)
        "finish",
    ]
    ran: list[str] = []
    view = run(
        review_saga(ran, []),
        {"kind": "contested"},
        router="llm",
        router_model=chat(server),
        router_options=RouterOptions(max_attempts=2),
    )
    assert view["status"] == "completed"
    assert ran == ["intake", "critique", "publish"]
    rejected = [e["detail"] for e in view["events"] if e["outcome"] == "rejected"]
    kinds = [d.split("(")[1].split(")")[0] for d in rejected]
    assert kinds == ["skip", "early_finish", "excluded", "undefined"]
    fallback = [e for e in view["events"] if "fallback" in e["detail"]]
    assert [e["step"] for e in fallback] == ["critique", "publish"]


# --- the blackboard: the source whose trigger matches the board runs ------------------------


def critic_saga(ran: list[str]) -> SagaDefinition:
    """draft -> review -> a critic only when the review's confidence is low -> publish."""

    def step(name: str) -> Any:
        def execute(ctx: StepContext) -> StepResult:
            ran.append(name)
            if name == "review":
                return StepResult(data={"confidence": ctx.input["confidence"]})
            return StepResult(data={"by": name})

        return participant(name, execute)

    return SagaDefinition.of(
        "critic",
        [
            step("draft"),
            step("review"),
            Step(
                step("critic"),
                optional=True,
                when=lambda f: f.get("review", {}).get("confidence", 1.0) < 0.5,
            ),
            step("publish"),
        ],
    )


@pytest.mark.parametrize(
    ("confidence", "route"),
    [(0.2, ["draft", "review", "critic", "publish"]), (0.9, ["draft", "review", "publish"])],
)
def test_blackboard_controller_follows_the_triggers(confidence: float, route: list[str]) -> None:
    ran: list[str] = []
    view = run(critic_saga(ran), {"confidence": confidence}, builder=build_blackboard_graph)
    assert view["status"] == "completed"
    assert ran == route
    rules = [e["detail"] for e in view["events"] if e["action"] == "route"]
    if confidence < 0.5:
        assert any("critic: runs (rule holds)" in r for r in rules)
    else:
        assert any("critic: passed by" in r for r in rules)


def test_the_async_runner_follows_the_same_rules() -> None:
    import asyncio

    from sagagraph.graph.async_runner import arun_saga

    ran: list[str] = []

    async def go() -> dict[str, Any]:
        with open_checkpointer("memory://") as saver:
            app = build_saga_graph(review_saga(ran, [])).compile(checkpointer=saver)
            return await arun_saga(app, {"kind": "contested", "audit": True})

    view = asyncio.run(go())
    assert view["status"] == "completed"
    assert ran == ["intake", "critique", "audit", "publish"]


def test_blackboard_llm_controller_may_take_an_optional_source(
    server: ScriptedOpenAIServer,
) -> None:
    """Asked among the open options, the model runs the critic although the review is
    confident (legal: the critic is optional), and cannot run it twice or skip the review."""
    server.script[:] = [  # type: ignore[attr-defined]
        "draft",
        "critic",  # skips the review
        "review",
        "critic",
        "critic",  # repeat
        "publish",
        "finish",
    ]
    ran: list[str] = []
    view = run(
        critic_saga(ran),
        {"confidence": 0.9},
        builder=build_blackboard_graph,
        router="llm",
        router_model=chat(server),
    )
    assert view["status"] == "completed"
    assert ran == ["draft", "review", "critic", "publish"]
    kinds = [
        e["detail"].split("(")[1].split(")")[0]
        for e in view["events"]
        if e["outcome"] == "rejected"
    ]
    assert kinds == ["skip", "repeat"]
