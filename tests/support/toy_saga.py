"""A toy saga for engine tests: steps ``s1..sN`` whose calls and effects land in a SQLite journal.

The journal is a real file, so a test can count calls and effects across processes (the
crash tests kill a worker and resume from another). Each step's effect is keyed by its
idempotency key: applying it twice, or undoing it twice, changes nothing the second time,
and a forward write after the key was compensated is refused, as DESIGN asks of stores.

A :class:`Plan` scripts how steps misbehave: transient failures, permanent failures, halts,
hangs, failing compensations, and crashes (a ``BaseException`` in-process, or ``os._exit`` /
``SIGKILL`` in a worker process) before or after the effect is written. The saga input can
script one saga's misbehaviour too (``fail``, ``transient``, ``undo_transient``,
``broken_undo``), so many sagas with different faults share one definition.

With ``outputs``, each step also writes ``<outputs>/<saga_id>/<step>.txt`` through the paper
agents' :class:`~sagagraph.agents.store.OutputStore` (and its compensation deletes it), so
tests can check that no orphan file is left behind.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from langgraph.graph.state import CompiledStateGraph

from sagagraph import (
    CompensatedKeyError,
    Retry,
    SagaDefinition,
    SagaHooks,
    Step,
    StepContext,
    StepResult,
    build_saga_graph,
    open_checkpointer,
)
from sagagraph.agents.store import OutputStore
from sagagraph.saga.view import Event

CRASH_EXIT_CODE = 17
"""Exit status of a worker killed on purpose with ``os._exit``."""
HOLDING = "HOLDING"
"""What a worker prints when it stops at its boundary to be killed from outside."""

Action = Literal["execute", "compensate"]
Moment = Literal["before", "after", "during"]
"""``during`` exists only for the paper store's writes (see ``tests.support.crash_worker``)."""


class TransientError(ConnectionError):
    """A failure worth retrying."""


class PermanentError(RuntimeError):
    """A failure no retry fixes."""


class SimulatedCrash(BaseException):
    """Stands for the process dying: not an ``Exception``, so the engine does not catch it."""


def step_names(n: int) -> list[str]:
    return [f"s{i}" for i in range(1, n + 1)]


class Journal:
    """Calls and effects of toy steps, in one SQLite file shared by processes and threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with closing(sqlite3.connect(self.path, timeout=30)) as conn:
            # WAL lets the threads of the concurrency tests read while one writes.
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(
                """
                CREATE TABLE IF NOT EXISTS calls (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    saga_id TEXT NOT NULL, step TEXT NOT NULL, action TEXT NOT NULL,
                    attempt INTEGER NOT NULL, has_result INTEGER NOT NULL);
                CREATE TABLE IF NOT EXISTS effects (
                    key TEXT PRIMARY KEY, saga_id TEXT NOT NULL, step TEXT NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('done', 'undone')),
                    applied INTEGER NOT NULL, undone INTEGER NOT NULL);
                """
            )

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.path, timeout=30, isolation_level=None)) as conn:
            # Tests kill processes, not machines: what the OS has is safe, so skip the fsyncs.
            conn.execute("PRAGMA synchronous=OFF")
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def record_call(self, ctx: StepContext, action: Action, has_result: bool = True) -> None:
        with self._connect() as conn:
            conn.execute(
                "INSERT INTO calls (saga_id, step, action, attempt, has_result) "
                "VALUES (?, ?, ?, ?, ?)",
                (ctx.saga_id, ctx.step, action, ctx.attempt, int(has_result)),
            )

    def apply(self, ctx: StepContext) -> None:
        """Write the step's effect once per idempotency key; refuse a compensated key."""
        key = ctx.idempotency_key
        with self._connect() as conn:
            row = conn.execute("SELECT state FROM effects WHERE key = ?", (key,)).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO effects VALUES (?, ?, ?, 'done', 1, 0)",
                    (key, ctx.saga_id, ctx.step),
                )
            elif row[0] == "undone":
                raise CompensatedKeyError(f"{key}: already compensated; late write refused")

    def undo(self, ctx: StepContext) -> None:
        """Undo the effect once; remember the key even when there was nothing to undo."""
        key = ctx.idempotency_key
        with self._connect() as conn:
            row = conn.execute("SELECT state FROM effects WHERE key = ?", (key,)).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO effects VALUES (?, ?, ?, 'undone', 0, 0)",
                    (key, ctx.saga_id, ctx.step),
                )
            elif row[0] == "done":
                conn.execute(
                    "UPDATE effects SET state = 'undone', undone = undone + 1 WHERE key = ?",
                    (key,),
                )

    def calls(self, saga_id: str, action: Action = "execute") -> list[str]:
        """Steps called for ``action``, in call order, one entry per call (retries included)."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT step FROM calls WHERE saga_id = ? AND action = ? ORDER BY seq",
                (saga_id, action),
            ).fetchall()
        return [r[0] for r in rows]

    def compensate_results(self, saga_id: str) -> dict[str, bool]:
        """For each compensated step, whether its last compensate call had a result."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT step, has_result FROM calls WHERE saga_id = ? AND action = 'compensate' "
                "ORDER BY seq",
                (saga_id,),
            ).fetchall()
        return {step: bool(has) for step, has in rows}

    def effects(self, saga_id: str) -> dict[str, tuple[str, int, int]]:
        """``step -> (state, times applied, times undone)`` for one saga."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT step, state, applied, undone FROM effects WHERE saga_id = ?", (saga_id,)
            ).fetchall()
        return {step: (state, applied, undone) for step, state, applied, undone in rows}

    def saga_ids(self) -> set[str]:
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT saga_id FROM calls UNION SELECT saga_id FROM effects"
            ).fetchall()
        return {r[0] for r in rows}


@dataclass
class Crash:
    """Where a toy step dies: in ``step``'s ``action``, before or after its effect."""

    step: str
    action: Action = "execute"
    moment: Moment = "after"
    hard: bool = False
    """True: the process dies (a worker process); False: raise SimulatedCrash (in-process)."""
    sigkill: bool = False
    """With ``hard``: die by ``SIGKILL`` instead of ``os._exit``."""
    hold: bool = False
    """With ``hard``: print ``HOLDING`` and stay alive (at most a minute) until killed, so a
    test can act while this process still holds the saga."""
    remaining: int = 1
    """How many more times to crash; the in-process crash fires once, like a real one."""


