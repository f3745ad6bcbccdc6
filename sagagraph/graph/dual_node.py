"""A graph node with a sync body for ``invoke`` and an async body for ``ainvoke``.

LangGraph runs a plain sync function given as a node on asyncio's default executor under
``ainvoke``: ``min(32, cpus + 4)`` threads for every saga of the process, so hundreds of
sagas waiting on their models queue for a thread. A :class:`DualNode` runs its async body on
the event loop instead, and its sync body, unchanged, under ``invoke``.

Not a ``RunnableLambda``, which would do the same but open a callback run around every call:
that costs more than the node's own work when hundreds of sagas share one event loop.
LangGraph already traces each node and sets its config context (``get_config()``,
``interrupt()``), as it does for plain functions.

A node's bodies read and write the saga's fields (``SagaState``); the node gives them the
fields from LangGraph's channels and hands their update back in the channels' layout
(:mod:`sagagraph.state_layout`), so no body knows how the fields are stored.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, TypeVar, cast

from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langgraph.types import Command

from sagagraph.state_layout import channel_update, saga_fields

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
        fields = cast(S, saga_fields(cast(Mapping[str, Any], input)))
        return stored(self.func(fields, config if config is not None else ensure_config()))

    async def ainvoke(self, input: S, config: RunnableConfig | None = None, **kwargs: Any) -> U:
        fields = cast(S, saga_fields(cast(Mapping[str, Any], input)))
        return stored(await self.afunc(fields, config if config is not None else ensure_config()))


def stored(update: U) -> U:
    """A node's update of saga fields (a dict, or a ``Command`` carrying one) in the layout
    LangGraph's channels take (:func:`~sagagraph.state_layout.channel_update`)."""
    if isinstance(update, Command):
        if not isinstance(update.update, Mapping):
            return update
        return cast(
            U,
            Command(
                graph=update.graph,
                update=channel_update(update.update),
                resume=update.resume,
                goto=update.goto,
            ),
        )
    if isinstance(update, Mapping):
        return cast(U, channel_update(update))
    return update
