"""Declaring what a tool's effect is: compensable (with its undo), read-only, or irreversible.

Every tool an agent may call under sagagraph says so explicitly, because the rollback depends on
it: a compensable call is undone by its ``undo``, a read-only call needs nothing, and an
irreversible call that ran makes the rollback escalate to an operator instead of pretending.

The declaration rides on the LangChain tool itself (in its ``metadata``), so the same tool
object goes to ``create_agent`` and to sagagraph:

    @compensable(undo=cancel_flight)
    @tool
    def book_flight(flight: str, traveller: str) -> str:
        return airline.book(idempotency_key(), flight, traveller)

The forward call and its undo see the same idempotency key (``saga_id:step:call-n``), so a
forward call repeated after a crash is deduplicated by the partner, and an undo finds exactly
what its call wrote, even when the call's result was lost.
"""

from __future__ import annotations

import contextvars
import string
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, overload

from langchain_core.tools import BaseTool
from langchain_core.tools import tool as as_tool

from sagagraph.errors import ConfigurationError
from sagagraph.saga.locks import DEFAULT_LOCK_TIMEOUT, LockMode, SagaLocks
from sagagraph.tools.records import ToolCall

ToolKind = Literal["compensable", "read_only", "irreversible"]
"""What a tool's effect is, for the rollback."""

UndoFn = Callable[[ToolCall], object]
"""Undoes one recorded call; must be idempotent (an undo may run again after a crash)."""

_METADATA_KEY = "sagagraph_tool"


@dataclass(frozen=True)
class ToolPolicy:
    """How sagagraph treats one tool's calls."""

    kind: ToolKind
    """``compensable``, ``read_only`` or ``irreversible``."""
    undo: UndoFn | None = None
    """The compensating action of a compensable tool, called with the call's record."""
    approval: bool = False
    """True: each call waits for an operator's decision (approve, edit, reject) before it
    runs (:class:`~sagagraph.tools.approval.ToolApprovalMiddleware`)."""
    lock: str | None = None
    """The semantic lock each call takes before it runs: a key template filled from the
    call's arguments (``"seat:{flight}:{seat}"``); None: the tool takes none."""
    on_busy: LockMode = "fail"
    """What a call does when another saga holds its key: ``fail`` (the model is told, as the
    tool's error) or ``wait`` (up to ``lock_timeout``, then the same)."""
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    """Seconds a call waits for a held key when ``on_busy="wait"``."""


def _tool_of(tool: BaseTool | Callable[..., Any]) -> BaseTool:
    if isinstance(tool, BaseTool):
        return tool
    if callable(tool):
        converted = as_tool(tool)
        assert isinstance(converted, BaseTool)
        return converted
    raise ConfigurationError(f"expected a LangChain tool or a function, got {type(tool).__name__}")


def _declare(tool: BaseTool | Callable[..., Any], policy: ToolPolicy) -> BaseTool:
    declared = _tool_of(tool)
    if policy.lock is not None:
        _check_template(declared, policy.lock)
    existing = policy_of(declared)
    if existing is not None and existing != policy:
        raise ConfigurationError(
            f"tool {declared.name!r} is already declared {existing.kind}; declare it once"
        )
    # A copy, so that declaring does not change a tool object someone else holds.
    copy = declared.model_copy()
    copy.metadata = {**(declared.metadata or {}), _METADATA_KEY: policy}
    return copy


