"""The participant contract: a step commits a local transaction and owns its compensation.

A :class:`Participant` is any object with a ``name``, an ``execute`` (the forward local
transaction) and a ``compensate`` (its logical inverse, idempotent). The engine hands each call
a :class:`StepContext`; a step never reaches for globals.

What steps use (stores, a chat model, a file loader) is the definition's ``deps``, one object
of the saga author's type, usually a dataclass. Contexts, participants, steps and definitions
are generic in its type, so a step that takes a ``StepContext[TravelDeps]`` sees
``ctx.deps.airline`` typed: ``SagaDefinition.of("trip", steps, deps=TravelDeps(airline))``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final, Generic, Literal, Protocol, TypedDict, runtime_checkable

from typing_extensions import TypeVar

from sagagraph.errors import (
    CompensatedKeyError,
    ConfigurationError,
    DeadlockError,
    InjectedFailure,
    InputError,
    ToolUndoError,
)
from sagagraph.saga.locks import DEFAULT_LOCK_TIMEOUT, LOCK_MODES, LockGrant, LockMode, SagaLocks
from sagagraph.saga.names import BLACKBOARD, CHOREOGRAPHY, MODES, ORCHESTRATION
from sagagraph.saga.names import RESERVED_NAMES as RESERVED_NAMES  # re-exported

ROUTERS = ("deterministic", "llm")
"""The routers a definition may run with (``--router``)."""

PERMANENT_ERRORS: tuple[type[BaseException], ...] = (
    ConfigurationError,
    InputError,
    CompensatedKeyError,
    InjectedFailure,
    ToolUndoError,
    DeadlockError,
)
"""Errors a retry cannot fix."""

StepKind = Literal["compensatable", "pivot", "retriable"]
"""Where a step stands around the saga's pivot: ``compensatable`` (before it: undone on a
failure), ``pivot`` (the go/no-go step: once it commits the saga only goes forward),
``retriable`` (after it: retried until it succeeds or an operator acts; never undone)."""
COMPENSATABLE: Final = "compensatable"
PIVOT: Final = "pivot"
RETRIABLE: Final = "retriable"
STEP_KINDS: tuple[StepKind, ...] = (COMPENSATABLE, PIVOT, RETRIABLE)

Deps = TypeVar("Deps", default=Any)
"""The type of a saga's dependencies (``SagaDefinition.deps``); unnamed, any object."""
DepsOut = TypeVar("DepsOut", covariant=True, default=Any)
DepsIn = TypeVar("DepsIn", contravariant=True, default=Any)


class Usage(TypedDict):
    """Tokens a step spent on model calls."""

    input_tokens: int
    output_tokens: int


class StepRecord(TypedDict):
    """A committed step's result as kept in the saga state (plain data, checkpoint-safe)."""

    data: dict[str, Any]
    output: str | None


@dataclass(frozen=True)
class Point:
    """One point of a saga with optional or alternative steps (:attr:`SagaDefinition.points`)."""

    steps: tuple[str, ...]
    """The step that runs here, or the alternatives of which exactly one runs."""
    optional: bool = False
    """True when the point may be passed by (an optional step)."""


@dataclass(frozen=True)
class StepResult:
    """What ``execute`` returns."""

    data: Mapping[str, Any] = field(default_factory=dict)
    """Structured result, kept in the saga state and visible to later steps."""
    output: str | None = None
    """Path of the output this step wrote, if any (shown under ``outputs``)."""
    halt: bool = False
    """True when the step decided the saga must stop here (not a failure)."""
    reason: str | None = None
    """Why the saga halts; shown as the saga's ``reason``."""
    usage: Usage | None = None
    """Tokens spent by this step's model calls."""

    def record(self) -> StepRecord:
        return {"data": dict(self.data), "output": self.output}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> StepResult:
        return cls(data=dict(record.get("data") or {}), output=record.get("output"))


