"""Routing: one :class:`Router` protocol for the declared rules, the LLM router and the blackboard's
controller, the rules themselves, and the guard every proposal goes through.

A router answers a :class:`RouteQuestion` (the steps it may choose among, what committed, their
results) with a :class:`Choice`: the next step, ``finish``, or nothing acceptable (the saga then
compensates), with the ``route`` events that record how it chose. A router that needs a model
call answers with a flow (:mod:`sagagraph.saga.drivers`) that yields it, so the same decision
runs under ``invoke`` and ``ainvoke``; :func:`deciding` takes either answer. The deterministic
router is :class:`RulesRouter`; the LLM router (:class:`sagagraph.graph.llm_router.LLMRouter`)
checks every proposal with the guard (:func:`guard`).

A definition whose steps are all required is a chain: one step at each point. A step may
instead be optional (``Step(optional=True)``: it runs only when chosen) or one alternative of a
choice (``Step(choice="review")``: consecutive steps with the same choice name form one point at
which exactly one of them runs). :func:`route_points` turns a definition into its points; the
guard (:func:`guard` with ``points=``) allows exactly the options open at each point, whoever
proposes them.

The deterministic router decides by the rules the definition declares (:func:`next_by_rules`):
``Step.when`` predicates over the saga's route facts (:func:`facts_for`), which are
``SagaDefinition.route_facts`` of the committed results, or each committed step's data.

The guard (the LLM router's, and choreography's admission) lets a proposed next step run only
when it is defined and due now. :func:`guard` is a pure function of the proposal and the saga's
progress. It accepts

- a defined step that is due now and has not committed yet (in a chain: exactly the first
  step not committed), or
- :data:`FINISH` (``"finish"``), once every step has committed;

and rejects everything else with a reason: a name that is not a step (``formatting_agent``,
``publish``, and also graph nodes that are not steps, such as ``compensate`` or ``__end__``),
a step that skips ahead, a repeat of a committed step, finishing early, and anything at all
once a step halted the saga (an invalid paper: the saga must compensate, not continue).

A saga with optional or alternative steps (``points=``) allows every option open at its next
points, and finishing once only optional points are left; an option that can no longer run
(the other alternative of a choice made, an optional step passed by) is ``excluded``.

Normalisation: surrounding whitespace is stripped and ASCII case is folded, so ``"Reviewer "`` and
``"FINISH"`` mean ``reviewer`` and ``finish``. This cannot confuse two steps, because step names
are lowercase identifiers by construction (:class:`~sagagraph.saga.protocol.SagaDefinition`),
and the supervisor records the raw proposal next to the normalised one. Nothing else is
normalised: quotes, punctuation, inner spaces or hyphens (``"formatting-agent"``) are rejected.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from sagagraph.saga.drivers import Flow
from sagagraph.saga.protocol import (
    Point,
    SagaDefinition,
    Step,
    StepRecord,
    StepResult,
    Usage,
)
from sagagraph.saga.view import Event, make_event

FINISH = "finish"
"""The token a router proposes to end the saga once every step has committed."""

RejectionKind = Literal[
    "empty", "malformed", "undefined", "skip", "repeat", "early_finish", "halted", "excluded"
]
"""Why a proposal was rejected, as a category that can be counted. ``excluded``: an option
that can no longer run (an alternative of a choice already made, an optional step passed by)."""


@dataclass(frozen=True)
class Accepted:
    """The proposal names a step that may run now, or :data:`FINISH`."""

    step: str
    """The (normalised) step name, or ``"finish"``."""


@dataclass(frozen=True)
class Rejected:
    """The proposal must not be followed."""

    reason: str
    """One line saying what is wrong and what would be allowed."""
    kind: RejectionKind
    """The category of the rejection."""


Verdict = Accepted | Rejected


@dataclass(frozen=True)
class Options:
    """What may happen now at a saga's points, given what committed."""

    allowed: list[str]
    """The steps that may run now (and ``finish`` when every point left is optional)."""
    excluded: set[str]
    """Steps that can no longer run: alternatives not chosen, optional steps passed by."""
    rest: list[Point]
    """The points not passed yet, in order."""

    @property
    def required(self) -> list[str]:
        """The points left that are not optional, each as ``a`` or ``a or b``."""
        return [_label(p.steps) for p in self.rest if not p.optional]


def _label(point: tuple[str, ...]) -> str:
    return " or ".join(point)