def template_fields(template: str) -> list[str]:
    """The arguments a lock key template names (``"seat:{flight}:{seat}"``: flight, seat)."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as error:
        raise ConfigurationError(f"lock {template!r}: not a key template ({error})") from None
    names = [field for _, field, _, _ in parsed if field is not None]
    if "" in names or any(n[:1].isdigit() for n in names):
        raise ConfigurationError(f"lock {template!r}: name each argument ({{flight}}, not {{}})")
    return [n.split(".", 1)[0].split("[", 1)[0] for n in names]


def _check_template(tool: BaseTool, template: str) -> None:
    """ConfigurationError, naming the argument, when ``template`` names one ``tool`` lacks."""
    if not template:
        raise ConfigurationError(f"tool {tool.name!r}: lock must be a non-empty key template")
    arguments = set(tool.args)
    for name in template_fields(template):
        if name not in arguments:
            raise ConfigurationError(
                f"tool {tool.name!r}: lock {template!r} names {name!r}, "
                f"which is not one of its arguments ({', '.join(sorted(arguments)) or 'none'})"
            )


def lock_key(tool: str, template: str, args: Mapping[str, Any]) -> str:
    """The lock key of one call: ``template`` filled from its arguments.

    ConfigurationError, in one line naming the argument, when the call lacks one the
    template names (the model left out an optional argument, say).
    """
    for name in template_fields(template):
        if name not in args:
            raise ConfigurationError(
                f"tool {tool!r}: lock {template!r} needs the argument {name!r}, "
                "which the call does not pass"
            )
    try:
        return template.format_map(dict(args))
    except (KeyError, IndexError, AttributeError, ValueError) as error:
        raise ConfigurationError(
            f"tool {tool!r}: lock {template!r} cannot be filled from the call ({error!r})"
        ) from None


@overload
def compensable(
    tool: BaseTool | Callable[..., Any],
    *,
    undo: UndoFn,
    approval: bool = False,
    lock: str | None = None,
    on_busy: LockMode = "fail",
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> BaseTool: ...


@overload
def compensable(
    tool: None = None,
    *,
    undo: UndoFn,
    approval: bool = False,
    lock: str | None = None,
    on_busy: LockMode = "fail",
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> Callable[[BaseTool | Callable[..., Any]], BaseTool]: ...


def compensable(
    tool: BaseTool | Callable[..., Any] | None = None,
    *,
    undo: UndoFn,
    approval: bool = False,
    lock: str | None = None,
    on_busy: LockMode = "fail",
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> BaseTool | Callable[[BaseTool | Callable[..., Any]], BaseTool]:
    """Declare ``tool`` compensable: each successful call is logged and undone by ``undo``.

    Use it as a function (``compensable(book_flight, undo=cancel_flight)``) or as a decorator
    over ``@tool`` or a plain function (``@compensable(undo=cancel_flight)``). ``undo`` gets the
    call's :class:`~sagagraph.tools.records.ToolCall` (tool, args, result, idempotency key) and
    must be idempotent: after a crash it may run again, and it may run for a call whose result
    was lost (``result`` is None), where it undoes whatever the key shows was written.
    ``approval=True``: each call first waits for an operator (a costly call, say).

    ``lock="seat:{flight}:{seat}"``: each call first takes a semantic lock on that key, filled
    from its arguments, for the saga the agent step runs in (:mod:`sagagraph.saga.locks`);
    the lock is released once the call's undo succeeded, else when the saga ends. When
    another saga holds the key, ``on_busy="fail"`` (the default) answers the model with a
    one-line tool error at once; ``"wait"`` waits up to ``lock_timeout`` seconds first.
    """
    if not callable(undo):
        raise ConfigurationError("compensable: undo must be a function of the call's record")
    if on_busy not in ("wait", "fail"):
        raise ConfigurationError(
            f"compensable: on_busy must be 'wait' or 'fail', got {on_busy!r} (a tool call "
            "cannot proceed on a pending resource: the model is told it is busy instead)"
        )
    policy = ToolPolicy("compensable", undo, approval, lock, on_busy, lock_timeout)
    if tool is None:
        return lambda t: _declare(t, policy)
    return _declare(tool, policy)


def read_only(tool: BaseTool | Callable[..., Any]) -> BaseTool:
    """Declare ``tool`` read-only: it changes nothing, so its calls need no undo."""
    return _declare(tool, ToolPolicy("read_only"))


def irreversible(tool: BaseTool | Callable[..., Any], *, approval: bool = False) -> BaseTool:
    """Declare ``tool`` irreversible: once it ran, a rollback escalates to an operator.

    Its calls are logged like compensable ones; a rollback undoes every other call and then
    raises :class:`~sagagraph.errors.IrreversibleToolError` naming what stays in effect.
    ``approval=True``: each call first waits for an operator, who approves it, edits its
    arguments or rejects it (the step then fails and the saga compensates).
    """
    return _declare(tool, ToolPolicy("irreversible", approval=approval))


def policy_of(tool: BaseTool) -> ToolPolicy | None:
    """The declaration of ``tool``; None when it was never declared."""
    policy = (tool.metadata or {}).get(_METADATA_KEY)
    return policy if isinstance(policy, ToolPolicy) else None


def require_policy(tool: BaseTool) -> ToolPolicy:
    """The declaration of ``tool``; ConfigurationError naming the tool when there is none."""
    policy = policy_of(tool)
    if policy is None:
        raise ConfigurationError(
            f"tool {tool.name!r} is not declared: wrap it with compensable(tool, undo=...), "
            "read_only(tool) or irreversible(tool)"
        )
    return policy


def policies(tools: list[BaseTool]) -> dict[str, ToolPolicy]:
    """Declarations by tool name; ConfigurationError for an undeclared or duplicate tool."""
    found: dict[str, ToolPolicy] = {}
    for tool in tools:
        if tool.name in found:
            raise ConfigurationError(f"two tools are named {tool.name!r}")
        found[tool.name] = require_policy(tool)
    return found


@dataclass
class CallInFlight:
    """The tool call running now, as the middleware that runs it sees it."""

    key: str
    """Its idempotency key."""
    args: dict[str, Any] | None = None
    """The arguments it ran with when an operator edited them; None: the model's."""


