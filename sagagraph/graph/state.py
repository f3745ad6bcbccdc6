"""The saga's LangGraph state: plain data only, so every checkpointer can store it.

Reducers make the state append-only where the audit trail needs it (``events``,
``compensated``) and let a compensation remove its step's result (``results``).
Derived fields (``completed``, ``outputs``) are not stored: :func:`saga_view` computes them.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from sagagraph.agents.protocol import StepRecord, Usage
from sagagraph.agents.view import Event, FailureRecord, Status


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


class SagaState(TypedDict, total=False):
    """State of one saga run by the orchestration graph."""

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
    status: Status
    """Where the saga is in its lifecycle."""
    reason: str | None
    """Why the saga did not complete, in one line."""
    fail_at: str | None
    """Step into which a failure is injected (``--fail-at``), for demos and tests."""
    results: Annotated[dict[str, StepRecord], merge_results]
    """Results of the steps that are committed now, by step name."""
    halted: dict[str, Any] | None
    """The step that halted the saga on purpose, its reason and data."""
    failure: FailureRecord | None
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