def open_options(points: Sequence[Point], committed: Collection[str]) -> Options:
    """The options at ``points`` once ``committed`` have committed.

    Every point up to the last one with a committed step is passed: its other steps are
    excluded. From the next point on, each point's steps are allowed up to and including the
    first point that is not optional; when every point left is optional, finishing is allowed.
    """
    done = set(committed)
    last = max((i for i, p in enumerate(points) if done & set(p.steps)), default=-1)
    excluded = {s for p in points[: last + 1] for s in p.steps if s not in done}
    rest = points[last + 1 :]
    allowed: list[str] = []
    for point in rest:
        allowed += point.steps
        if not point.optional:
            break
    else:
        allowed.append(FINISH)
    return Options(allowed, excluded, list(rest))


def normalise(proposal: str) -> str:
    """The proposal as the guard reads it: surrounding whitespace stripped, ASCII case folded.

    Only ASCII text is lowercased: Unicode case mapping would turn look-alikes (the Kelvin
    sign, a long s) into letters of a step name.
    """
    token = proposal.strip()
    return token.lower() if token.isascii() else token


def allowed_now(
    steps: Sequence[str],
    committed: Collection[str],
    *,
    halted: bool = False,
    points: Sequence[Point] | None = None,
) -> list[str]:
    """Every proposal the guard would accept now, in definition order: the options open at the
    saga's ``points`` (default: a chain, each step required in turn; see
    :func:`open_options`), nothing once the saga halted, ``["finish"]`` when all committed."""
    if halted:
        return []
    return open_options(chain(steps) if points is None else points, committed).allowed


def chain(steps: Sequence[str]) -> tuple[Point, ...]:
    """The points of a saga whose steps all run, in order: one required step at each."""
    return tuple(Point((s,)) for s in steps)


def guard(
    proposal: str,
    steps: Sequence[str],
    committed: Collection[str],
    *,
    halted: bool = False,
    points: Sequence[Point] | None = None,
) -> Verdict:
    """Accept ``proposal`` only when it is a defined step allowed now, or finish when all committed.

    ``steps`` are the saga's step names in definition order, ``committed`` the steps whose
    results are committed now, ``halted`` true when a step stopped the saga on purpose.
    ``points`` describes a saga with optional or alternative steps (:func:`open_options`;
    default: a chain): any option allowed now is accepted, and an option that can no longer
    run is ``excluded``.
    """
    token = normalise(proposal)
    points = chain(steps) if points is None else points
    allowed = allowed_now(steps, committed, halted=halted, points=points)
    hint = f"allowed now: {', '.join(allowed)}" if allowed else "nothing may run now"
    if not token:
        return Rejected(f"empty proposal; {hint}", "empty")
    if halted:
        return Rejected(
            f"{token!r}: the saga was halted by a step and must compensate; nothing may run",
            "halted",
        )
    if token == FINISH:
        if FINISH in allowed:
            return Accepted(FINISH)
        pending = open_options(points, committed).required
        return Rejected(
            f"cannot finish: not committed yet: {', '.join(pending)}; {hint}", "early_finish"
        )
    if token not in steps:
        return Rejected(
            f"{token!r} is not a step of this saga (steps: {', '.join(steps)}; "
            f"or {FINISH!r} when all committed); {hint}",
            "undefined",
        )
    if token in committed:
        return Rejected(f"{token!r} already committed; a step runs once; {hint}", "repeat")
    return _judge_option(token, points, committed, hint)


def _judge_option(
    token: str, points: Sequence[Point], committed: Collection[str], hint: str
) -> Verdict:
    """The verdict on a defined, uncommitted step of a saga with optional or alternative steps."""
    options = open_options(points, committed)
    if token in options.allowed:
        return Accepted(token)
    if token in options.excluded:
        point = next(p for p in points if token in p.steps)
        taken = [s for s in point.steps if s in committed]
        why = (
            f"the choice between {', '.join(point.steps)} is made ({taken[0]} committed)"
            if taken
            else "it is optional and was passed by (a later step committed)"
        )
        return Rejected(f"{token!r} can no longer run: {why}; {hint}", "excluded")
    missing: list[str] = []
    for point in options.rest:
        if token in point.steps:
            break
        if not point.optional:
            missing.append(_label(point.steps))
    return Rejected(
        f"{token!r} skips ahead: {', '.join(missing)} must commit first; {hint}", "skip"
    )


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
