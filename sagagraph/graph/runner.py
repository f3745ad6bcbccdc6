"""Run, resume, inspect and resolve sagas on a compiled saga graph: one implementation, two drivers.

Each saga is one LangGraph thread whose id is the saga id. Runs use ``durability="sync"``:
a step's completion is on disk before the next step starts, so a crash re-runs at most the
step that was running.

What each call does is written once, as a flow (:mod:`sagagraph.saga.drivers`) that yields
the reads and the runs it needs: :func:`~sagagraph.saga.drivers.drive` does them with
``get_state``, ``get_tuple`` and ``stream`` (this module's functions),
:func:`~sagagraph.saga.drivers.adrive` with ``aget_state``, ``aget_tuple`` and ``astream``
(:mod:`sagagraph.graph.async_runner`).

Every function that drives a saga holds the saga's lease while it does
(:mod:`sagagraph.graph.leases`): a saga still running in another process or thread is
refused with SagaBusyError, and ``recover`` skips it instead of running it twice. Each takes
optional ``hooks`` (:class:`~sagagraph.saga.hooks.SagaHooks`) that observe the run: its start
and end, each event as its superstep is recorded, each step's attempts, each route decision.

Recovering and rolling back the sagas a stopped process left unfinished, and answering tool
calls that wait for approval: :mod:`sagagraph.graph.recover`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.types import Command, Durability, StateSnapshot, StreamMode

from sagagraph.errors import (
    CheckpointerLostError,
    ConfigurationError,
    InputError,
    SagaNotFoundError,
    StorageFullError,
    is_connection_lost,
    is_disk_full,
)
from sagagraph.graph.hooks import HOOKS_KEY, check_new_input, definition_of, hooks_of
from sagagraph.graph.leases import saga_lease
from sagagraph.graph.nodes import recorded_input
from sagagraph.graph.state import START, pending_nodes
from sagagraph.graph.views import (
    approvals_in_writes,
    finished_view,
    is_saga_state,
    pending_approvals,
    state_view,
)
from sagagraph.saga.drivers import Flow, Tell, drive
from sagagraph.saga.hooks import NO_HOOKS, SagaHooks, combine_hooks
from sagagraph.saga.names import RESERVED_NAMES, TERMINAL_STATUSES, new_saga_id, validate_saga_id
from sagagraph.saga.tracing import OPEN_TELEMETRY, tracer
from sagagraph.saga.view import Event, describe_error
from sagagraph.storable_text import has_surrogate

log = logging.getLogger("sagagraph")

DEFAULT_DURABILITY: Durability = "sync"
RECURSION_LIMIT = 1_000
"""Supersteps one invocation may take; a saga of n steps needs about 2n + 2."""

INTERRUPT = "__interrupt__"
"""LangGraph's key for the interrupts a run paused on, in its stream and its output."""
OPERATOR_ACTION = "resolve"
"""The action of the events that record what an operator did (retry, skip, rollback)."""


class SagaApp(Protocol):
    """The part of a compiled LangGraph graph the runners use."""

    checkpointer: Any

    def invoke(self, input: Any, config: RunnableConfig | None = ..., **kwargs: Any) -> Any: ...

    @property
    def stream(self) -> Callable[..., Iterator[Any]]:
        """LangGraph's ``stream`` (typed loosely: its overloads do not fit a Protocol)."""
        ...

    @property
    def astream(self) -> Callable[..., AsyncIterator[Any]]:
        """LangGraph's ``astream`` (typed loosely: its keyword arguments are a TypedDict)."""
        ...

    def get_state(self, config: RunnableConfig, *, subgraphs: bool = ...) -> StateSnapshot: ...

    async def aget_state(
        self, config: RunnableConfig, *, subgraphs: bool = ...
    ) -> StateSnapshot: ...


def saga_config(saga_id: str) -> RunnableConfig:
    """The LangGraph config of one saga: its thread, and room for long sagas."""
    return {"configurable": {"thread_id": saga_id}, "recursion_limit": RECURSION_LIMIT}


SAGA_TAG_PREFIX = "saga_id:"
"""The tag each run of a saga carries (``saga_id:<id>``), beside ``metadata["saga_id"]``."""


