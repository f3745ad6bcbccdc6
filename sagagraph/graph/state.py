"""The saga's LangGraph state: plain data only, so every checkpointer can store it.

:class:`SagaState` is the saga's fields, as nodes read and write them and as the JSON view
is made of them; :class:`SagaChannels` is how LangGraph stores them: the inputs and the status
in a channel each, every other field in one ``record`` (:mod:`sagagraph.state_layout` says
why, and converts between the two).

Each field has its rule, whether a channel or a field of the record: ``events``,
``compensated`` and ``skipped`` are appended to (the audit trail), ``results`` are merged (a
compensation removes its step's), ``usage`` is summed, and any other field is replaced.
Derived fields (``completed``, ``outputs``) are not stored: :func:`saga_view` computes them.

Parallel steps (``Step.after``) may write ``status``, ``failure``, ``halted`` and ``reason`` in
the same superstep; a plain LangGraph field refuses two writes at once, so writes that arrive
together are settled by a fixed rule (:class:`OneOf`, :class:`RecordChannel`), and a later
superstep still replaces the value as usual.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Self, TypedDict, TypeVar, cast

from langgraph.channels import BinaryOperatorAggregate, LastValue

from sagagraph.saga.protocol import StepRecord, Usage
from sagagraph.saga.view import Event, FailureRecord, Status


def merge_results(
    left: dict[str, StepRecord] | None, right: dict[str, StepRecord | None] | None
) -> dict[str, StepRecord]:
    """Merge step results; a ``None`` value removes that step's result (its compensation ran)."""
    merged = dict(left or {})
    for step, record in (right or {}).items():
        if record is None:
            merged.pop(step, None)
        else:
            merged[step] = record
    return merged


def add_usage(left: dict[str, Usage] | None, right: dict[str, Usage] | None) -> dict[str, Usage]:
    """Sum token usage per step; tokens stay counted after a compensation."""
    merged = dict(left or {})
    for step, usage in (right or {}).items():
        before = merged.get(step, {"input_tokens": 0, "output_tokens": 0})
        merged[step] = {
            "input_tokens": before["input_tokens"] + usage.get("input_tokens", 0),
            "output_tokens": before["output_tokens"] + usage.get("output_tokens", 0),
        }
    return merged


T = TypeVar("T")


class OneOf(LastValue[T]):
    """A last-value field that accepts several writes in one superstep and keeps ``pick`` of them.

    One write per superstep behaves exactly like a plain field. Writes that arrive together
    (sibling steps) come in LangGraph's task order (sorted by task path: for step nodes, by
    step name), so the pick is the same on every run and every resume, and ``failure`` and
    ``reason`` picked with :func:`_first` come from the same step.
    """

    __slots__ = ("pick",)

    def __init__(
        self, typ: Any, key: str = "", pick: Callable[[Sequence[T]], T] | None = None
    ) -> None:
        super().__init__(typ, key)
        self.pick: Callable[[Sequence[T]], T] = pick if pick is not None else _first

    def __eq__(self, value: object) -> bool:
        return isinstance(value, OneOf) and value.pick is self.pick

    def __hash__(self) -> int:
        return hash(self.pick)

    def copy(self) -> Self:
        empty = super().copy()
        empty.pick = self.pick
        return empty

    def from_checkpoint(self, checkpoint: Any) -> Self:
        empty = super().from_checkpoint(checkpoint)
        empty.pick = self.pick
        return empty

    def update(self, values: Sequence[T]) -> bool:
        if not values:
            return False
        self.value = values[0] if len(values) == 1 else self.pick(values)
        return True


def _first(values: Sequence[T]) -> T:
    """The first of writes that arrive together (by step name): one failure or halt is shown;
    compensation still cleans up every step that failed (see ``pending_compensations``)."""
    return values[0]


STATUS_PRECEDENCE: dict[str, int] = {
    "queued": 0,
    "running": 0,
    "completed": 1,
    "compensating": 2,
    "rolled_back": 3,
    "resolved_by_operator": 3,
    "compensation_failed": 4,
}
"""Which status wins when siblings write at once: a failure (compensating) beats a sibling's
success, and needing an operator beats everything."""


def _strongest_status(values: Sequence[Status]) -> Status:
    return max(values, key=lambda s: STATUS_PRECEDENCE.get(s, 0))


