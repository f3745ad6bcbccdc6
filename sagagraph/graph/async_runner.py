"""Run sagas with ``ainvoke``: many sagas at once in one process, on one event loop.

The async twins of :func:`~sagagraph.graph.runner.run_saga`, ``resume_saga`` and
``saga_status``, with the same contracts and the same JSON view. Compile the saga graph with
a checkpointer from :func:`~sagagraph.checkpoints.async_factory.open_async_checkpointer`
(LangGraph's async savers refuse ``invoke``), then start sagas concurrently::

    async with open_async_checkpointer("sqlite:///sagas.sqlite") as checkpointer:
        app = build_saga_graph(definition).compile(checkpointer=checkpointer)
        views = await asyncio.gather(*(arun_saga(app, i) for i in inputs))

Steps run their participant's ``aexecute`` when it has one, else ``execute`` on a thread
(see :mod:`sagagraph.saga.async_execution`). Sagas take turns for the engine's own work
(:mod:`sagagraph.saga.loop_gate`), so each moves from one model call to the next without
waiting for every other saga's bookkeeping.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.types import Durability, StateSnapshot

from sagagraph.errors import InputError
from sagagraph.graph.leases import saga_lease
from sagagraph.graph.runner import (
    DEFAULT_DURABILITY,
    EventCallback,
    _check_fail_at,
    initial_state,
    raise_if_disk_full,
    saga_config,
    saga_status,
)
from sagagraph.saga.ids import new_saga_id, validate_saga_id
from sagagraph.saga.loop_gate import saga_turn
from sagagraph.saga.names import TERMINAL_STATUSES


class AsyncSagaApp(Protocol):
    """The part of a compiled LangGraph graph the async runner uses."""

    checkpointer: Any

    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = ..., **kwargs: Any
    ) -> Any: ...

    @property
    def astream(self) -> Callable[..., AsyncIterator[Any]]:
        """LangGraph's ``astream`` (typed loosely: its keyword arguments are a TypedDict)."""
        ...

    async def aget_state(
        self, config: RunnableConfig, *, subgraphs: bool = ...
    ) -> StateSnapshot: ...


class _Snapshot:
    """A snapshot already read, shown to the sync ``saga_status`` as an app.

    ``saga_status`` stays the one place that turns a snapshot into the JSON view.
    """

    def __init__(self, app: AsyncSagaApp, snapshot: StateSnapshot) -> None:
        self.checkpointer = app.checkpointer
        self.snapshot = snapshot

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        raise NotImplementedError("a snapshot cannot run a saga")

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        raise NotImplementedError("a snapshot cannot run a saga")

    def get_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        return self.snapshot


async def _drive(
    app: AsyncSagaApp,
    payload: Any,
    saga_id: str,
    durability: Durability,
    on_event: EventCallback | None,
) -> dict[str, Any] | None:
    """Run the saga's graph until it ends or pauses; the caller holds the saga's lease.

    Returns the state the run ended with (None when streaming events).
    """
    config = saga_config(saga_id)
    try:
        if on_event is None:
            values = await app.ainvoke(payload, config, durability=durability)
            return values if isinstance(values, dict) else None
        stream = app.astream(payload, config, durability=durability, stream_mode="updates")
        async for chunk in stream:
            for node, update in chunk.items():
                if node.startswith("__") or not isinstance(update, dict):
                    continue  # __interrupt__ and friends carry no events
                for event in update.get("events") or []:
                    on_event(event)
    except Exception as error:
        raise_if_disk_full(error, saga_id)
        raise
    return None


async def _view_after_run(
    app: AsyncSagaApp, saga_id: str, values: dict[str, Any] | None
) -> dict[str, Any]:
    """The saga's view once a run returned: from the state the run ended with when the saga
    is finished (nothing next, no interrupt: no snapshot needed), else from a new snapshot."""
    if values is None or values.get("status") not in TERMINAL_STATUSES or "__interrupt__" in values:
        return await asaga_status(app, saga_id)
    finished = StateSnapshot(values, (), saga_config(saga_id), None, None, None, (), ())
    return saga_status(_Snapshot(app, finished), saga_id)


async def _snapshot(app: AsyncSagaApp, saga_id: str) -> StateSnapshot:
    return await app.aget_state(saga_config(validate_saga_id(saga_id)))


async def _exists(app: AsyncSagaApp, saga_id: str) -> bool:
    """True when the checkpointer holds the saga; without building a snapshot, which costs
    more than the read itself when hundreds of sagas start at once."""
    if app.checkpointer is None:
        return bool((await _snapshot(app, saga_id)).values)
    found = await app.checkpointer.aget_tuple(saga_config(saga_id))
    return found is not None and bool(found.checkpoint["channel_values"])


async def asaga_status(app: AsyncSagaApp, saga_id: str) -> dict[str, Any]:
    """The JSON view of one saga; SagaNotFoundError when no checkpoint has it."""
    return saga_status(_Snapshot(app, await _snapshot(app, saga_id)), saga_id)


async def arun_saga(
    app: AsyncSagaApp,
    input: Mapping[str, Any],
    *,
    saga_id: str | None = None,
    fail_at: str | None = None,
    durability: Durability = DEFAULT_DURABILITY,
    on_event: EventCallback | None = None,
) -> dict[str, Any]:
    """Start a new saga and run it until it ends or waits for an operator; return its view.

    As :func:`~sagagraph.graph.runner.run_saga`: an existing id is refused (InputError),
    ``fail_at`` must name a step, and each step's completion is on disk before the next
    step starts (``durability="sync"``), the saga's lease is held while it runs, and
    ``on_event`` sees each event as its step finishes.
    """
    saga_id = validate_saga_id(new_saga_id() if saga_id is None else saga_id)
    _check_fail_at(app, fail_at)  # type: ignore[arg-type]  # reads only app.nodes
    with saga_lease(app.checkpointer, saga_id):
        async with saga_turn():
            return await _run_leased(app, input, saga_id, fail_at, durability, on_event)


async def _run_leased(
    app: AsyncSagaApp,
    input: Mapping[str, Any],
    saga_id: str,
    fail_at: str | None,
    durability: Durability,
    on_event: EventCallback | None,
) -> dict[str, Any]:
    if await _exists(app, saga_id):
        raise InputError(f"saga {saga_id!r}: already exists; use resume, or pick another id")
    payload = initial_state(saga_id, input, fail_at=fail_at)
    values = await _drive(app, payload, saga_id, durability, on_event)
    return await _view_after_run(app, saga_id, values)


async def aresume_saga(
    app: AsyncSagaApp,
    saga_id: str,
    *,
    durability: Durability = DEFAULT_DURABILITY,
    on_event: EventCallback | None = None,
) -> dict[str, Any]:
    """Continue an unfinished saga from its last checkpoint; committed steps do not re-run.

    As :func:`~sagagraph.graph.runner.resume_saga`, a saga waiting for an operator is left as
    it is, and SagaBusyError says another thread or process runs the saga now.
    """
    with saga_lease(app.checkpointer, saga_id):
        async with saga_turn():
            view = await asaga_status(app, saga_id)
            if view["waiting_for_operator"] or not view["next"]:
                return view
            values = await _drive(app, None, saga_id, durability, on_event)
            return await _view_after_run(app, saga_id, values)
