"""A graph node with a sync body for ``invoke`` and an async body for ``ainvoke``.

LangGraph runs a plain sync function given as a node on asyncio's default executor under
``ainvoke``: ``min(32, cpus + 4)`` threads for every saga of the process, so hundreds of
sagas waiting on their models queue for a thread. A :class:`DualNode` runs its async body on
the event loop instead, and its sync body, unchanged, under ``invoke``.

Not a ``RunnableLambda``, which would do the same but open a callback run around every call:
that costs more than the node's own work when hundreds of sagas share one event loop.
LangGraph already traces each node and sets its config context (``get_config()``,
``interrupt()``), as it does for plain functions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from langchain_core.runnables import Runnable, RunnableConfig, ensure_config

S = TypeVar("S")
U = TypeVar("U")


class DualNode(Runnable[S, U], Generic[S, U]):
    """``func(state, config)`` under ``invoke``; ``await afunc(state, config)`` under
    ``ainvoke``."""

    def __init__(
        self,
        name: str,
        func: Callable[[S, RunnableConfig], U],
        afunc: Callable[[S, RunnableConfig], Awaitable[U]],
    ) -> None:
        self.name = name
        self.func = func
        self.afunc = afunc

    # LangGraph always passes the task's config; ``ensure_config`` (a copy of it, merged with
    # the context's) only when called without one: bodies read ``configurable`` alone.
    def invoke(self, input: S, config: RunnableConfig | None = None, **kwargs: Any) -> U:
        return self.func(input, config if config is not None else ensure_config())

    async def ainvoke(self, input: S, config: RunnableConfig | None = None, **kwargs: Any) -> U:
        return await self.afunc(input, config if config is not None else ensure_config())
