"""Who listens to what: the subscription map, derived from a saga definition's ordered steps.

Step ``i`` subscribes to step ``i-1``'s success event (the saga's start event for the first
step) and to step ``i+1``'s compensation event (the last step has none). It emits its own
success event when it commits, and its own compensation event when it failed, halted the saga,
or undid its work. The saga is completed when the last step's success event is seen and rolled
back when the first step's compensation event is seen.

Event names come from :class:`EventNames`: a generic default (``saga_started``,
``<step>_done``, ``<step>_compensated``) that a saga definition may rename
(:attr:`~sagagraph.saga.protocol.SagaDefinition.event_names`; the paper app's map then reads
exactly as the design's table).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from sagagraph.errors import ConfigurationError
from sagagraph.saga.names import CHOREOGRAPHY
from sagagraph.saga.protocol import SagaDefinition, Step

_EVENT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
"""Event names are routing keys: no dots or wildcards, so a topic binding matches exactly."""


@dataclass(frozen=True)
class EventNames:
    """The events a saga type uses; any name not given here takes its generic default."""

    start: str = "saga_started"
    """Emitted by whoever starts a saga; the first step subscribes to it."""
    done: Mapping[str, str] = field(default_factory=dict)
    """Success event by step name (default ``<step>_done``)."""
    compensated: Mapping[str, str] = field(default_factory=dict)
    """Failure, halt or compensation event by step name (default ``<step>_compensated``)."""

    def done_of(self, step: str) -> str:
        return self.done.get(step, f"{step}_done")

    def compensated_of(self, step: str) -> str:
        return self.compensated.get(step, f"{step}_compensated")

    def compensation_failed_of(self, step: str) -> str:
        """Emitted when a step's compensation still fails after its retries (operator needed)."""
        return f"{step}_compensation_failed"


def event_names_for(definition: SagaDefinition) -> EventNames:
    """The event names ``definition`` carries (:attr:`SagaDefinition.event_names`), else the
    generic defaults."""
    renamed = definition.event_names
    steps = definition.step_names
    generic = {"saga_started", *(f"{s}_{kind}" for s in steps for kind in ("done", "compensated"))}
    unknown = sorted(set(renamed) - generic)
    if unknown:
        raise ConfigurationError(
            f"saga {definition.name!r}: event_names renames unknown events {unknown} "
            f"(known: {', '.join(sorted(generic))})"
        )
    return EventNames(
        start=renamed.get("saga_started", "saga_started"),
        done={s: renamed[f"{s}_done"] for s in steps if f"{s}_done" in renamed},
        compensated={
            s: renamed[f"{s}_compensated"] for s in steps if f"{s}_compensated" in renamed
        },
    )


@dataclass(frozen=True)
class StepRole:
    """One step's place in the choreography: what it hears and what it says."""

    step: Step
    """The step this service runs."""
    index: int
    """Position of the step in the saga (0 for the first)."""
    forward_trigger: str
    """Event that makes this step execute."""
    compensation_trigger: str | None
    """Event that makes this step compensate (the next step's compensation event)."""
    success_event: str
    """Emitted when the step commits."""
    compensation_event: str
    """Emitted when the step failed, halted the saga, or was compensated."""
    compensation_failed_event: str
    """Emitted when the step's compensation gives up: the saga needs an operator."""
    next_step: str | None
    """The step that reacts to ``success_event`` (None for the last step)."""
    previous_step: str | None
    """The step that reacts to ``compensation_event`` (None for the first step)."""

    @property
    def name(self) -> str:
        return self.step.name

    @property
    def subscriptions(self) -> tuple[str, ...]:
        """Routing keys this step service's queue is bound to."""
        if self.compensation_trigger is None:
            return (self.forward_trigger,)
        return (self.forward_trigger, self.compensation_trigger)

    @property
    def is_first(self) -> bool:
        return self.previous_step is None

    @property
    def is_last(self) -> bool:
        return self.next_step is None


@dataclass(frozen=True)
class Choreography:
    """A saga definition's subscription map."""

    definition: SagaDefinition
    """The saga the map was derived from."""
    names: EventNames
    """The event names in use."""
    roles: tuple[StepRole, ...]
    """One role per step, in step order."""

    @property
    def saga(self) -> str:
        return self.definition.name

    @property
    def start_event(self) -> str:
        return self.names.start

    @property
    def completed_event(self) -> str:
        """Seeing this event means the saga completed."""
        return self.roles[-1].success_event

    @property
    def rolled_back_event(self) -> str:
        """Seeing this event means the saga rolled back."""
        return self.roles[0].compensation_event

    def role(self, step: str) -> StepRole:
        for r in self.roles:
            if r.name == step:
                return r
        raise ConfigurationError(
            f"saga {self.saga!r} has no step {step!r} (steps: {', '.join(self.step_names)})"
        )

    @property
    def step_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.roles)

    @property
    def event_types(self) -> tuple[str, ...]:
        """Every event type of this saga, the start event first."""
        types = [self.start_event]
        for r in self.roles:
            types += [r.success_event, r.compensation_event, r.compensation_failed_event]
        return tuple(types)

    def table(self) -> list[dict[str, object]]:
        """The map as DESIGN.md's rows: agent, subscribes to, emits on success, on failure."""
        return [
            {
                "agent": r.name,
                "subscribes_to": list(r.subscriptions),
                "emits_on_success": r.success_event,
                "emits_on_failure": r.compensation_event,
            }
            for r in self.roles
        ]


def derive_choreography(
    definition: SagaDefinition, names: EventNames | None = None
) -> Choreography:
    """The subscription map of ``definition``; ConfigurationError when two events share a name."""
    definition.check(mode=CHOREOGRAPHY)
    names = names if names is not None else event_names_for(definition)
    steps = definition.steps
    roles: list[StepRole] = []
    for i, step in enumerate(steps):
        previous = steps[i - 1].name if i > 0 else None
        following = steps[i + 1].name if i + 1 < len(steps) else None
        roles.append(
            StepRole(
                step=step,
                index=i,
                forward_trigger=names.done_of(previous) if previous else names.start,
                compensation_trigger=names.compensated_of(following) if following else None,
                success_event=names.done_of(step.name),
                compensation_event=names.compensated_of(step.name),
                compensation_failed_event=names.compensation_failed_of(step.name),
                next_step=following,
                previous_step=previous,
            )
        )
    choreography = Choreography(definition, names, tuple(roles))
    types = choreography.event_types
    for event in types:
        if not isinstance(event, str) or not _EVENT_NAME.match(event):
            raise ConfigurationError(
                f"event name {event!r} in saga {definition.name!r}: use lowercase letters, "
                "digits and '_', starting with a letter (it is a routing key)"
            )
    duplicates = sorted({t for t in types if types.count(t) > 1})
    if duplicates:
        raise ConfigurationError(
            f"saga {definition.name!r}: event names used twice: {', '.join(duplicates)}"
        )
    return choreography
