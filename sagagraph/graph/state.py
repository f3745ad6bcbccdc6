"""The saga's LangGraph state, its JSON view, and what its last checkpoint leaves to do.

The state is plain data only, so every checkpointer can store it. Each field is its own LangGraph
channel with its reducer, so ``get_state(cfg).values`` is the saga state as nodes see it, and
LangGraph Studio and the Server show it field by field. Reducers make the state append-only where
the audit trail needs it (``events``, ``compensated``) and let a compensation remove its step's
result (``results``, ``completed``, ``outputs``: a ``None`` value removes a step). A step's commit
and its compensation write these three together (:func:`committed`, :func:`undone`). The undo plan
is state too: ``cleanup`` (the steps that failed, whose partial work is still to clean up) then
``completed`` newest first; a compensation removes its step from both, and nothing reads the plan
from the events.

Parallel steps (``Step.after``) may write ``status``, ``failure``, ``halted`` and ``reason`` in
the same superstep; a plain LangGraph field refuses two writes at once, so these use
:class:`OneOf`: a later superstep still replaces the value as usual, and writes that arrive
together are settled by a fixed rule.

The JSON view of a saga's state values (:func:`~sagagraph.graph.views.state_view`, in a
module of its own that loads no LangGraph) is what ``status`` prints and the runners return.

What a saga's last checkpoint leaves to do includes the work LangGraph hides from ``next``
(:func:`pending_nodes`). A process can die after a step's writes were stored
(``put_writes``) and before the checkpoint that follows them (``put``). LangGraph then leaves
that step out of ``snapshot.next`` (its writes are pending, it will not run again) although
the saga has not moved on: ``next`` is empty, and a runner that reads "empty next" as
"finished" stops there. A saga killed right after its input checkpoint has
``next == ("__start__",)`` and no state values at all. Resuming (``invoke(None)``) handles
both: it applies the pending writes and continues.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Self, TypedDict, TypeVar

from langgraph.channels import LastValue
from langgraph.types import StateSnapshot

from sagagraph.saga.protocol import StepRecord, Usage
from sagagraph.saga.view import Event, FailureRecord, Status

V = TypeVar("V")


def merge_by_step(left: dict[str, V] | None, right: dict[str, V | None] | None) -> dict[str, V]:
    """Merge values by step (results, output paths); a ``None`` value removes that step's
    (its compensation ran)."""
    merged = dict(left or {})
    for step, value in (right or {}).items():
        if value is None:
            merged.pop(step, None)
        else:
            merged[step] = value
    return merged


def track_steps(left: list[str] | None, right: list[str] | dict[str, None] | None) -> list[str]:
    """Step names in the order they were added: a list of names appends those not listed yet; a
    mapping of names to ``None`` removes them (their compensation ran)."""
    steps = list(left or [])
    if isinstance(right, dict):
        return [s for s in steps if s not in right]
    steps += [s for s in right or [] if s not in steps]
    return steps


def committed(step: str, record: StepRecord) -> dict[str, Any]:
    """The state update of a step that committed ``record``."""
    update: dict[str, Any] = {"results": {step: record}, "completed": [step]}
    if record.get("output"):
        update["outputs"] = {step: record["output"]}
    return update


def failed(step: str) -> dict[str, Any]:
    """The state update of a step that failed (or was stopped half way by a rollback): its
    compensation must clean up whatever partial work it left, before the committed steps'."""
    return {"cleanup": [step]}


def undone(step: str) -> dict[str, Any]:
    """The state update that removes ``step`` from the undo plan: its committed result, or
    its partial work (compensated, or skipped by an operator)."""
    return {
        "results": {step: None},
        "completed": {step: None},
        "outputs": {step: None},
        "cleanup": {step: None},
    }


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
    compensation still cleans up every step that failed (each is in ``cleanup``)."""
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
    """State of one saga run by the orchestration graph."""

    saga_id: str
    """The saga's id; also the LangGraph thread id."""
    saga: str
    """Name of the saga definition."""
    label: str | None
    """The saga's label, from its input by the definition's ``label`` (``list`` shows it)."""
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
    results: Annotated[dict[str, StepRecord], merge_by_step]
    """Results of the steps that are committed now, by step name."""
    completed: Annotated[list[str], track_steps]
    """The steps that are committed now, in commit order."""
    cleanup: Annotated[list[str], track_steps]
    """The steps that failed (or were stopped half way by a rollback) and whose partial work
    their compensation has not cleaned up yet, in the order they failed."""
    outputs: Annotated[dict[str, str], merge_by_step]
    """Where each committed step's output is (a path or a URI), by step name."""
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
    pivot: str | None
    """The definition's pivot step, stamped by the first node (absent: the saga has none)."""
    forward_failure: FailureRecord | None
    """A retriable step past the pivot that still fails after its retries: an operator
    decides (``retry_gate``); the saga never compensates."""


class SagaOutput(TypedDict, total=False):
    """What a saga graph built with ``output="view"`` returns (LangGraph Server's
    ``/runs/wait``, Studio): the fields of the JSON view that ``status --json`` prints."""

    saga_id: str
    status: Annotated[Status, OneOf(str, pick=_strongest_status)]
    reason: Annotated[str | None, OneOf(str)]
    completed: Annotated[list[str], track_steps]
    compensated: Annotated[list[str], operator.add]
    outputs: Annotated[dict[str, str], merge_by_step]
    events: Annotated[list[Event], operator.add]


START = "__start__"
"""LangGraph's input node: next when a saga was killed before its first step began."""


def pending_nodes(snapshot: StateSnapshot) -> list[str]:
    """Nodes whose work is not behind a checkpoint yet, in order: the nodes to run next, then
    those that finished and stored their writes before the process stopped."""
    names = list(snapshot.next)
    for task in snapshot.tasks:
        if task.name not in names and not task.interrupts:
            names.append(task.name)
    return names


def needs_settling(snapshot: StateSnapshot) -> bool:
    """True when nothing is left to run in the current superstep but its checkpoint was never
    written: only pending writes, or only the input not yet read. One resume step that stops
    before the next node settles it without running any step again."""
    if not snapshot.tasks or any(task.interrupts for task in snapshot.tasks):
        return False
    return not snapshot.next or tuple(snapshot.next) == (START,)
