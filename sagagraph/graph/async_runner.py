"""Run sagas with ``ainvoke``: many sagas at once in one process, on one event loop.

The async driver of :mod:`sagagraph.graph.runner`'s flows: :func:`arun_saga`,
:func:`aresume_saga` and :func:`asaga_status` do what ``run_saga``, ``resume_saga`` and
``saga_status`` do (the same flows, the same contracts, the same JSON view), awaiting
``aget_state`` and ``astream`` and the hooks' async forms. Compile the saga graph with a
checkpointer from :func:`~sagagraph.checkpoints.async_factory.open_async_checkpointer`
(LangGraph's async savers refuse ``invoke``), then start sagas concurrently::

    async with open_async_checkpointer("sqlite:///sagas.sqlite") as checkpointer:
        app = build_saga_graph(definition).compile(checkpointer=checkpointer)
        views = await asyncio.gather(*(arun_saga(app, i) for i in inputs))

Steps run their participant's ``aexecute`` when it has one, else ``execute`` on a thread
(see :mod:`sagagraph.saga.execution`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Durability

from sagagraph.graph.hooks import check_new_input, has_input_check
from sagagraph.graph.leases import saga_lease
from sagagraph.graph.runner import (
    DEFAULT_DURABILITY,
    SagaApp,
    check_fail_at,
    resuming,
    running,
    status_flow,
)
from sagagraph.saga.drivers import adrive
from sagagraph.saga.execution import run_in_step_thread
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.names import new_saga_id, validate_saga_id


async def asaga_status(app: SagaApp, saga_id: str) -> dict[str, Any]:
    """The JSON view of one saga; SagaNotFoundError when no checkpoint has it."""
    return await adrive(status_flow(app, saga_id))


async def arun_saga(
    app: SagaApp,
    input: Mapping[str, Any],
    *,
    saga_id: str | None = None,
    fail_at: str | None = None,
    durability: Durability = DEFAULT_DURABILITY,
    hooks: SagaHooks | None = None,
    config: RunnableConfig | None = None,
) -> dict[str, Any]:
    """Start a new saga and run it until it ends or waits for an operator; return its view.

    As :func:`~sagagraph.graph.runner.run_saga`: an existing id is refused (InputError),
    ``fail_at`` must name a step, and each step's completion is on disk before the next
    step starts (``durability="sync"``), the saga's lease is held while it runs,
    ``hooks`` observe it (their async forms awaited), and ``config`` (a LangChain config)
    is merged with the saga's own, its metadata and tags carrying the saga id.
    """
    saga_id = validate_saga_id(new_saga_id() if saga_id is None else saga_id)
    check_fail_at(app, fail_at)
    # Unusable input: InputError, and no saga is started. On a thread: reading a long PDF
    # must not stop the other sagas on this event loop (no hop when there is no check).
    if has_input_check(app):
        await run_in_step_thread(partial(check_new_input, app, input))
    with saga_lease(app.checkpointer, saga_id):
        return await adrive(running(app, input, saga_id, fail_at, durability, hooks, config))


async def aresume_saga(
    app: SagaApp,
    saga_id: str,
    *,
    durability: Durability = DEFAULT_DURABILITY,
    hooks: SagaHooks | None = None,
    config: RunnableConfig | None = None,
) -> dict[str, Any]:
    """Continue an unfinished saga from its last checkpoint; committed steps do not re-run.

    As :func:`~sagagraph.graph.runner.resume_saga`, a saga waiting for an operator is left as
    it is, SagaBusyError says another thread or process runs the saga now, and ``hooks`` and
    ``config`` are as :func:`arun_saga` takes them.
    """
    with saga_lease(app.checkpointer, saga_id):
        return await adrive(resuming(app, saga_id, durability, hooks, config))
