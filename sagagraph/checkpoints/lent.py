"""The checkpointer a saga lives in, lent to its steps while a process holds the saga's lease.

LangGraph gives a node no public handle on the saver its graph runs with. A step that reads
its own saga's history (an agent step's rollback reads its agent's checkpoints) asks
:func:`lent_checkpointer`; the saga's lease (:func:`sagagraph.graph.leases.saga_lease`), which
every run, resume, resolve and rollback holds, lends it for as long as it is held. It is a
context variable, so it follows LangGraph's tasks into their threads and asyncio tasks, and
two sagas run side by side each see their own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

_lent: ContextVar[Mapping[str, BaseCheckpointSaver[Any]]] = ContextVar(
    "sagagraph_lent_checkpointers", default=MappingProxyType({})
)


@contextmanager
def lending(saga_id: str, checkpointer: BaseCheckpointSaver[Any]) -> Iterator[None]:
    """Lend ``checkpointer`` to the steps of ``saga_id`` that run in this context, for the block."""
    token = _lent.set({**_lent.get(), saga_id: checkpointer})
    try:
        yield
    finally:
        _lent.reset(token)


def lent_checkpointer(saga_id: str) -> BaseCheckpointSaver[Any] | None:
    """The checkpointer ``saga_id`` lives in, when this context holds its lease; else None."""
    return _lent.get().get(saga_id)
