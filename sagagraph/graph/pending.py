"""What a saga's last checkpoint leaves to do, including the work LangGraph hides from ``next``.

A process can die after a step's writes were stored (``put_writes``) and before the checkpoint
that follows them (``put``). LangGraph then leaves that step out of ``snapshot.next`` (its
writes are pending, it will not run again) although the saga has not moved on: ``next`` is
empty, and a runner that reads "empty next" as "finished" stops there. A saga killed right
after its input checkpoint has ``next == ("__start__",)`` and no state values at all.
Resuming (``invoke(None)``) handles both: it applies the pending writes and continues.
"""

from __future__ import annotations

from langgraph.types import StateSnapshot

START = "__start__"
"""LangGraph's input node: next when a saga was killed before its first step began."""


def pending_nodes(snapshot: StateSnapshot) -> list[str]:
    """Nodes whose work is not behind a checkpoint yet, in order: the nodes to run next, then
    those that finished and stored their writes before the process stopped."""
    names = list(snapshot.next)
    for task in snapshot.tasks:
        if task.name not in names and not task.interrupts:
            names.append(task.name)
    return names


def needs_settling(snapshot: StateSnapshot) -> bool:
    """True when nothing is left to run in the current superstep but its checkpoint was never
    written: only pending writes, or only the input not yet read. One resume step that stops
    before the next node settles it without running any step again."""
    if not snapshot.tasks or any(task.interrupts for task in snapshot.tasks):
        return False
    return not snapshot.next or tuple(snapshot.next) == (START,)
