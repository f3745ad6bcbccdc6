"""The router guard, as a pure function: what it accepts, what it rejects, and why."""

from __future__ import annotations

import pytest

from sagagraph.saga.routes import FINISH, Accepted, Rejected, allowed_now, guard, normalise

STEPS = ("validator", "reviewer", "summarizer")


def test_accepts_exactly_the_next_step_in_order() -> None:
    assert guard("validator", STEPS, []) == Accepted("validator")
    assert guard("reviewer", STEPS, ["validator"]) == Accepted("reviewer")
    assert guard("summarizer", STEPS, ["validator", "reviewer"]) == Accepted("summarizer")


def test_finish_only_when_every_step_committed() -> None:
    assert guard("finish", STEPS, STEPS) == Accepted(FINISH)
    early = guard("finish", STEPS, ["validator"])
    assert isinstance(early, Rejected)
    assert early.kind == "early_finish"
    assert "reviewer, summarizer" in early.reason


@pytest.mark.parametrize(
    ("proposal", "committed", "kind"),
    [
        ("formatting_agent", ["validator"], "undefined"),
        ("publish", [], "undefined"),
        ("formatting-agent", [], "undefined"),
        ('"reviewer"', ["validator"], "undefined"),
        ("reviewer.", ["validator"], "undefined"),
        ("review er", ["validator"], "undefined"),
        # Graph nodes that are not steps: Command(goto=...) would really go there.
        ("compensate", ["validator"], "undefined"),
        ("supervisor", ["validator"], "undefined"),
        ("escalate", ["validator"], "undefined"),
        ("__end__", STEPS, "undefined"),
        ("END", STEPS, "undefined"),
        ("reviewer", [], "skip"),
        ("summarizer", [], "skip"),
        ("summarizer", ["validator"], "skip"),
        ("validator", ["validator"], "repeat"),
        ("reviewer", ["validator", "reviewer"], "repeat"),
        ("validator", STEPS, "repeat"),
        ("finish", [], "early_finish"),
        ("", [], "empty"),
        ("   ", ["validator"], "empty"),
    ],
)
def test_rejects_with_a_kind_and_a_reason(proposal: str, committed: list[str], kind: str) -> None:
    verdict = guard(proposal, STEPS, committed)
    assert isinstance(verdict, Rejected), verdict
    assert verdict.kind == kind
    assert verdict.reason
    assert "\n" not in verdict.reason


def test_reasons_say_what_is_allowed() -> None:
    verdict = guard("summarizer", STEPS, ["validator"])
    assert isinstance(verdict, Rejected)
    assert "reviewer must commit first" in verdict.reason
    assert "allowed now: reviewer" in verdict.reason
    undefined = guard("publish", STEPS, ["validator"])
    assert isinstance(undefined, Rejected)
    assert "'publish' is not a step" in undefined.reason


def test_nothing_is_allowed_after_a_halt() -> None:
    for proposal in (*STEPS, "finish", "publish"):
        verdict = guard(proposal, STEPS, ["validator"], halted=True)
        assert isinstance(verdict, Rejected)
        assert verdict.kind == "halted"
    assert allowed_now(STEPS, ["validator"], halted=True) == []


@pytest.mark.parametrize(
    ("proposal", "expected"),
    [("Reviewer ", "reviewer"), ("  REVIEWER\n", "reviewer"), ("\tFINISH", FINISH)],
)
def test_case_and_surrounding_whitespace_are_normalised(proposal: str, expected: str) -> None:
    committed = STEPS if expected == FINISH else ["validator"]
    assert guard(proposal, STEPS, committed) == Accepted(expected)


def test_unicode_look_alikes_are_not_normalised() -> None:
    # U+017F LATIN SMALL LETTER LONG S case-folds to "s"; U+212A KELVIN SIGN lowers to "k".
    assert normalise("\u017fummarizer") != "summarizer"
    verdict = guard("\u017fummarizer", STEPS, ["validator", "reviewer"])
    assert isinstance(verdict, Rejected)
    assert verdict.kind == "undefined"


def test_normalised_repeat_is_still_a_repeat() -> None:
    verdict = guard("Reviewer ", STEPS, ["validator", "reviewer"])
    assert isinstance(verdict, Rejected)
    assert verdict.kind == "repeat"


def test_allowed_now_follows_the_definition_order() -> None:
    assert allowed_now(STEPS, []) == ["validator"]
    assert allowed_now(STEPS, ["validator"]) == ["reviewer"]
    assert allowed_now(STEPS, STEPS) == [FINISH]