def run_config(
    saga_id: str, config: RunnableConfig | None = None, hooks: SagaHooks | None = None
) -> RunnableConfig:
    """The config a run of the saga streams with: :func:`saga_config` merged with the caller's
    LangChain ``config`` (callbacks, tags, metadata, run name), plus the saga id in the
    metadata (``saga_id``) and the tags (``saga_id:<id>``), so that a tracer (LangSmith,
    Langfuse, a callback handler) can find every run of a saga, and the run's ``hooks``,
    which the graph's nodes tell (:mod:`sagagraph.graph.hooks`).

    The thread is the saga's own: a ``configurable.thread_id`` naming another saga is refused
    (ConfigurationError), since it would run one saga's graph on another's checkpoints.
    LangGraph copies string metadata into each checkpoint's metadata: keep secrets out of it.
    """
    own = saga_config(saga_id)
    own["metadata"] = {"saga_id": saga_id}
    own["tags"] = [SAGA_TAG_PREFIX + saga_id]
    if hooks is not None:
        own["configurable"][HOOKS_KEY] = hooks
    if not config:
        return own
    thread = (config.get("configurable") or {}).get("thread_id", saga_id)
    if thread != saga_id:
        raise ConfigurationError(
            f"config: configurable.thread_id {thread!r} is not the saga's id {saga_id!r}; "
            "pass saga_id= instead"
        )
    merged = merge_configs(config, own)
    if "recursion_limit" in config:  # the caller's limit, when it set one, wins over ours
        merged["recursion_limit"] = config["recursion_limit"]
    return merged


def already_exists(saga_id: str) -> InputError:
    """The error of a run that would start a saga on an id that already holds one."""
    return InputError(f"saga {saga_id!r}: already exists; use resume, or pick another id")


def initial_state(
    saga_id: str, input: Mapping[str, Any], *, fail_at: str | None = None
) -> dict[str, Any]:
    check_storable_input(input)
    state: dict[str, Any] = {"saga_id": saga_id, "input": dict(input)}
    # Written only when set: on PostgreSQL each field of the input is a row of its own.
    if fail_at is not None:
        state["fail_at"] = fail_at
    return state


def check_storable_input(input: Mapping[Any, Any], where: str = "input") -> None:
    """InputError naming the field when a text of ``input`` holds a lone surrogate.

    That is how Python spells a file name's bytes that are not UTF-8 (``os.fsdecode``), and
    LangGraph's checkpoint serializer stores each such character as ``?``: the saga would run,
    but a resumed one would read another name (and not find its paper). Refused before
    anything is written.
    """
    for key, value in input.items():
        field = f"{where}.{key}"
        if isinstance(value, str):
            if has_surrogate(value):
                raise InputError(
                    f"saga {field}: {value!r} is not UTF-8 text (a file name from another "
                    "system?): a checkpoint would store its odd characters as '?' and a "
                    "resumed saga would not find the file; rename it"
                )
        elif isinstance(value, Mapping):
            check_storable_input(value, field)
        elif isinstance(value, (list, tuple)):
            check_storable_input({str(i): item for i, item in enumerate(value)}, field)


def holds_saga(saved: CheckpointTuple | None) -> bool:
    """True when ``saved`` (a saga thread's last checkpoint) has any channel written."""
    return saved is not None and bool(saved.checkpoint["channel_values"])