@dataclass(frozen=True)
class StepContext(Generic[DepsOut]):
    """Everything a step may use: its saga, its input, earlier results and the saga's deps."""

    saga_id: str
    """Id of the saga this call belongs to; every record a store writes carries it."""
    step: str
    """Name of the step being executed or compensated."""
    input: Mapping[str, Any]
    """The saga's input, as given when it started."""
    results: Mapping[str, StepResult]
    """Results of the steps that committed before this one, by step name."""
    attempt: int = 1
    """1 for the first try, 2 for the first retry, and so on."""
    deps: DepsOut = None  # type: ignore[assignment]
    """The saga definition's dependencies (stores, a chat model, a file loader...)."""
    locks: SagaLocks | None = None
    """The saga's semantic locks, in its store's lock table (None: run without a store)."""

    def lock(
        self,
        key: str,
        *,
        on_busy: LockMode = "wait",
        timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> LockGrant:
        """Take a semantic lock on the resource ``key`` until the saga ends (completed, or
        compensated). When another saga holds it: ``wait`` up to ``timeout`` seconds,
        ``fail`` at once (LockBusyError), or ``pending``: return a grant whose ``pending``
        is true and let the step decide (:mod:`sagagraph.saga.locks`)."""
        if self.locks is None:
            raise ConfigurationError(
                f"step {self.step!r}: no lock table (run the saga through a runner with a "
                "checkpointer)"
            )
        return self.locks.acquire(key, self.step, on_busy=on_busy, timeout=timeout)

    @property
    def idempotency_key(self) -> str:
        """``saga_id:step``: the same for every attempt and every re-run after a crash."""
        return f"{self.saga_id}:{self.step}"


@runtime_checkable
class RecordsSettings(Protocol):
    """Deps that say what a saga records of them in its input (``input["settings"]``), so a
    resume from another process or folder uses the same (the paper app: its outputs folder)."""

    def recorded_settings(self) -> Mapping[str, object]:
        """The settings to record, by name (plain JSON values)."""
        ...


@runtime_checkable
class Participant(Protocol[DepsIn]):
    """One local transaction of a saga, using deps of type ``DepsIn``."""

    @property
    def name(self) -> str:
        """The step name (``validator``): lowercase letters, digits and underscores."""
        ...

    def execute(self, ctx: StepContext[DepsIn]) -> StepResult:
        """Commit the forward local transaction; raise to fail the step."""
        ...

    def compensate(self, ctx: StepContext[DepsIn], result: StepResult | None) -> None:
        """Undo ``execute``. Idempotent; ``result`` is None when ``execute`` did not finish."""
        ...


ExecuteFn = Callable[[StepContext[Deps]], StepResult]
RoutePredicate = Callable[[Mapping[str, Any]], bool]
"""A routing rule: called with the saga's route facts, true when the step should run."""
RouteFacts = Callable[[Mapping[str, StepResult]], Mapping[str, Any]]
"""What a definition shows its routers, from the results committed so far."""
CompensateFn = Callable[[StepContext[Deps], StepResult | None], None]


@dataclass(frozen=True)
class FunctionParticipant(Generic[Deps]):
    """A participant made of two functions; ``compensate=None`` declares a no-op compensation."""

    name: str
    execute_fn: ExecuteFn[Deps]
    compensate_fn: CompensateFn[Deps] | None = None

    def execute(self, ctx: StepContext[Deps]) -> StepResult:
        return self.execute_fn(ctx)

    def compensate(self, ctx: StepContext[Deps], result: StepResult | None) -> None:
        if self.compensate_fn is not None:
            self.compensate_fn(ctx, result)


def participant(
    name: str, execute: ExecuteFn[Deps], compensate: CompensateFn[Deps] | None = None
) -> FunctionParticipant[Deps]:
    """Build a participant from functions. ``compensate=None`` is a declared no-op."""
    return FunctionParticipant(name, execute, compensate)


@dataclass(frozen=True)
class Retry:
    """How often, and how patiently, a step's execute or compensate is tried."""

    max_attempts: int = 1
    """Maximum number of attempts, including the first."""
    backoff: float = 0.0
    """Seconds to wait before the first retry."""
    backoff_factor: float = 2.0
    """Multiplier applied to the wait after each retry."""
    max_backoff: float = 5.0
    """Upper bound of the wait between two attempts, in seconds."""
    retry_on: tuple[type[BaseException], ...] = (Exception,)
    """Errors worth retrying; anything else fails at once."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigurationError(f"Retry.max_attempts must be >= 1, got {self.max_attempts}")
        if self.backoff < 0 or self.max_backoff < 0:
            raise ConfigurationError("Retry.backoff and Retry.max_backoff must be >= 0")

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt``."""
        return float(min(self.max_backoff, self.backoff * self.backoff_factor ** (attempt - 1)))

    def should_retry(self, error: BaseException, attempt: int) -> bool:
        """True when another attempt is allowed and could help.

        Errors that no retry can fix (a wrong setting, bad input, a write refused because its
        key was compensated, an injected failure) are never retried.
        """
        if isinstance(error, PERMANENT_ERRORS):
            return False
        return attempt < self.max_attempts and isinstance(error, self.retry_on)


_STEP_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


@dataclass(frozen=True)
class Step(Generic[Deps]):
    """A participant plus how the engine treats it."""

    participant: Participant[Deps]
    """The local transaction and its compensation."""
    retry: Retry = field(default_factory=Retry)
    """Retry policy for ``execute``."""
    compensation_retry: Retry = field(default_factory=lambda: Retry(max_attempts=3, backoff=0.05))
    """Retry policy for ``compensate``; compensations deserve more patience than steps."""
    timeout: float | None = None
    """Seconds ``execute`` may take before it fails with StepTimeoutError (None: no limit)."""
    compensation_timeout: float | None = None
    """Seconds one ``compensate`` attempt may take before it counts as failed (None: no limit).
    A hung undo then goes through ``compensation_retry`` and, if still failing, escalates to an
    operator instead of blocking its saga for ever."""
    can_halt: bool = False
    """True when ``execute`` may return ``halt=True`` to end the saga early on purpose; a halt
    from a step not declared so fails the step (ConfigurationError) and the saga compensates."""
    after: tuple[str, ...] | None = None
    """The steps this one needs, all defined before it; None: the previous step (a chain).
    Steps that do not need each other may run in parallel under deterministic orchestration;
    ``()`` is allowed only for the first step (a saga has one start)."""
    optional: bool = False
    """True when the step runs only when chosen: the deterministic router runs it when
    ``when`` holds, the LLM router may propose it or pass it by. Once a later step has
    committed, a step passed by is excluded for good."""
    choice: str | None = None
    """The name of the choice this step is one alternative of: consecutive steps with the same
    ``choice`` form one point of the saga at which exactly one of them runs."""
    when: RoutePredicate | None = None
    """The deterministic rule, over the saga's route facts (:attr:`SagaDefinition.route_facts`):
    an optional step runs when it holds; the first alternative of a choice whose ``when``
    holds is chosen, else the choice's default (its alternative without ``when``). A rule
    that raises counts as not holding. The guard does not read it: any allowed option is
    legal, the rule only says which one the deterministic router takes."""
    description: str = ""
    """One line saying what the step is for; shown to the LLM router for optional steps and
    alternatives, so that it can choose among them."""
    kind: StepKind = COMPENSATABLE
    """Where the step stands around the pivot (:data:`StepKind`). A ``retriable`` step that
    still fails after its ``retry`` policy waits for an operator (``resolve``: retry, or skip
    having done it by hand); it is never compensated."""
    locks: tuple[str, ...] = ()
    """Resource keys the step locks before it executes, each filled in from the saga's input
    (``"seat:{flight}:{seat}"``) and taken in sorted order; held until the saga ends."""
    on_busy: LockMode = "wait"
    """What the step does when another saga holds one of its ``locks``: ``wait``, ``fail``
    or ``pending`` (:mod:`sagagraph.saga.locks`)."""
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    """Seconds the step waits for a held key of its ``locks`` before it fails."""

    @property
    def name(self) -> str:
        return self.participant.name


@dataclass(frozen=True)
class SagaDefinition(Generic[Deps]):
    """An ordered list of steps and the dependencies they share. What is derived from the
    steps (names, points, whether it is a chain) is computed once: routing reads it at every
    step."""

    name: str
    """Name of the saga type (``travel_booking``, ``food_order``)."""
    steps: tuple[Step[Deps], ...]
    """The steps, in the order they run."""
    deps: Deps = None  # type: ignore[assignment]
    """What every step uses, handed to it as ``ctx.deps`` (stores, a chat model...): an object
    of the saga author's type, usually a dataclass. It may implement :class:`RecordsSettings`."""
    check_input: Callable[[Mapping[str, Any]], None] | None = None
    """Called with a new saga's input by ``run_saga`` and ``arun_saga`` before anything is
    written; raises InputError (one line naming the field and the cause) for input the saga
    cannot use, so that no saga is started only to be rolled back. None: any input."""
    label: Callable[[Mapping[str, Any]], str | None] | None = None
    """A short label for a saga, from its input (the paper app: the paper's path): recorded in
    the saga's state and its checkpoint summary, so ``list`` can show it. None: no label."""
    event_names: Mapping[str, str] = field(default_factory=dict)
    """The saga's own names for its choreography events, by generic name (``saga_started``,
    ``<step>_done``, ``<step>_compensated``); a name not given keeps its generic one. They
    travel with the definition, so every process that runs the saga uses the same ones."""
    route_facts: RouteFacts | None = None
    """The facts its routers decide by, from the results committed so far: what ``when``
    rules read and what the LLM router sees (a small, declared view: a paper's text never
    reaches the router). None: each committed step's ``data``, by step name, for the rules,
    and nothing for the LLM router."""

    def __post_init__(self) -> None:
        if not self.steps:
            raise ConfigurationError(f"saga {self.name!r} has no steps")
        names = [s.name for s in self.steps]
        for step_name in names:
            if not isinstance(step_name, str) or not _STEP_NAME.match(step_name):
                raise ConfigurationError(
                    f"step name {step_name!r} in saga {self.name!r} must be lowercase "
                    "letters, digits and underscores, starting with a letter"
                )
            if step_name in RESERVED_NAMES:
                raise ConfigurationError(f"step name {step_name!r} is reserved by sagagraph")
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigurationError(f"saga {self.name!r} defines steps twice: {duplicates}")
        for i, step in enumerate(self.steps):
            self._check_after(step, names[:i])
        if self.has_choices:
            self._check_choices()

    def _check_after(self, step: Step, earlier: list[str]) -> None:
        """One-line error unless ``step.after`` names earlier steps only (a topological order)."""
        if step.after is None:
            return
        where = f"saga {self.name!r}: step {step.name!r} after="
        if not isinstance(step.after, tuple) or not all(isinstance(a, str) for a in step.after):
            raise ConfigurationError(f"{where}{step.after!r}: expected a tuple of step names")
        if not step.after and earlier:
            raise ConfigurationError(f"{where}(): only the first step may need no other step")
        if len(set(step.after)) != len(step.after):
            raise ConfigurationError(f"{where}{step.after!r}: names a step twice")
        for dep in step.after:
            if dep == step.name:
                raise ConfigurationError(f"{where}{step.after!r}: a step cannot need itself")
            if dep not in earlier:
                known = "defined later" if dep in self.step_names else "not defined"
                raise ConfigurationError(
                    f"{where}{step.after!r}: {dep!r} is {known}; "
                    "a step may only need steps defined before it"
                )

    @cached_property
    def pivot(self) -> str | None:
        """The pivot step's name: once it commits the saga can only go forward."""
        return next((s.name for s in self.steps if s.kind == PIVOT), None)

    def _check_kinds(self, router: str, mode: str) -> None:
        """One-line ConfigurationError unless the steps stand in order around the pivot:
        compensatable steps, then at most one pivot, then retriable steps; and the saga runs
        where a pivot is supported (deterministic orchestration of a chain)."""
        where = f"saga {self.name!r}"
        kinds = [s.kind for s in self.steps]
        for step in self.steps:
            if step.kind not in STEP_KINDS:
                raise ConfigurationError(
                    f"{where}: step {step.name!r} kind={step.kind!r}: expected one of "
                    f"{', '.join(STEP_KINDS)}"
                )
            if step.on_busy not in LOCK_MODES:
                raise ConfigurationError(
                    f"{where}: step {step.name!r} on_busy={step.on_busy!r}: expected one of "
                    f"{', '.join(LOCK_MODES)}"
                )
        if kinds.count(PIVOT) > 1:
            raise ConfigurationError(f"{where}: a saga has at most one pivot step")
        pivot = kinds.index(PIVOT) if PIVOT in kinds else len(kinds)
        for i, step in enumerate(self.steps):
            if step.kind == RETRIABLE and i < pivot:
                raise ConfigurationError(
                    f"{where}: retriable step {step.name!r} comes before the pivot; retriable "
                    "steps follow it"
                )
            if step.kind == COMPENSATABLE and i > pivot:
                raise ConfigurationError(
                    f"{where}: compensatable step {step.name!r} comes after the pivot "
                    f"{self.steps[pivot].name!r}; after it nothing can be undone"
                )
            if step.kind != COMPENSATABLE and step.can_halt and i > pivot:
                raise ConfigurationError(
                    f"{where}: step {step.name!r} after the pivot cannot halt the saga"
                )
        if self.pivot is None:
            return
        if mode == CHOREOGRAPHY:
            raise ConfigurationError(f"{where}: a pivot step needs orchestration, not choreography")
        if mode == BLACKBOARD:
            raise ConfigurationError(
                f"{where}: a pivot step needs orchestration, not the blackboard"
            )
        if router != "deterministic":
            raise ConfigurationError(f"{where}: a pivot step needs router='deterministic'")
        if not self.is_chain or self.has_choices:
            raise ConfigurationError(
                f"{where}: a pivot step needs a chain (no Step.after, optional or alternative "
                "steps)"
            )

    @cached_property
    def step_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.steps)

    def dependencies(self, name: str) -> tuple[str, ...]:
        """The steps ``name`` needs: its ``after``, else the step defined before it."""
        names = self.step_names
        index = names.index(self.step(name).name)
        after = self.steps[index].after
        if after is not None:
            return after
        return names[index - 1 : index] if index else ()

    def dependants(self, name: str) -> tuple[str, ...]:
        """The steps that need ``name``, in definition order."""
        return tuple(s for s in self.step_names if name in self.dependencies(s))

    @cached_property
    def is_chain(self) -> bool:
        """True when every step needs exactly the one before it (the default, no parallelism)."""
        names = self.step_names
        return all(
            self.dependencies(n) == names[i - 1 : i] if i else not self.dependencies(n)
            for i, n in enumerate(names)
        )

    @cached_property
    def has_choices(self) -> bool:
        """True when some step is optional or one alternative of a choice."""
        return any(s.optional or s.choice is not None for s in self.steps)

    @cached_property
    def points(self) -> tuple[Point, ...]:
        """The saga's points, in order: each a step, or the alternatives of one choice."""
        points: list[Point] = []
        for step in self.steps:
            previous = self.step(points[-1].steps[0]).choice if points else None
            if step.choice is not None and previous == step.choice:
                points[-1] = Point((*points[-1].steps, step.name))
            else:
                points.append(Point((step.name,), optional=step.optional))
        return tuple(points)

    def _check_choices(self) -> None:
        """One-line ConfigurationError unless the optional and alternative steps make sense.

        They need a chain (no ``Step.after``); the first step is required and alone (a saga
        has one start); a step is not both optional and an alternative; the alternatives of a
        choice are consecutive, at least two, and one of them, the default, has no ``when``.
        """
        where = f"saga {self.name!r}"
        if any(s.after is not None for s in self.steps):
            raise ConfigurationError(
                f"{where}: optional or alternative steps need a chain (no Step.after)"
            )
        first = self.steps[0]
        if first.optional or first.choice is not None:
            raise ConfigurationError(
                f"{where}: the first step {first.name!r} must be required and alone (one start)"
            )
        for step in self.steps:
            if step.optional and step.choice is not None:
                raise ConfigurationError(
                    f"{where}: step {step.name!r} is both optional and an alternative of "
                    f"{step.choice!r}"
                )
        choices = [self.step(p.steps[0]).choice for p in self.points]
        for choice in choices:
            if choice is not None and choices.count(choice) > 1:
                raise ConfigurationError(
                    f"{where}: the alternatives of choice {choice!r} must be consecutive steps"
                )
        for point in self.points:
            steps = [self.step(n) for n in point.steps]
            choice = steps[0].choice
            if choice is None:
                continue
            if len(steps) < 2:
                raise ConfigurationError(
                    f"{where}: choice {choice!r} has one alternative ({steps[0].name!r}); "
                    "a choice needs at least two"
                )
            if all(s.when is not None for s in steps):
                raise ConfigurationError(
                    f"{where}: choice {choice!r} needs a default alternative (one without when=)"
                )

    def check(self, *, router: str = "deterministic", mode: str = ORCHESTRATION) -> None:
        """ConfigurationError unless the saga can run with ``router`` under ``mode``: the one
        place a definition's steps (parallel, optional, alternatives) are checked against how
        it runs. The builders, choreography and the surfaces call it; the steps themselves are
        checked when the definition is made."""
        if mode not in MODES:
            raise ConfigurationError(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")
        if router not in ROUTERS:
            raise ConfigurationError(f"router: expected 'deterministic' or 'llm', got {router!r}")
        self._check_kinds(router, mode)
        where = f"saga {self.name!r}"
        chain = f"{where}: choreography runs steps as a chain;"
        if mode == CHOREOGRAPHY and router != "deterministic":
            raise ConfigurationError(f"{chain} router='llm' needs orchestration or the blackboard")
        if mode == CHOREOGRAPHY and not self.is_chain:
            raise ConfigurationError(f"{chain} parallel steps (Step.after) need orchestration")
        if mode == CHOREOGRAPHY and self.has_choices:
            raise ConfigurationError(
                f"{chain} optional or alternative steps need orchestration or the blackboard"
            )
        if router != "deterministic" and not self.is_chain:
            raise ConfigurationError(
                f"{where}: parallel steps (Step.after) need router='deterministic'"
            )

    def step(self, name: str) -> Step[Deps]:
        for s in self.steps:
            if s.name == name:
                return s
        raise ConfigurationError(f"saga {self.name!r} has no step {name!r}")

    @classmethod
    def of(
        cls,
        name: str,
        participants: Sequence[Participant[Deps] | Step[Deps]],
        deps: Deps = None,  # type: ignore[assignment]
        *,
        check_input: Callable[[Mapping[str, Any]], None] | None = None,
        label: Callable[[Mapping[str, Any]], str | None] | None = None,
        event_names: Mapping[str, str] | None = None,
        route_facts: RouteFacts | None = None,
    ) -> SagaDefinition[Deps]:
        """Build a definition from participants (default policies) or configured steps."""
        steps = tuple(p if isinstance(p, Step) else Step(p) for p in participants)
        return SagaDefinition(
            name,
            steps,
            deps,
            check_input=check_input,
            label=label,
            event_names=dict(event_names or {}),
            route_facts=route_facts,
        )