def die(crash: Crash) -> None:
    """Stop here as ``crash`` says: the process dies, or SimulatedCrash unwinds the graph."""
    if crash.hard and crash.hold:
        print(HOLDING, flush=True)
        threading.Event().wait(60)
    if crash.hard and crash.sigkill:
        os.kill(os.getpid(), signal.SIGKILL)
    if crash.hard:
        os._exit(CRASH_EXIT_CODE)
    raise SimulatedCrash(f"crash in {crash.step}.{crash.action} ({crash.moment} the effect)")


@dataclass
class Plan:
    """How toy steps misbehave. Attempts count from 1 within one execute/compensate call."""

    transient_failures: dict[str, int] = field(default_factory=dict)
    """Step -> how many first attempts raise TransientError."""
    failing: set[str] = field(default_factory=set)
    """Steps whose execute raises PermanentError (after writing nothing); a saga whose input
    has ``{"fail": STEP}`` fails at that step too."""
    halt_at: str | None = None
    """Step that returns ``halt=True``."""
    compensation_failures: dict[str, int] = field(default_factory=dict)
    """Step -> how many first compensate attempts raise TransientError."""
    broken_compensations: set[str] = field(default_factory=set)
    """Steps whose compensate raises until the test removes them from this set."""
    flaky_compensations: dict[str, int] = field(default_factory=dict)
    """Step -> how many compensate calls raise TransientError, counted across attempts and
    across operator retries (the count goes down with each failure)."""
    crash: Crash | None = None
    hang: dict[str, threading.Event] = field(default_factory=dict)
    """Step -> event its execute waits for (at most 10 s) before doing anything."""
    barrier: threading.Barrier | None = None
    """Concurrent sagas meet here inside ``barrier_step``, so they are in flight together."""
    barrier_step: str = "s2"


def _scripted(ctx: StepContext, field_name: str) -> int:
    """First attempts the saga input asks this step to fail: ``{"transient": {"s2": 1}}``."""
    script = ctx.input.get(field_name) or {}
    return int(script.get(ctx.step, 0)) if isinstance(script, dict) else 0