class RunOutput:
    """What a run streamed: the events recorded since the last state (:meth:`take` returns
    them, once their superstep is recorded, in the order the saga's state records them), and
    the last state values with the interrupts, as ``invoke`` collects them (the same two
    stream modes), so the view of a finished saga needs no snapshot.

    Events are read from the state after each superstep, not from each node's update: steps
    that run side by side finish in any order, and their events are recorded in the graph's
    order, which is the order ``status`` shows. The first state a run streams is what was
    recorded before it (the input, or the checkpoint it resumes): its events are not new."""

    MODES: ClassVar[list[StreamMode]] = ["updates", "values"]  # a list: chunks are (mode, data)

    def __init__(self) -> None:
        self.modes = self.MODES
        self.values: dict[str, Any] | None = None
        self.interrupted = False
        self.told: int | None = None
        """How many of the state's events :meth:`take` has returned (None: no state yet)."""

    def take(self, chunk: tuple[str, Any]) -> list[Event]:
        """Read one chunk of the stream; the events it shows recorded since the last state."""
        mode, payload = chunk
        if mode != "values":
            self.interrupted |= INTERRUPT in payload
            return []
        self.values = payload if isinstance(payload, dict) else None
        self.interrupted |= self.values is None or INTERRUPT in self.values
        if self.values is None:
            return []
        events: list[Event] = self.values.get("events") or []
        new = events[self.told :] if self.told is not None else []
        self.told = len(events)
        return new

    def finished(self) -> dict[str, Any] | None:
        """The final values when the saga ended (terminal status, no interrupt), else None."""
        if self.interrupted or self.values is None:
            return None
        if self.values.get("status") not in TERMINAL_STATUSES:
            return None
        return self.values

    def outcome(self) -> str:
        """How the run ended, for the hooks: the saga's status, or ``paused`` when it stopped
        before an end (waiting for an operator, or interrupted)."""
        status = self.values.get("status") if self.values and not self.interrupted else None
        return str(status) if status else "paused"


def run_hooks(app: object, hooks: SagaHooks | None) -> SagaHooks:
    """The hooks a runner tells: OpenTelemetry's (while a tracer provider is installed), the
    graph's (its builder's), the run's."""
    traced = OPEN_TELEMETRY if tracer() is not None else None
    return combine_hooks(traced, hooks_of(app), hooks)


@dataclass(frozen=True)
class _Snapshot:
    """Read the saga's state snapshot."""

    app: SagaApp
    saga_id: str

    def run(self) -> StateSnapshot:
        return self.app.get_state(saga_config(validate_saga_id(self.saga_id)))

    async def arun(self) -> StateSnapshot:
        return await self.app.aget_state(saga_config(validate_saga_id(self.saga_id)))


@dataclass(frozen=True)
class _Saved:
    """Read a checkpoint of the saga from the checkpointer, without building a snapshot."""

    checkpointer: BaseCheckpointSaver[Any]
    config: RunnableConfig

    def run(self) -> CheckpointTuple | None:
        return self.checkpointer.get_tuple(self.config)

    async def arun(self) -> CheckpointTuple | None:
        return await self.checkpointer.aget_tuple(self.config)


@dataclass(frozen=True)
class _Run:
    """Run the saga's graph until it ends or pauses: each event to the hooks as its superstep
    is recorded (an operator's too); what it streamed comes back."""

    app: SagaApp
    payload: Any
    saga_id: str
    config: RunnableConfig
    durability: Durability
    hooks: SagaHooks

    def run(self) -> RunOutput:
        output, hooks, saga_id = RunOutput(), self.hooks, self.saga_id
        try:
            stream = self.app.stream(
                self.payload, self.config, durability=self.durability, stream_mode=output.modes
            )
            for chunk in stream:
                new = output.take(chunk)
                for event in new if hooks is not NO_HOOKS else ():
                    hooks.on_event(saga_id, event)
                    if event["action"] == OPERATOR_ACTION:
                        hooks.on_operator(saga_id, event)
        except Exception as error:
            raise_if_disk_full(error, saga_id, self.app)
            raise_if_connection_lost(error, saga_id)
            raise
        return output

    async def arun(self) -> RunOutput:
        output, hooks, saga_id = RunOutput(), self.hooks, self.saga_id
        try:
            stream = self.app.astream(
                self.payload, self.config, durability=self.durability, stream_mode=output.modes
            )
            async for chunk in stream:
                new = output.take(chunk)
                for event in new if hooks is not NO_HOOKS else ():
                    await hooks.aon_event(saga_id, event)
                    if event["action"] == OPERATOR_ACTION:
                        await hooks.aon_operator(saga_id, event)
        except Exception as error:
            raise_if_disk_full(error, saga_id)
            raise_if_connection_lost(error, saga_id)
            raise
        return output


