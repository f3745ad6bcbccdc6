"""Routing: one :class:`Router` protocol for the declared rules, the LLM router and the blackboard's
controller, and the rules themselves.

A router answers a :class:`RouteQuestion` (the steps it may choose among, what committed, their
results) with a :class:`Choice`: the next step, ``finish``, or nothing acceptable (the saga then
compensates), with the ``route`` events that record how it chose. A router that needs a model
call answers with a flow (:mod:`sagagraph.saga.drivers`) that yields it, so the same decision
runs under ``invoke`` and ``ainvoke``; :func:`deciding` takes either answer. The deterministic
router is :class:`RulesRouter`; the LLM router (:class:`sagagraph.graph.llm_router.LLMRouter`)
checks every proposal with the guard (:func:`sagagraph.saga.guard.guard`).

A definition whose steps are all required is a chain: one step at each point. A step may
instead be optional (``Step(optional=True)``: it runs only when chosen) or one alternative of a
choice (``Step(choice="review")``: consecutive steps with the same choice name form one point at
which exactly one of them runs). :func:`route_points` turns a definition into its points; the
guard (:func:`sagagraph.saga.guard.guard` with ``points=``) allows exactly the options open at
each point, whoever proposes them.

The deterministic router decides by the rules the definition declares (:func:`next_by_rules`):
``Step.when`` predicates over the saga's route facts (:func:`facts_for`), which are
``SagaDefinition.route_facts`` of the committed results, or each committed step's data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sagagraph.saga.drivers import Flow
from sagagraph.saga.guard import FINISH, Point, open_options
from sagagraph.saga.protocol import SagaDefinition, Step, StepRecord, StepResult, Usage
from sagagraph.saga.view import Event, make_event


def route_points(definition: SagaDefinition) -> tuple[Point, ...]:
    """The points of ``definition``, in order: each a step, or the alternatives of a choice."""
    return definition.points


def facts_for(definition: SagaDefinition, results: Mapping[str, StepResult]) -> dict[str, Any]:
    """The route facts: ``definition.route_facts(results)``, or each result's data by step.

    A ``route_facts`` that raises gives no facts (the rules then take their defaults) rather
    than failing a step that already committed.
    """
    if definition.route_facts is not None:
        try:
            return dict(definition.route_facts(results))
        except Exception:
            return {}
    return {name: dict(result.data) for name, result in results.items()}


def facts_from_records(
    definition: SagaDefinition, records: Mapping[str, StepRecord]
) -> dict[str, Any]:
    """:func:`facts_for` from the saga state's result records."""
    return facts_for(definition, {n: StepResult.from_record(r) for n, r in records.items()})


