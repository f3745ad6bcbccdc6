"""What a step service works from: the saga's input and earlier results, read from its own history.

An event is a claim by the participant that emitted it, about its own step. So the saga's
input comes from its start event, each step's result from that step's own success event, and
the compensations so far from each step's own compensation event, among the events the
saga's history admitted (:func:`~sagagraph.choreography.admission.fold_history`). The copies a
triggering message carries (its ``input``, others' ``results``) are never used: a step that
lies can lie about itself only, and never choose where another step writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sagagraph.choreography.messages import SagaMessage
from sagagraph.choreography.topology import Choreography
from sagagraph.saga.protocol import StepRecord


@dataclass(frozen=True)
class SagaFacts:
    """A saga as its history tells it, at the moment a step service handles one of its events."""

    input: Mapping[str, Any] = field(default_factory=dict)
    """The input its start event carried."""
    fail_at: str | None = None
    """The step its start event asked to fail (``--fail-at``)."""
    results: Mapping[str, StepRecord] = field(default_factory=dict)
    """Each committed step's result, from that step's own success event (undone ones left out)."""
    compensated: tuple[str, ...] = ()
    """Steps whose compensation ran, in log order."""


def facts_from_history(
    choreography: Choreography, accepted: Mapping[str, SagaMessage]
) -> SagaFacts:
    """The facts of a saga from its admitted events by type (in log order)."""
    start = accepted.get(choreography.start_event)
    results: dict[str, StepRecord] = {}
    for role in choreography.roles:
        done = accepted.get(role.success_event)
        if done is not None and done["step"] == role.name and role.name in done["results"]:
            results[role.name] = done["results"][role.name]
    compensated: list[str] = []
    for event in accepted.values():
        step = event["step"]
        if event["kind"] == "compensated" and event["ran_compensation"] and step is not None:
            compensated.append(step)
            results.pop(step, None)
    return SagaFacts(
        input=dict(start["input"]) if start is not None else {},
        fail_at=start["fail_at"] if start is not None else None,
        results=results,
        compensated=tuple(compensated),
    )


def facts_from_message(message: SagaMessage) -> SagaFacts:
    """The facts as one message tells them: only for a step service handed events without a bus
    log to judge them by (unit tests), which trusts what it is handed."""
    return SagaFacts(
        input=dict(message["input"]),
        fail_at=message["fail_at"],
        results=dict(message["results"]),
        compensated=tuple(message["compensated"]),
    )