class SagaState(TypedDict, total=False):
    """The fields of one saga run by the orchestration graph, as its nodes see them.

    LangGraph stores them as :class:`SagaChannels`; ``saga_fields(get_state(...).values)``
    (:func:`sagagraph.state_layout.saga_fields`) reads them back from a snapshot.
    """

    saga_id: str
    """The saga's id; also the LangGraph thread id."""
    saga: str
    """Name of the saga definition."""
    input: dict[str, Any]
    """The saga's input (small: paths and parameters, never a paper's full text)."""
    mode: str
    """``orchestration``."""
    router: str
    """``deterministic`` or ``llm``."""
    status: Annotated[Status, OneOf(str, pick=_strongest_status)]
    """Where the saga is in its lifecycle."""
    reason: Annotated[str | None, OneOf(str)]
    """Why the saga did not complete, in one line."""
    fail_at: str | None
    """Step into which a failure is injected (``--fail-at``), for demos and tests."""
    results: Annotated[dict[str, StepRecord], merge_results]
    """Results of the steps that are committed now, by step name."""
    halted: Annotated[dict[str, Any] | None, OneOf(dict)]
    """The step that halted the saga on purpose, its reason and data."""
    failure: Annotated[FailureRecord | None, OneOf(dict)]
    """The step that failed after its retries, with its error and attempts."""
    compensation_failure: FailureRecord | None
    """The compensation that still fails after its retries, waiting for an operator."""
    skipped: Annotated[list[dict[str, Any]], operator.add]
    """Compensations an operator chose to skip: step, note, error, what was left behind."""
    compensated: Annotated[list[str], operator.add]
    """Compensations, in the order they ran."""
    events: Annotated[list[Event], operator.add]
    """Append-only audit trail."""
    usage: Annotated[dict[str, Usage], add_usage]
    """Tokens spent, per step."""
    route: dict[str, Any] | None
    """LLM router bookkeeping: the step chosen last and how many proposals were rejected."""


class SagaRecord(TypedDict, total=False):
    """The fields of :class:`SagaState` that LangGraph keeps in the ``record`` channel."""

    saga: str
    mode: str
    router: str
    reason: str | None
    results: dict[str, StepRecord]
    events: list[Event]
    halted: dict[str, Any] | None
    failure: FailureRecord | None
    compensation_failure: FailureRecord | None
    skipped: list[dict[str, Any]]
    compensated: list[str]
    usage: dict[str, Usage]
    route: dict[str, Any] | None


_APPENDED = frozenset({"events", "compensated", "skipped"})
_FIRST_OF_SIBLINGS = frozenset({"reason", "halted", "failure"})
"""Record fields that keep the first of sibling writes (by step name), as :func:`_first`
does for a field of its own: one failure or halt is shown, with its reason."""


def merge_record(left: SagaRecord | None, right: SagaRecord | None) -> SagaRecord:
    """The record after an update: each field by its rule (module docstring)."""
    merged: dict[str, Any] = dict(left or {})
    update = cast(dict[str, Any], right or {})
    for key, value in update.items():
        if key in _APPENDED:
            merged[key] = [*(merged.get(key) or ()), *(value or ())]
        elif key == "results":
            merged[key] = merge_results(merged.get(key), value)
        elif key == "usage":
            merged[key] = add_usage(merged.get(key), value)
        else:
            merged[key] = value
    return cast(SagaRecord, merged)


def _siblings(updates: Sequence[SagaRecord]) -> SagaRecord:
    """Record updates that arrive in one superstep, in task order, as one update."""
    combined: dict[str, Any] = {}
    for update in updates:
        written = cast(dict[str, Any], update)
        for key, value in written.items():
            if key not in combined:
                combined[key] = value
            elif key in _APPENDED:
                combined[key] = [*combined[key], *(value or ())]
            elif key == "results":
                combined[key] = {**combined[key], **(value or {})}
            elif key == "usage":
                combined[key] = add_usage(combined[key], value)
            elif key not in _FIRST_OF_SIBLINGS:
                combined[key] = value
    return cast(SagaRecord, combined)


class RecordChannel(BinaryOperatorAggregate[SagaRecord]):
    """The ``record`` channel: each update merged in by :func:`merge_record`; updates that
    arrive in one superstep (sibling steps) are combined first, in task order, the first
    failure, halt and reason kept (:data:`_FIRST_OF_SIBLINGS`)."""

    def __init__(self, typ: Any = dict, operator: Any = merge_record) -> None:
        super().__init__(typ, operator)

    def update(self, values: Sequence[SagaRecord]) -> bool:
        if len(values) > 1:
            values = [_siblings(values)]
        return super().update(values)


class SagaChannels(TypedDict, total=False):
    """The LangGraph state schema of a saga graph: :class:`SagaState` in five channels."""

    saga_id: str
    input: dict[str, Any]
    fail_at: str | None
    status: Annotated[Status, OneOf(str, pick=_strongest_status)]
    record: Annotated[SagaRecord, RecordChannel()]
