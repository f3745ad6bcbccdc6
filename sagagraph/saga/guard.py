"""The guard of the LLM router: a proposed next step runs only when it is defined and due now.

:func:`guard` is a pure function of the proposal and the saga's progress. It accepts

- a defined step that is due now and has not committed yet (in a chain: exactly the first
  step not committed), or
- :data:`FINISH` (``"finish"``), once every step has committed;

and rejects everything else with a reason: a name that is not a step (``formatting_agent``,
``publish``, and also graph nodes that are not steps, such as ``compensate`` or ``__end__``),
a step that skips ahead, a repeat of a committed step, finishing early, and anything at all
once a step halted the saga (an invalid paper: the saga must compensate, not continue).

A saga with optional or alternative steps (``points=``, see :mod:`sagagraph.saga.routes`)
allows every option open at its next points, and finishing once only optional points are
left; an option that can no longer run (the other alternative of a choice made, an optional
step passed by) is ``excluded``.

Normalisation: surrounding whitespace is stripped and ASCII case is folded, so ``"Reviewer "`` and
``"FINISH"`` mean ``reviewer`` and ``finish``. This cannot confuse two steps, because step names
are lowercase identifiers by construction (:class:`~sagagraph.saga.protocol.SagaDefinition`),
and the supervisor records the raw proposal next to the normalised one. Nothing else is
normalised: quotes, punctuation, inner spaces or hyphens (``"formatting-agent"``) are rejected.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

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
class Point:
    """One point of a saga with optional or alternative steps (see :mod:`sagagraph.saga.routes`)."""

    steps: tuple[str, ...]
    """The step that runs here, or the alternatives of which exactly one runs."""
    optional: bool = False
    """True when the point may be passed by (an optional step)."""


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
