"""Optional and alternative steps: the guard allows exactly the open options, the rules decide."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from sagagraph.errors import ConfigurationError
from sagagraph.saga.protocol import SagaDefinition, Step, StepResult, participant
from sagagraph.saga.routes import (
    RULES,
    Accepted,
    Rejected,
    RouteQuestion,
    facts_for,
    guard,
    next_by_rules,
    route_points,
    routing_options,
)


def _p(name: str) -> Any:
    return participant(name, lambda ctx: StepResult())


def adaptive() -> SagaDefinition:
    """validator, then reviewer | survey_reviewer, optional reproducibility, then summarizer."""
    return SagaDefinition.of(
        "papers",
        [
            _p("validator"),
            Step(_p("reviewer"), choice="review", description="empirical papers"),
            Step(
                _p("survey_reviewer"),
                choice="review",
                when=lambda f: f.get("kind") == "survey",
                description="surveys",
            ),
            Step(_p("reproducibility"), optional=True, when=lambda f: bool(f.get("experiments"))),
            _p("summarizer"),
        ],
    )


def verdict(proposal: str, committed: list[str]) -> Accepted | Rejected:
    definition = adaptive()
    return guard(proposal, definition.step_names, committed, points=route_points(definition))


@pytest.mark.parametrize(
    ("proposal", "committed", "expected"),
    [
        ("validator", [], "ok"),
        ("reviewer", [], "skip"),
        ("reviewer", ["validator"], "ok"),
        ("survey_reviewer", ["validator"], "ok"),
        ("reproducibility", ["validator"], "skip"),
        ("summarizer", ["validator"], "skip"),
        ("finish", ["validator"], "early_finish"),
        ("reproducibility", ["validator", "reviewer"], "ok"),
        ("summarizer", ["validator", "reviewer"], "ok"),
        ("finish", ["validator", "reviewer"], "early_finish"),
        ("survey_reviewer", ["validator", "reviewer"], "excluded"),
        ("reviewer", ["validator", "reviewer"], "repeat"),
        ("reproducibility", ["validator", "reviewer", "summarizer"], "excluded"),
        ("finish", ["validator", "reviewer", "summarizer"], "ok"),
        ("finish", ["validator", "survey_reviewer", "reproducibility", "summarizer"], "ok"),
        ("critic", ["validator"], "undefined"),
        ("", ["validator"], "empty"),
    ],
)
def test_guard_allows_exactly_the_open_options(
    proposal: str, committed: list[str], expected: str
) -> None:
    result = verdict(proposal, committed)
    if expected == "ok":
        assert result == Accepted(proposal)
    else:
        assert isinstance(result, Rejected)
        assert result.kind == expected, result.reason


def test_skip_names_the_required_points_between() -> None:
    result = verdict("summarizer", ["validator"])
    assert isinstance(result, Rejected)
    assert "reviewer or survey_reviewer must commit first" in result.reason
    assert "allowed now: reviewer, survey_reviewer" in result.reason


def test_halted_saga_allows_nothing_even_options() -> None:
    definition = adaptive()
    result = guard(
        "reviewer",
        definition.step_names,
        ["validator"],
        halted=True,
        points=route_points(definition),
    )
    assert isinstance(result, Rejected) and result.kind == "halted"


@pytest.mark.parametrize(
    ("committed", "facts", "expected"),
    [
        (["validator"], {"kind": "empirical"}, "reviewer"),
        (["validator"], {"kind": "survey"}, "survey_reviewer"),
        (["validator", "reviewer"], {"experiments": True}, "reproducibility"),
        (["validator", "reviewer"], {"experiments": False}, "summarizer"),
        (["validator", "reviewer", "reproducibility"], {}, "summarizer"),
        (["validator", "reviewer", "summarizer"], {"experiments": True}, "finish"),
    ],
)
def test_rules_choose_by_the_facts(
    committed: list[str], facts: dict[str, Any], expected: str
) -> None:
    assert next_by_rules(adaptive(), committed, facts).step == expected


def test_a_rule_that_raises_does_not_hold() -> None:
    definition = SagaDefinition.of(
        "t",
        [
            _p("a"),
            Step(_p("b"), optional=True, when=lambda f: f["missing"] > 1),
            _p("c"),
        ],
    )
    choice = next_by_rules(definition, ["a"], {})
    assert choice.step == "c"
    assert "KeyError" in choice.detail


def test_router_options_describe_the_alternatives() -> None:
    options = routing_options(adaptive(), ["validator"])
    assert [o["step"] for o in options] == ["reviewer", "survey_reviewer"]
    assert options[0] == {
        "step": "reviewer",
        "kind": "alternative",
        "choice": "review",
        "description": "empirical papers",
    }
    tail = routing_options(adaptive(), ["validator", "reviewer", "summarizer"])
    assert tail == [{"step": "finish", "kind": "finish"}]


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([Step(_p("a"), optional=True), _p("b")], "must be required and alone"),
        ([_p("a"), Step(_p("b"), choice="x"), _p("c")], "a choice needs at least two"),
        (
            [_p("a"), Step(_p("b"), choice="x"), _p("c"), Step(_p("d"), choice="x")],
            "must be consecutive",
        ),
        (
            [
                _p("a"),
                Step(_p("b"), choice="x", when=lambda f: True),
                Step(_p("c"), choice="x", when=lambda f: False),
            ],
            "needs a default alternative",
        ),
        ([_p("a"), Step(_p("b"), choice="x", optional=True), Step(_p("c"), choice="x")], "both"),
        ([_p("a"), Step(_p("b"), optional=True, after=("a",))], "need a chain"),
    ],
)
def test_definitions_that_cannot_route_are_refused(steps: list[Step], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        SagaDefinition.of("bad", list(steps))


def test_route_facts_that_raise_give_no_facts_and_the_defaults() -> None:
    definition = SagaDefinition.of(
        "t",
        [
            _p("a"),
            Step(_p("b"), choice="x"),
            Step(_p("c"), choice="x", when=lambda f: True),
        ],
        route_facts=lambda results: {"n": 1 / 0},
    )
    assert facts_for(definition, {}) == {}
    assert next_by_rules(definition, ["a"], {}).step == "c"  # c's rule holds on any facts


def test_the_rules_router_records_what_its_rules_decided() -> None:
    definition = replace(adaptive(), route_facts=lambda results: results["validator"].data)
    records: Any = {"validator": {"data": {"kind": "survey"}, "output": None}}
    choice = RULES.decide(RouteQuestion(definition, ["validator"], records))
    assert choice.step == "survey_reviewer"
    (event,) = choice.events
    assert (event["step"], event["action"], event["outcome"]) == ("survey_reviewer", "route", "ok")
    assert event["detail"].startswith("rules: choice review: survey_reviewer")
    plain = SagaDefinition.of("plain", [_p("a"), _p("b")])
    assert RULES.decide(RouteQuestion(plain, ["a"])).events == []  # nothing to choose


@pytest.mark.parametrize(
    ("router", "mode", "parallel", "choices", "message"),
    [
        ("llm", "choreography", False, False, "router='llm' needs orchestration or the blackboard"),
        ("deterministic", "choreography", True, False, "parallel steps .* need orchestration"),
        ("llm", "orchestration", True, False, "need router='deterministic'"),
        ("deterministic", "choreography", False, True, "need orchestration or the blackboard"),
        ("sideways", "orchestration", False, False, "router: expected 'deterministic' or 'llm'"),
        ("deterministic", "ballet", False, False, "mode: expected one of"),
    ],
)
def test_a_definition_checks_how_it_may_run_in_one_place(
    router: str, mode: str, parallel: bool, choices: bool, message: str
) -> None:
    steps: list[Any] = [_p("a"), _p("b")]
    if parallel:
        steps = [_p("a"), Step(_p("b"), after=("a",)), Step(_p("c"), after=("a",))]
    if choices:
        steps = [_p("a"), Step(_p("b"), optional=True)]
    definition = SagaDefinition.of("d", steps)
    with pytest.raises(ConfigurationError, match=message) as refused:
        definition.check(router=router, mode=mode)
    assert "\n" not in str(refused.value)
    SagaDefinition.of("chain", [_p("a"), _p("b")]).check(router="llm", mode="blackboard")