@dataclass
class ToyStep:
    """A participant that journals its calls and applies one keyed effect (and file)."""

    name: str
    journal: Journal
    plan: Plan
    store: OutputStore | None = None
    """Where the step writes ``<step>.txt``; None: the journal is the only effect."""

    @property
    def file_name(self) -> str:
        return f"{self.name}.txt"

    def _maybe_crash(self, action: Action, moment: Moment) -> None:
        crash = self.plan.crash
        if crash is None or crash.remaining <= 0:
            return
        if (crash.step, crash.action, crash.moment) != (self.name, action, moment):
            return
        crash.remaining -= 1
        die(crash)

    def execute(self, ctx: StepContext) -> StepResult:
        self.journal.record_call(ctx, "execute")
        if self.name in self.plan.hang:
            self.plan.hang[self.name].wait(10)
        transient = self.plan.transient_failures.get(self.name, 0) + _scripted(ctx, "transient")
        if ctx.attempt <= transient:
            raise TransientError(f"{self.name}: service busy (attempt {ctx.attempt})")
        if self.name in self.plan.failing or ctx.input.get("fail") == self.name:
            raise PermanentError(f"{self.name}: refused")
        if self.plan.barrier is not None and self.name == self.plan.barrier_step:
            self.plan.barrier.wait(10)
        if self.plan.halt_at == self.name:
            return StepResult(data={"why": "not worth it"}, halt=True, reason="nothing to do")
        self._maybe_crash("execute", "before")
        self.journal.apply(ctx)
        output = ctx.step
        if self.store is not None:
            written = self.store.write(ctx.idempotency_key, self.file_name, f"{ctx.saga_id}\n")
            output = str(written)
        self._maybe_crash("execute", "after")
        return StepResult(data={"step": self.name, "seen": sorted(ctx.results)}, output=output)

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        self.journal.record_call(ctx, "compensate", has_result=result is not None)
        failures = self.plan.compensation_failures.get(self.name, 0)
        if ctx.attempt <= failures + _scripted(ctx, "undo_transient"):
            raise TransientError(f"{self.name}: undo busy (attempt {ctx.attempt})")
        if self.plan.flaky_compensations.get(self.name, 0) > 0:
            self.plan.flaky_compensations[self.name] -= 1
            raise TransientError(f"{self.name}: undo failed (attempt {ctx.attempt})")
        broken = ctx.input.get("broken_undo") or ()
        if self.name in self.plan.broken_compensations or self.name in broken:
            raise PermanentError(f"{self.name}: undo refused")
        self._maybe_crash("compensate", "before")
        self.journal.undo(ctx)
        if self.store is not None:
            self.store.compensate(ctx.idempotency_key, names=(self.file_name,))
        self._maybe_crash("compensate", "after")


FAST_RETRY = Retry(max_attempts=3, backoff=0.0)


def toy_saga(
    n: int,
    journal: Journal,
    plan: Plan | None = None,
    *,
    retry: Retry | None = None,
    compensation_retry: Retry = FAST_RETRY,
    timeout: float | None = None,
    outputs: Path | None = None,
) -> SagaDefinition:
    """Steps ``s1..sn`` sharing ``plan``; no backoff so tests stay fast.

    With ``outputs``, each step also writes a file under ``<outputs>/<saga_id>/``.
    """
    plan = plan or Plan()
    store = OutputStore(outputs) if outputs is not None else None
    steps = tuple(
        Step(
            ToyStep(name, journal, plan, store),
            retry=retry or Retry(),
            compensation_retry=compensation_retry,
            timeout=timeout,
            can_halt=plan.halt_at == name,
        )
        for name in step_names(n)
    )
    return SagaDefinition("toy", steps)


class EventHooks(SagaHooks):
    """Hooks that hand each event recorded in a saga's state to ``callback``."""

    def __init__(self, callback: Callable[[Event], None]) -> None:
        self.callback = callback

    def on_event(self, saga_id: str, event: Event) -> None:
        self.callback(event)


@contextmanager
def saga_app(
    definition: SagaDefinition,
    url: str = "memory://",
    *,
    hooks: SagaHooks | None = None,
) -> Iterator[CompiledStateGraph[Any, Any, Any, Any]]:
    """The definition's graph compiled on the checkpointer ``url`` names, open for the block."""
    with open_checkpointer(url) as checkpointer:
        graph = build_saga_graph(definition, hooks=hooks)
        yield graph.compile(checkpointer=checkpointer)


def rebuilt(
    app: CompiledStateGraph[Any, Any, Any, Any],
    definition: SagaDefinition,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A fresh graph on the same checkpointer: what a new process sees of an in-memory saga."""
    return build_saga_graph(definition).compile(checkpointer=app.checkpointer)


T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run``, for the async tests' one-line drivers."""
    return asyncio.run(coro)


def comparable(view: dict[str, Any]) -> dict[str, Any]:
    """A view without what differs between two runs: timestamps, durations and the saga id."""
    timing = ("ts", "started", "duration_ms")
    events = [{k: v for k, v in e.items() if k not in timing} for e in view["events"]]
    return {**view, "events": events, "saga_id": None}


def stored_views(app: Any, status: str | None = None) -> list[dict[str, Any]]:
    """The view of every saga in ``app``'s checkpointer (optionally of ``status``), by id."""
    from sagagraph.checkpoints.saga_index import saga_ids
    from sagagraph.errors import InputError
    from sagagraph.graph.runner import saga_status

    views = []
    for saga_id in saga_ids(app.checkpointer):
        try:
            views.append(saga_status(app, saga_id))
        except InputError:  # not a saga's thread
            continue
    return [v for v in views if status is None or v["status"] == status]
