"""Run sagas with ``ainvoke``: many sagas at once in one process, on one event loop.

The async twins of :func:`~sagagraph.graph.runner.run_saga`, ``resume_saga`` and
``saga_status``, with the same contracts and the same JSON view. Compile the saga graph with
a checkpointer from :func:`~sagagraph.checkpoints.async_factory.open_async_checkpointer`
(LangGraph's async savers refuse ``invoke``), then start sagas concurrently::

    async with open_async_checkpointer("sqlite:///sagas.sqlite") as checkpointer:
        app = build_saga_graph(definition).compile(checkpointer=checkpointer)
        views = await asyncio.gather(*(arun_saga(app, i) for i in inputs))

Steps run their participant's ``aexecute`` when it has one, else ``execute`` on a thread
(see :mod:`sagagraph.saga.async_execution`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from functools import partial
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Durability, StateSnapshot

from sagagraph.graph.input_check import check_new_input
from sagagraph.graph.leases import saga_lease
from sagagraph.graph.runner import (
    DEFAULT_DURABILITY,
    EventCallback,
    RunOutput,
    _check_fail_at,
    already_exists,
    foreign_writes,
    holds_saga,
    initial_state,
    raise_if_connection_lost,
    raise_if_disk_full,
    run_config,
    saga_config,
    snapshot_view,
)
from sagagraph.graph.state_view import finished_view
from sagagraph.saga.async_execution import run_in_step_thread
from sagagraph.saga.ids import new_saga_id, validate_saga_id
from sagagraph.saga.tracing import saga_outcome, saga_span


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


async def astream_saga(
    app: AsyncSagaApp,
    payload: Any,
    saga_id: str,
    durability: Durability,
    on_event: EventCallback | None,
    config: RunnableConfig | None = None,
    *,
    operation: str = "run",
) -> dict[str, Any] | None:
    """:func:`~sagagraph.graph.runner.stream_saga` on ``astream``: the final values when the saga
    ended, None when it paused or stopped unfinished; the run is one span, as there."""
    output = RunOutput(on_event)
    with saga_span(saga_id, operation) as span:
        try:
            stream = app.astream(
                payload,
                run_config(saga_id, config),
                durability=durability,
                stream_mode=output.modes,
            )
            async for chunk in stream:
                output.take(chunk)
        except Exception as error:
            raise_if_disk_full(error, saga_id)
            raise_if_connection_lost(error, saga_id)
            raise
        saga_outcome(span, output.values if not output.interrupted else None)
    return output.finished()


async def _view_after(
    app: AsyncSagaApp, saga_id: str, finished: dict[str, Any] | None
) -> dict[str, Any]:
    """The view once a run returned: from its final values when the saga ended, else read."""
    if finished is not None:
        return finished_view(finished, saga_id)
    return await asaga_status(app, saga_id)


async def _snapshot(app: AsyncSagaApp, saga_id: str) -> StateSnapshot:
    return await app.aget_state(saga_config(validate_saga_id(saga_id)))


async def _exists(app: AsyncSagaApp, saga_id: str) -> bool:
    """As the sync runner's: one checkpoint read, no snapshot."""
    if not isinstance(app.checkpointer, BaseCheckpointSaver):
        return bool((await _snapshot(app, saga_id)).values)
    return holds_saga(await app.checkpointer.aget_tuple(saga_config(saga_id)))


async def asaga_status(app: AsyncSagaApp, saga_id: str) -> dict[str, Any]:
    """The JSON view of one saga; SagaNotFoundError when no checkpoint has it."""
    snap = await _snapshot(app, saga_id)
    writes = None
    if foreign_writes(snap) and isinstance(app.checkpointer, BaseCheckpointSaver):
        saved = await app.checkpointer.aget_tuple(snap.config)
        writes = list(saved.pending_writes or []) if saved is not None else None
    return snapshot_view(snap, saga_id, writes)


async def arun_saga(
    app: AsyncSagaApp,
    input: Mapping[str, Any],
    *,
    saga_id: str | None = None,
    fail_at: str | None = None,
    durability: Durability = DEFAULT_DURABILITY,
    on_event: EventCallback | None = None,
    config: RunnableConfig | None = None,
) -> dict[str, Any]:
    """Start a new saga and run it until it ends or waits for an operator; return its view.

    As :func:`~sagagraph.graph.runner.run_saga`: an existing id is refused (InputError),
    ``fail_at`` must name a step, and each step's completion is on disk before the next
    step starts (``durability="sync"``), the saga's lease is held while it runs,
    ``on_event`` sees each event as its step finishes, and ``config`` (a LangChain config)
    is merged with the saga's own, its metadata and tags carrying the saga id.
    """
    saga_id = validate_saga_id(new_saga_id() if saga_id is None else saga_id)
    _check_fail_at(app, fail_at)  # type: ignore[arg-type]  # reads only app.nodes
    # Unusable input: InputError, and no saga is started. On a thread: reading a long PDF
    # must not stop the other sagas on this event loop.
    await run_in_step_thread(partial(check_new_input, app, input))
    with saga_lease(app.checkpointer, saga_id):
        return await _run_leased(app, input, saga_id, fail_at, durability, on_event, config)


async def _run_leased(
    app: AsyncSagaApp,
    input: Mapping[str, Any],
    saga_id: str,
    fail_at: str | None,
    durability: Durability,
    on_event: EventCallback | None,
    config: RunnableConfig | None,
) -> dict[str, Any]:
    if await _exists(app, saga_id):
        raise already_exists(saga_id)
    payload = initial_state(saga_id, input, fail_at=fail_at)
    finished = await astream_saga(app, payload, saga_id, durability, on_event, config)
    return await _view_after(app, saga_id, finished)


async def aresume_saga(
    app: AsyncSagaApp,
    saga_id: str,
    *,
    durability: Durability = DEFAULT_DURABILITY,
    on_event: EventCallback | None = None,
    config: RunnableConfig | None = None,
) -> dict[str, Any]:
    """Continue an unfinished saga from its last checkpoint; committed steps do not re-run.

    As :func:`~sagagraph.graph.runner.resume_saga`, a saga waiting for an operator is left as
    it is, SagaBusyError says another thread or process runs the saga now, and ``config``
    is merged as :func:`arun_saga` merges it.
    """
    with saga_lease(app.checkpointer, saga_id):
        view = await asaga_status(app, saga_id)
        if view["waiting_for_operator"] or not view["next"]:
            return view
        finished = await astream_saga(
            app, None, saga_id, durability, on_event, config, operation="resume"
        )
        return await _view_after(app, saga_id, finished)
