"""A run that starts a saga says so, and sagagraph's savers refuse it a thread already in use.

``run_saga`` must not start a saga on an id that already holds one: that would pile a second
saga's input on the first one's checkpoints. It used to read the thread itself, under the
saga's lease, and LangGraph's loop then read the same thread again to find where to start:
two reads for one answer. Now the run marks its config with :data:`NEW_RUN`, and the savers
sagagraph opens (they say so with :data:`CHECKS_NEW_RUNS`) check the loop's own read: when the
thread already holds a saga, :func:`refuse_used_thread` raises ``InputError`` before anything
is written. A saver of another kind is read by the runner as before.

Only the loop's first read is checked: the root namespace, no checkpoint id. Reads from
inside a node (a subgraph's, ``get_state``) name a checkpoint or a namespace, and pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sagagraph.errors import InputError

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import CheckpointTuple

NEW_RUN = "__sagagraph_new_run__"
"""Configurable key set by a run that starts a saga (``__``: LangGraph keeps such keys out of
checkpoint metadata)."""
CHECKS_NEW_RUNS = "sagagraph_checks_new_runs"
"""The attribute (True) of a saver that runs :func:`refuse_used_thread` on each read."""


def already_exists(saga_id: Any) -> InputError:
    return InputError(f"saga {saga_id!r}: already exists; use resume, or pick another id")


def refuse_used_thread(config: RunnableConfig, saved: CheckpointTuple | None) -> None:
    """InputError when ``config`` is a new run's first read and ``saved`` holds a saga."""
    configurable = config.get("configurable") or {}
    if (
        saved is not None
        and configurable.get(NEW_RUN)
        and not configurable.get("checkpoint_id")
        and not configurable.get("checkpoint_ns")
        and saved.checkpoint["channel_values"]
    ):
        raise already_exists(configurable.get("thread_id"))