def streaming(
    app: SagaApp,
    payload: Any,
    saga_id: str,
    durability: Durability,
    hooks: SagaHooks | None,
    config: RunnableConfig | None = None,
    *,
    operation: str = "run",
) -> Flow[dict[str, Any] | None]:
    """Run the saga's graph until it ends or pauses; the caller holds the saga's lease.

    ``config`` is the caller's LangChain config (:func:`run_config`). The hooks are told the
    run's start and end (``operation``: run, resume...). Returns the final state values when
    the saga ended, None when it paused or stopped unfinished (read a snapshot then).
    """
    told = run_hooks(app, hooks)
    if told is not NO_HOOKS:
        yield Tell(told.on_run_start, told.aon_run_start, saga_id, operation)
    try:
        run = _Run(app, payload, saga_id, run_config(saga_id, config, hooks), durability, told)
        output = yield run
    except BaseException:
        if told is not NO_HOOKS:
            yield Tell(told.on_run_end, told.aon_run_end, saga_id, "error")
        raise
    assert isinstance(output, RunOutput)
    if told is not NO_HOOKS:
        yield Tell(told.on_run_end, told.aon_run_end, saga_id, output.outcome())
    return output.finished()


def raise_if_disk_full(error: BaseException, saga_id: str, app: SagaApp | None = None) -> None:
    """StorageFullError (one line: what is full, what to do) when ``error`` is a full disk.

    Steps turn their own errors (a full outputs disk) into failures and compensations; what
    escapes a run is the checkpointer's. Its writes are all-or-nothing, so the saga is at its
    last checkpoint; when ``app`` shows it has none (the disk filled before its first), nothing
    was stored, and ``recover`` would find nothing: the saga is to be run again.
    """
    if not is_disk_full(error):
        return
    where = f"saga {saga_id!r}: the checkpointer's disk is full ({describe_error(error)}); "
    if app is not None and not _stored(app, saga_id):
        raise StorageFullError(
            where + "nothing was stored (the saga has no checkpoint): free space, then run it again"
        ) from None
    raise StorageFullError(
        where + "the saga stopped at its last checkpoint: free space, then run `sagagraph recover`"
    ) from None


def raise_if_connection_lost(error: BaseException, saga_id: str) -> None:
    """CheckpointerLostError (one line, with what finishes the saga) when ``error`` is the
    checkpointer's database connection breaking: its writes are all-or-nothing, so the saga
    is at its last checkpoint, and ``recover`` finishes it once the database answers."""
    if is_connection_lost(error):
        raise CheckpointerLostError(
            f"saga {saga_id!r}: lost the connection to the checkpointer's database "
            f"({describe_error(error)}); the saga stopped at its last checkpoint: "
            "once the database answers, run `sagagraph recover` to finish it"
        ) from None


def _stored(app: SagaApp, saga_id: str) -> bool:
    """True unless the checkpointer answers that it holds no checkpoint of ``saga_id``."""
    try:
        return app.checkpointer.get_tuple(saga_config(saga_id)) is not None
    except Exception:  # cannot tell: say what holds when something was stored
        return True


def snapshot_view(
    snap: StateSnapshot, saga_id: str, writes: list[tuple[str, str, Any]] | None = None
) -> dict[str, Any]:
    """The JSON view of a snapshot already read; SagaNotFoundError when it holds no state, or
    a state that is not a saga's (a checkpointer shared with other graphs holds their threads
    too). ``writes`` (the checkpoint's pending writes) show the tool calls waiting for
    approval when the snapshot has no tasks (:func:`foreign_writes`)."""
    if not snap.values:
        raise SagaNotFoundError(f"saga {saga_id!r}: not found in this checkpointer")
    if not is_saga_state(snap.values, saga_id):
        raise SagaNotFoundError(
            f"saga {saga_id!r}: this checkpointer's thread {saga_id!r} holds another graph's "
            "state, not a saga's"
        )
    # Steps whose writes are stored but not checkpointed count as next: the saga is unfinished.
    waiting = any(t.interrupts for t in snap.tasks)
    approvals = pending_approvals(snap.tasks) or approvals_in_writes(writes or [])
    waiting = waiting or bool(approvals)
    return state_view(
        snap.values, saga_id, next=pending_nodes(snap), waiting=waiting, approvals=approvals
    )


def status_flow(app: SagaApp, saga_id: str) -> Flow[dict[str, Any]]:
    """The JSON view of one saga; SagaNotFoundError when no checkpoint has it."""
    snap = yield _Snapshot(app, saga_id)
    assert isinstance(snap, StateSnapshot)
    writes = None
    if foreign_writes(snap) and isinstance(app.checkpointer, BaseCheckpointSaver):
        saved = yield _Saved(app.checkpointer, snap.config)
        writes = list(saved.pending_writes or []) if isinstance(saved, CheckpointTuple) else None
    return snapshot_view(snap, saga_id, writes)