_current_call: contextvars.ContextVar[CallInFlight | None] = contextvars.ContextVar(
    "sagagraph_tool_call", default=None
)


@contextmanager
def calling_with_key(key: str) -> Iterator[CallInFlight]:
    """Make ``key`` the answer of :func:`idempotency_key` while one tool call runs."""
    flight = CallInFlight(key)
    token = _current_call.set(flight)
    try:
        yield flight
    finally:
        _current_call.reset(token)


def note_executed_args(args: dict[str, Any]) -> None:
    """Record the arguments the running call executes with (an operator's edit), so its log
    record, and so its undo, see what ran rather than what the model asked for."""
    flight = _current_call.get()
    if flight is not None:
        flight.args = dict(args)


_saga_locks: contextvars.ContextVar[SagaLocks | None] = contextvars.ContextVar(
    "sagagraph_saga_locks", default=None
)


@contextmanager
def holding_locks_for(locks: SagaLocks | None) -> Iterator[None]:
    """Make ``locks`` (the saga's, as its step context holds them) the lock table that
    calls of tools declared with ``lock=`` take their keys in, while an agent step runs."""
    token = _saga_locks.set(locks)
    try:
        yield
    finally:
        _saga_locks.reset(token)


def current_saga_locks() -> SagaLocks | None:
    """The saga's locks for the agent step running now; None outside an agent step."""
    return _saga_locks.get()


def lock_owner(n: int, label: str) -> str:
    """The name a call's lock is held under (``<step>:call-<n>``): its undo releases the key
    only when this call took it, not when an earlier call or a step of the saga did."""
    return f"{label}:call-{n}"


def idempotency_key() -> str:
    """The idempotency key of the tool call running now (``saga_id:step:call-n``).

    Call it inside a compensable tool and hand it to the partner API, which deduplicates by
    it; the undo sees the same key in its record. ConfigurationError outside a call that
    sagagraph's middleware runs.
    """
    flight = _current_call.get()
    if flight is None:
        raise ConfigurationError(
            "idempotency_key(): no tool call is running under ToolCompensationMiddleware"
        )
    return flight.key