def holds(step: Step, facts: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether ``step.when`` holds for ``facts``, and a note on why (a rule that raises fails)."""
    if step.when is None:
        return False, "no rule"
    try:
        ok = bool(step.when(facts))
    except Exception as error:
        return False, f"rule raised {type(error).__name__}, taken as not holding"
    return ok, "rule holds" if ok else "rule does not hold"


@dataclass(frozen=True)
class RuleChoice:
    """What the deterministic rules choose next, and why."""

    step: str
    """The step to run next, or ``finish``."""
    detail: str
    """The rules that decided, for the audit trail (empty when no rule was needed)."""


def next_by_rules(
    definition: SagaDefinition, committed: Sequence[str], facts: Mapping[str, Any]
) -> RuleChoice:
    """The next step the declared rules choose once ``committed`` have committed.

    Walking the points still open: an optional step runs when its ``when`` holds, else it is
    passed by; a choice takes its first alternative whose ``when`` holds, else its default; a
    required step runs. ``finish`` when every point left was passed by.
    """
    notes: list[str] = []
    for point in open_options(route_points(definition), committed).rest:
        steps = [definition.step(n) for n in point.steps]
        if point.optional:
            ok, why = holds(steps[0], facts)
            notes.append(f"{steps[0].name}: {'runs' if ok else 'passed by'} ({why})")
            if ok:
                return RuleChoice(steps[0].name, "; ".join(notes))
            continue
        if len(steps) == 1:
            return RuleChoice(steps[0].name, "; ".join(notes))
        for step in steps:
            ok, why = holds(step, facts)
            if ok:
                notes.append(f"choice {step.choice}: {step.name} ({why})")
                return RuleChoice(step.name, "; ".join(notes))
        default = next(s for s in steps if s.when is None)
        notes.append(f"choice {default.choice}: {default.name} (default; no other rule holds)")
        return RuleChoice(default.name, "; ".join(notes))
    return RuleChoice(FINISH, "; ".join(notes))


def routing_options(definition: SagaDefinition, committed: Sequence[str]) -> list[dict[str, Any]]:
    """The options open now, as the LLM router sees them: name, kind and description."""
    options: list[dict[str, Any]] = []
    for name in open_options(route_points(definition), committed).allowed:
        if name == FINISH:
            options.append({"step": FINISH, "kind": "finish"})
            continue
        step = definition.step(name)
        kind = "optional" if step.optional else "alternative" if step.choice else "required"
        option: dict[str, Any] = {"step": name, "kind": kind}
        if step.choice:
            option["choice"] = step.choice
        if step.description:
            option["description"] = step.description
        options.append(option)
    return options


@dataclass(frozen=True)
class RouteQuestion:
    """What a router is asked: the next step of ``definition``, once ``committed`` have."""

    definition: SagaDefinition
    """The steps the router may choose among (and their points, when it has options)."""
    committed: Sequence[str]
    """The steps done so far, in commit order."""
    records: Mapping[str, StepRecord] = field(default_factory=dict)
    """Their results, as the saga's state keeps them: the route facts are read from them."""


@dataclass
class Choice:
    """What a router chose at one decision, and how."""

    step: str | None = None
    """The next step, ``finish``, or None when nothing acceptable was found: the saga then
    compensates what committed."""
    events: list[Event] = field(default_factory=list)
    """The ``route`` events that record the decision (proposals, the rules that decided)."""
    usage: Usage = field(default_factory=lambda: Usage(input_tokens=0, output_tokens=0))
    """Tokens the decision spent on model calls."""
    calls: int = 0
    """Model calls made."""
    rejected: int = 0
    """Proposals the guard rejected."""
    errors: int = 0
    """Model calls that failed."""
    fallback: bool = False
    """True when the fallback decided, after the proposals ran out."""
    last_problem: str = "no proposal"
    """Why the last proposal could not be followed."""


class Router(Protocol):
    """Decides the next step: the declared rules, the LLM router, the blackboard's controller."""

    @property
    def kind(self) -> str:
        """``deterministic``, ``llm`` or ``blackboard``: what the route events and spans say."""
        ...

    def decide(self, question: RouteQuestion) -> Choice | Flow[Choice]:
        """The choice, or a flow that yields what it needs (a model call) and returns it."""
        ...


def deciding(router: Router, question: RouteQuestion) -> Flow[Choice]:
    """``router``'s decision on ``question``, as a flow (a choice made at once returns at once)."""
    decided = router.decide(question)
    if isinstance(decided, Choice):
        return decided
    return (yield from decided)


class RulesRouter:
    """The deterministic router: the rules the definition declares (:func:`next_by_rules`),
    recorded as a ``route`` event when a rule decided something (an option taken or passed)."""

    kind = "deterministic"

    def decide(self, question: RouteQuestion) -> Choice:
        definition = question.definition
        facts = facts_from_records(definition, question.records) if definition.has_choices else {}
        rule = next_by_rules(definition, question.committed, facts)
        if not rule.detail:
            return Choice(rule.step)
        return Choice(rule.step, [make_event(rule.step, "route", "ok", 1, f"rules: {rule.detail}")])


RULES = RulesRouter()
"""The deterministic router."""
