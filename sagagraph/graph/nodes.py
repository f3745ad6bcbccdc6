"""The orchestration graph's nodes: their names, the one shape every node has, and what a node
needs to call a participant.

The names. The graph's own nodes, besides the kernel's ``compensate`` and ``escalate``:
importing this module reserves them (:func:`~sagagraph.saga.names.reserve_names`), so a
definition made afterwards refuses a step that takes one; the builder refuses it in any case.

The shape (:class:`DualNode`). A node is written once, as a flow
(:mod:`sagagraph.saga.drivers`), and run by ``invoke`` and ``ainvoke`` alike: it yields the
effects it needs (a step's execute, a model call, telling the hooks) and returns the node's
update or Command. Under ``invoke`` the effects run on this thread; under ``ainvoke`` they
are awaited on the event loop. LangGraph would run a plain sync function on asyncio's default
executor under ``ainvoke``: ``min(32, cpus + 4)`` threads for every saga of the process, so
hundreds of sagas waiting on their models would queue for a thread. Not a
``RunnableLambda``, which would open a callback run around every call: that costs more than
the node's own work when hundreds of sagas share one event loop. LangGraph already traces each
node and sets its config context (``get_config()``, ``interrupt()``).

What a node passes a participant: the saga's identity, which the saga's first node stamps
into its state (:func:`saga_identity`), and the step's context (:func:`context_for`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Generic, TypeVar

from langchain_core.runnables import Runnable, RunnableConfig, ensure_config

from sagagraph.graph.locking import saga_locks
from sagagraph.saga.drivers import Flow, adrive, drive
from sagagraph.saga.names import reserve_names, validate_saga_id
from sagagraph.saga.protocol import SagaDefinition, StepContext, StepResult
from sagagraph.saga.view import QUEUED

SUPERVISOR: Final = "supervisor"
"""The LLM router's node: asks a chat model for the next step, behind the guard."""
COMPLETE: Final = "complete"
"""The node that joins parallel branches before a saga is completed."""

reserve_names(SUPERVISOR, COMPLETE)

ROUTES_ITSELF: Final = "sagagraph_routes_itself"
"""Node metadata of a step node that routes itself with ``Command(goto=...)`` (a chain's):
read back through ``get_graph()`` by whoever writes a state update as that node."""

S = TypeVar("S")
U = TypeVar("U")


class DualNode(Runnable[S, U], Generic[S, U]):
    """A node whose ``body(state, config)`` flow is driven by ``invoke`` or ``ainvoke``."""

    def __init__(self, name: str, body: Callable[[S, RunnableConfig], Flow[U]]) -> None:
        self.name = name
        self.body = body

    # LangGraph always passes the task's config; ``ensure_config`` (a copy of it, merged with
    # the context's) only when called without one: bodies read ``configurable`` alone.
    def invoke(self, input: S, config: RunnableConfig | None = None, **kwargs: Any) -> U:
        return drive(self.body(input, config if config is not None else ensure_config()))

    async def ainvoke(self, input: S, config: RunnableConfig | None = None, **kwargs: Any) -> U:
        return await adrive(self.body(input, config if config is not None else ensure_config()))


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
        locks=saga_locks(saga_id),
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
        if definition.pivot is not None and "pivot" not in state:
            stamp["pivot"] = definition.pivot
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
    # What ``isinstance(deps, RecordsSettings)`` checks (the method is there), without a
    # runtime protocol check (about 10 us, twice a saga).
    recorded_settings = getattr(definition.deps, "recorded_settings", None)
    if recorded_settings is None:
        return None
    settings = input.get("settings")
    settings = dict(settings) if isinstance(settings, Mapping) else {}
    recorded: Mapping[str, object] = recorded_settings()
    missing = {key: value for key, value in recorded.items() if key not in settings}
    if not missing:
        return None
    return {**input, "settings": {**settings, **missing}}