def saga_status(app: SagaApp, saga_id: str) -> dict[str, Any]:
    """The JSON view of one saga; SagaNotFoundError when no checkpoint has it."""
    return drive(status_flow(app, saga_id))


def foreign_writes(snap: StateSnapshot) -> bool:
    """True when the snapshot's pending writes are worth reading for tool calls waiting for
    approval: an unfinished saga whose snapshot shows no tasks, as when a graph other than
    the saga's reads it (the ``sagagraph`` command reading another definition's saga)."""
    status = snap.values.get("status") if snap.values else None
    return bool(snap.values) and not snap.tasks and status not in TERMINAL_STATUSES


def after_run(
    app: SagaApp, saga_id: str, finished: dict[str, Any] | None, hooks: SagaHooks | None
) -> Flow[dict[str, Any]]:
    """The view once a run returned: from its final values when the saga ended, else read;
    the hooks are told of each tool call it left waiting for approval."""
    if finished is not None:
        return finished_view(finished, saga_id)
    view = yield from status_flow(app, saga_id)
    if view["approvals"]:
        told = run_hooks(app, hooks)
        for approval in view["approvals"]:
            yield Tell(told.on_approval, told.aon_approval, saga_id, approval)
    return view


def saga_input(app: SagaApp, saga_id: str) -> dict[str, Any]:
    """The input the saga was started with, even when it was killed before its first step
    read it (it then sits in LangGraph's input channel, not in the state yet)."""
    values = drive(status_snapshot(app, saga_id)).values
    if values.get("input") is not None:
        return dict(values["input"])
    saved = app.checkpointer.get_tuple(saga_config(saga_id)) if app.checkpointer else None
    start = saved.checkpoint["channel_values"].get(START) if saved is not None else None
    return dict(start.get("input") or {}) if isinstance(start, dict) else {}


def check_fail_at(app: object, fail_at: str | None) -> None:
    """Refuse ``fail_at`` naming no step: an injection that never fires would hide a typo."""
    nodes = getattr(app, "nodes", None)
    if fail_at is None or nodes is None:
        return
    steps = [name for name in nodes if name not in RESERVED_NAMES]
    if fail_at not in steps:
        raise ConfigurationError(
            f"fail_at: unknown step {fail_at!r} (steps: {', '.join(steps) or 'none'})"
        )


def status_snapshot(app: SagaApp, saga_id: str) -> Flow[StateSnapshot]:
    """The saga's state snapshot."""
    snap = yield _Snapshot(app, saga_id)
    assert isinstance(snap, StateSnapshot)
    return snap


def running(
    app: SagaApp,
    input: Mapping[str, Any],
    saga_id: str,
    fail_at: str | None,
    durability: Durability,
    hooks: SagaHooks | None,
    config: RunnableConfig | None,
) -> Flow[dict[str, Any]]:
    """Start a new saga (its lease held) and run it until it ends or waits; its view."""
    if isinstance(app.checkpointer, BaseCheckpointSaver):
        # One checkpoint read, without a snapshot (tasks, pending writes): several times less.
        saved = yield _Saved(app.checkpointer, saga_config(saga_id))
        exists = holds_saga(saved if isinstance(saved, CheckpointTuple) else None)
    else:
        exists = bool((yield from status_snapshot(app, saga_id)).values)
    if exists:
        raise already_exists(saga_id)
    # What the definition records (the outputs folder) goes in with the input, so the first
    # checkpoint holds it before any step runs: a recover from elsewhere writes there.
    definition = definition_of(app)
    recorded = recorded_input(definition, input) if definition is not None else None
    payload = initial_state(saga_id, recorded or input, fail_at=fail_at)
    finished = yield from streaming(app, payload, saga_id, durability, hooks, config)
    return (yield from after_run(app, saga_id, finished, hooks))


