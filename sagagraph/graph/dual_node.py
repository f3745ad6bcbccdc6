"""A graph node written once, as a flow, and run by ``invoke`` and ``ainvoke`` alike.

The node's body is a flow (:mod:`sagagraph.saga.drivers`): it yields the effects it needs (a
step's execute, a model call, telling the hooks) and returns the node's update or Command.
Under ``invoke`` the effects run on this thread; under ``ainvoke`` they are awaited on the
event loop. LangGraph would run a plain sync function on asyncio's default executor under
``ainvoke``: ``min(32, cpus + 4)`` threads for every saga of the process, so hundreds of sagas
waiting on their models would queue for a thread.

Not a ``RunnableLambda``, which would open a callback run around every call: that costs more
than the node's own work when hundreds of sagas share one event loop. LangGraph already traces
each node and sets its config context (``get_config()``, ``interrupt()``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from langchain_core.runnables import Runnable, RunnableConfig, ensure_config

from sagagraph.saga.drivers import Flow, adrive, drive

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
