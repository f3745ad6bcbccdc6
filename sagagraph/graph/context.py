"""What a node needs to call a participant: the saga's identity and the step's context."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig

from sagagraph.saga.names import validate_saga_id
from sagagraph.saga.protocol import RecordsSettings, SagaDefinition, StepContext, StepResult
from sagagraph.saga.view import QUEUED


def context_for(
    definition: SagaDefinition, state: Mapping[str, Any], step: str, saga_id: str
) -> StepContext:
    """The context a step sees: its saga, the input, and the results committed so far."""
    results = {s: StepResult.from_record(r) for s, r in (state.get("results") or {}).items()}
    return StepContext(
        saga_id=saga_id,
        step=step,
        input=state.get("input") or {},
        results=results,
        attempt=1,
        deps=definition.deps,
    )


def saga_identity(
    definition: SagaDefinition, state: Mapping[str, Any], config: RunnableConfig, router: str
) -> tuple[str, dict[str, Any]]:
    """The saga id and the fields a saga's first node stamps into its state.

    The id comes from the state, or else from the thread id (LangGraph Server assigns one).
    """
    configurable = config.get("configurable") or {}
    saga_id = validate_saga_id(state.get("saga_id") or configurable.get("thread_id"))
    stamp: dict[str, Any] = {}
    # A queued saga (submitted to the work queue) is stamped by its first node, as a new one.
    if not state.get("status") or state.get("status") == QUEUED:
        stamp = {
            "saga_id": saga_id,
            "saga": definition.name,
            "mode": "orchestration",
            "router": router,
            "status": "running",
        }
        # What the state holds already (the id run_saga put in the input) is not written again.
        stamp = {key: value for key, value in stamp.items() if state.get(key) != value}
        if "reason" not in state:
            stamp["reason"] = None  # so the view's every field is in the state from the start
        if definition.label is not None and "label" not in state:
            label = definition.label(state.get("input") or {})
            stamp["label"] = label if isinstance(label, str) else None
        recorded = recorded_input(definition, state.get("input") or {})
        if recorded is not None:
            stamp["input"] = recorded
    return saga_id, stamp


def recorded_input(definition: SagaDefinition, input: Mapping[str, Any]) -> dict[str, Any] | None:
    """``input`` with what the definition's deps record (:class:`RecordsSettings`, e.g. the
    paper store's absolute outputs folder) added under ``settings``; None when nothing is
    missing.

    So every saga, whatever started it (the CLI, Python, the Server, a worker), keeps where
    its files go, and a resume or recover from another folder writes and deletes there.
    Settings the input holds already (the CLI records its own) are kept as they are.
    """
    if not isinstance(definition.deps, RecordsSettings):
        return None
    settings = input.get("settings")
    settings = dict(settings) if isinstance(settings, Mapping) else {}
    recorded = definition.deps.recorded_settings()
    missing = {key: value for key, value in recorded.items() if key not in settings}
    if not missing:
        return None
    return {**input, "settings": {**settings, **missing}}