def resuming(
    app: SagaApp,
    saga_id: str,
    durability: Durability,
    hooks: SagaHooks | None,
    config: RunnableConfig | None,
) -> Flow[dict[str, Any]]:
    """Continue an unfinished saga (its lease held); one waiting for an operator, or with
    nothing to run, is left as it is. Its view."""
    view = yield from status_flow(app, saga_id)
    if view["waiting_for_operator"] or not view["next"]:
        return view
    finished = yield from streaming(
        app, None, saga_id, durability, hooks, config, operation="resume"
    )
    return (yield from after_run(app, saga_id, finished, hooks))


def answering(
    app: SagaApp,
    saga_id: str,
    answer: Command[Any],
    durability: Durability,
    hooks: SagaHooks | None,
    config: RunnableConfig | None,
    *,
    operation: str,
) -> Flow[dict[str, Any]]:
    """Resume a paused saga (its lease held) with an operator's ``answer``; its view."""
    finished = yield from streaming(
        app, answer, saga_id, durability, hooks, config, operation=operation
    )
    return (yield from after_run(app, saga_id, finished, hooks))


def run_saga(
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

    Input the saga's definition refuses (its ``check_input``: the paper saga's checks that the
    paper is readable) raises InputError before anything is written: no saga exists after it.
    ``hooks`` observe the run (:class:`~sagagraph.saga.hooks.SagaHooks`). ``config`` is a
    LangChain config (callbacks, tags, metadata, run name) merged with the saga's own; its
    metadata and tags carry the saga id (:func:`run_config`).
    """
    # An explicit empty id is refused, not silently replaced by a fresh one.
    saga_id = validate_saga_id(new_saga_id() if saga_id is None else saga_id)
    check_fail_at(app, fail_at)
    check_new_input(app, input)  # unusable input: InputError, and no saga is started
    with saga_lease(app.checkpointer, saga_id):
        return drive(running(app, input, saga_id, fail_at, durability, hooks, config))


def resume_saga(
    app: SagaApp,
    saga_id: str,
    *,
    durability: Durability = DEFAULT_DURABILITY,
    hooks: SagaHooks | None = None,
    config: RunnableConfig | None = None,
) -> dict[str, Any]:
    """Continue an unfinished saga from its last checkpoint; steps that committed do not re-run.

    A saga waiting for an operator is left as it is: use :func:`resolve_saga`. SagaBusyError
    when another process or thread is running the saga now. ``hooks`` and ``config``: as
    :func:`run_saga`.
    """
    with saga_lease(app.checkpointer, saga_id):
        return drive(resuming(app, saga_id, durability, hooks, config))


def resume_leased(
    app: SagaApp,
    saga_id: str,
    durability: Durability,
    hooks: SagaHooks | None,
    config: RunnableConfig | None = None,
) -> dict[str, Any]:
    """:func:`resume_saga` for a caller that already holds the saga's lease (recovery does)."""
    return drive(resuming(app, saga_id, durability, hooks, config))


def resolve_saga(
    app: SagaApp,
    saga_id: str,
    action: Literal["retry", "skip"],
    *,
    note: str = "",
    durability: Durability = DEFAULT_DURABILITY,
    hooks: SagaHooks | None = None,
    config: RunnableConfig | None = None,
) -> dict[str, Any]:
    """Answer a saga waiting for an operator: ``retry`` the failed compensation, or ``skip`` it.

    ``skip`` records that an operator took responsibility (with ``note``) and what could not
    be undone (``skipped[].left_behind``); once the other compensations ran, the saga ends
    ``resolved_by_operator``. A retry that fails again pauses the saga again. ``hooks`` and
    ``config``: as :func:`run_saga`.
    """
    if action not in ("retry", "skip"):
        raise ConfigurationError(f"resolve: action must be 'retry' or 'skip', got {action!r}")
    if action == "skip" and not note.strip():
        raise InputError("resolve --skip: --note is required (who decided, and why)")
    with saga_lease(app.checkpointer, saga_id):
        view = saga_status(app, saga_id)
        if not view["waiting_for_operator"]:
            raise InputError(
                f"saga {saga_id!r}: not waiting for an operator (status {view['status']})"
            )
        answer: Command[Any] = Command(resume={"action": action, "note": note.strip()})
        return drive(
            answering(app, saga_id, answer, durability, hooks, config, operation="resolve")
        )
