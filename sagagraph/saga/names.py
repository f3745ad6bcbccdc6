"""The names the kernel owns and every coordination style shares: its nodes, modes, statuses,
and the saga ids themselves.

Defined once here so that orchestration, choreography, the blackboard, recovery, the CLI and
the pictures cannot drift apart (LangGraph's ``constants.py`` does the same for START and END).
A style's own nodes (the LLM router's ``supervisor``, the blackboard's ``controller``) are
named by that style, which reserves them with :func:`reserve_names`. A saga id is validated
(:func:`validate_saga_id`) before it becomes a thread id, a folder name or a routing key.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from typing import Final

from sagagraph.errors import ConfigurationError, InvalidSagaIdError

COMPENSATE: Final = "compensate"
"""The node that undoes the next committed step, newest first, one superstep each."""
ESCALATE: Final = "escalate"
"""The node that alerts an operator and waits (``interrupt()``) when a compensation gives up."""

RESERVED_NAMES: Final[set[str]] = {
    COMPENSATE,
    ESCALATE,
    "__start__",
    "__end__",
    "END",
    "finish",
}
"""Names a step may not take: the nodes of the graph every style builds, the names of its
start and end, and the router's words for the end. Grown by :func:`reserve_names`."""


def refuse_reserved(step_names: Iterable[str]) -> None:
    """ConfigurationError when a step takes a reserved name: a builder's check, for a
    definition made before its style reserved its names."""
    taken = sorted(set(step_names) & RESERVED_NAMES)
    if taken:
        raise ConfigurationError(f"step name {taken[0]!r} is reserved by sagagraph")


def reserve_names(*names: str) -> None:
    """Reserve a coordination style's own node names, so no step takes one.

    The style calls this where it names its nodes, so the names are reserved before any of
    its graphs is built; its builder also refuses a definition made earlier with such a step.
    """
    RESERVED_NAMES.update(names)


ORCHESTRATION: Final = "orchestration"
CHOREOGRAPHY: Final = "choreography"
BLACKBOARD: Final = "blackboard"
MODES: Final = (ORCHESTRATION, CHOREOGRAPHY, BLACKBOARD)
"""The coordination styles, as the JSON view's ``mode`` and ``--mode`` spell them."""

TERMINAL_STATUSES: Final = frozenset({"completed", "rolled_back", "resolved_by_operator"})
"""Statuses after which nothing more happens to a saga."""

SAGA: Final = "saga"
"""The ``step`` of events and records that concern the whole saga, not one of its steps."""


MAX_SAGA_ID_LENGTH = 128
_SAGA_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def validate_saga_id(saga_id: object) -> str:
    """Return ``saga_id`` if it is safe as a path component; raise InvalidSagaIdError if not.

    Allowed: letters, digits, ``_``, ``-`` and ``.``, starting with a letter or digit, at most
    128 characters. This rules out separators, traversal (``..``) and hidden names.
    """
    if not isinstance(saga_id, str) or not saga_id:
        raise InvalidSagaIdError("saga id: must be a non-empty string")
    if len(saga_id) > MAX_SAGA_ID_LENGTH:
        raise InvalidSagaIdError(
            f"saga id {saga_id[:20]!r}...: longer than {MAX_SAGA_ID_LENGTH} characters"
        )
    if not _SAGA_ID.fullmatch(saga_id) or ".." in saga_id:
        raise InvalidSagaIdError(
            f"saga id {saga_id!r}: use letters, digits, '_', '-' and '.', starting with a "
            "letter or digit (no path separators, no '..')"
        )
    return saga_id


def new_saga_id(prefix: str = "saga") -> str:
    """A fresh, unique saga id such as ``saga-1f0c9a2e7b``."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


DEFAULT_ROLLBACK_REASON = "rollback requested by an operator"
"""The ``reason`` of a rollback asked for without one."""
