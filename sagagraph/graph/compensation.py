"""The compensation part of the graph: undo committed steps in reverse order, in one superstep.

``compensate`` runs every pending compensation in order: the failed step's cleanup of its
partial work first, then each committed step in reverse commit order. Stepwise (the default),
each committed step's compensation is journaled as it ends (:mod:`.rollback_journal`): after a
crash the superstep runs again, replays what the journal holds, and runs again only the
compensation that was running (compensations are idempotent) and what came after it. The
superstep also records the saga's final status, so a rollback costs one checkpoint, as a plain
graph's single compensation node does. Under ``ainvoke`` the node awaits a participant's
``acompensate`` (see :class:`~sagagraph.graph.dual_node.DualNode`).

When a compensation still fails after its retries, ``escalate`` alerts once (log,
``on_escalation`` hook, an ``escalate`` event), then pauses the saga with an interrupt until
an operator answers ``retry`` or ``skip``; the saga never claims ``rolled_back`` while
something was not undone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_stream_writer
from langgraph.graph import END, StateGraph
from langgraph.types import Command, interrupt

from sagagraph.errors import ConfigurationError
from sagagraph.graph.context import context_for
from sagagraph.graph.dual_node import DualNode
from sagagraph.graph.rollback_journal import JournalEntry, RollbackJournal, rollback_journal
from sagagraph.graph.state import SagaState
from sagagraph.saga.async_execution import acompensate_step
from sagagraph.saga.escalation import ESCALATION, alert_operator, escalation_payload
from sagagraph.saga.execution import Outcome, compensate_step
from sagagraph.saga.names import COMPENSATE, ESCALATE, PROGRESS
from sagagraph.saga.protocol import SagaDefinition, Step, StepContext, StepResult
from sagagraph.saga.records import compensation_failed, rollback_finished
from sagagraph.saga.view import committed_order, make_event

log = logging.getLogger("sagagraph")


def pending_compensations(state: SagaState, steps: Collection[str] | None = None) -> list[str]:
    """Steps still to compensate, in the order they must run.

    The step that failed comes first (it cleans up its own partial work, which may be
    nothing), then any sibling that failed in the same parallel superstep, then every
    committed step in reverse commit order (a sibling that committed alongside the failure
    included; one that never ran is not). With ``steps`` (the defined
    step names), a failure recorded against something that is not a step (a router) adds
    nothing to undo.
    """
    done = set(state.get("compensated") or [])
    done |= {s["step"] for s in state.get("skipped") or []}
    pending: list[str] = []
    failure = state.get("failure")
    if failure and failure["step"] not in done and (steps is None or failure["step"] in steps):
        pending.append(failure["step"])
    results = state.get("results") or {}
    # Parallel siblings can fail in one superstep; ``failure`` keeps one, the events show all.
    for event in state.get("events") or []:
        name = event["step"]
        if (
            event["action"] == "execute"
            and event["outcome"] in ("error", "timeout")
            and (steps is None or name in steps)
            and name not in done
            and name not in pending
            and name not in results
        ):
            pending.append(name)
    committed = committed_order(state.get("events") or [], results)
    pending += [s for s in reversed(committed) if s not in done and s not in pending]
    return pending


@dataclass(frozen=True)
class _Compensation:
    """The compensation a ``compensate`` superstep is about to run."""

    step: Step
    ctx: StepContext
    result: StepResult | None
    """The step's committed result; None when it failed or crashed before committing."""
    last: bool
    """True when nothing else is pending after this one: the saga finishes with it."""


def _finish(state: SagaState, ran: int) -> Command[Any]:
    """End the saga: ``rolled_back``, or ``resolved_by_operator`` when something was skipped."""
    finished = rollback_finished(ran, len(state.get("skipped") or []))
    return Command(update={"status": finished.status, "events": [finished.event]}, goto=END)


def _gave_up(planned: _Compensation, outcome: Outcome) -> Command[Any]:
    """The Command pausing the saga for an operator: a compensation still fails."""
    assert outcome.error is not None
    failure = compensation_failed(planned.step.name, outcome.error, outcome.attempts)
    return Command(
        update={
            "status": "compensation_failed",
            "compensation_failure": failure,
            "events": outcome.events,
        },
        goto=ESCALATE,
    )


CompensateNode = DualNode[SagaState, Command[Any]]
"""The ``compensate`` node: sync body under ``invoke``, async body under ``ainvoke``."""

CompensationMode = Literal["stepwise", "batch"]
"""``stepwise``: the rollback in one superstep, each committed step's compensation journaled
as it ends (a crash mid-rollback resumes after the last one journaled). ``batch``: the same
superstep without the journal (a crash mid-rollback runs the batch again, which idempotent
compensations make harmless)."""


def _advance(state: SagaState, entry: JournalEntry) -> SagaState:
    """``state`` as it will be once ``entry``'s compensation is recorded (for the next plan)."""
    name = entry["step"]
    results = dict(state.get("results") or {})
    results.pop(name, None)
    advanced = dict(state)
    advanced["results"] = results
    advanced["compensated"] = [*(state.get("compensated") or []), name]
    advanced["events"] = [*(state.get("events") or []), *entry["events"]]
    return cast(SagaState, advanced)


def _merge(done: list[JournalEntry], command: Command[Any]) -> Command[Any]:
    """``command`` with the compensations already run in this superstep recorded first."""
    if not done:
        return command
    update = dict(cast(dict[str, Any], command.update))
    update["results"] = {e["step"]: None for e in done} | dict(update.get("results") or {})
    update["compensated"] = [e["step"] for e in done] + list(update.get("compensated") or [])
    update["events"] = [ev for e in done for ev in e["events"]] + list(update.get("events") or [])
    return Command(update=update, goto=command.goto)


@dataclass
class _Rollback:
    """One ``compensate`` superstep's progress: what it undid, and what is journaled of it.

    The pending compensations are listed once, when the superstep starts (and again after a
    replay): a compensation that ends well removes its own step from the list and nothing
    else, so the rest of the list stays as :func:`pending_compensations` would list it again.
    Only a compensation that recorded an ``execute`` event (a participant may emit events)
    could change that; the list is then made again from the state.
    """

    definition: SagaDefinition
    state: SagaState
    journal: RollbackJournal | None
    writer: Callable[[Any], None]
    done: list[JournalEntry] = field(default_factory=list)
    journaled: int = 0
    pending: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self._list_pending()

    def _list_pending(self) -> None:
        self.pending = pending_compensations(self.state, self.definition.step_names)

    def replay(self, entries: list[JournalEntry]) -> None:
        """Take the entries an earlier attempt journaled as done (their events are not
        reported again: that attempt's run did)."""
        if not entries:
            return
        for entry in entries:
            self.done.append(entry)
            self.state = _advance(self.state, entry)
        self.journaled = len(entries)
        self._list_pending()

    def next(self) -> _Compensation | Command[Any]:
        """The next compensation to run, or the finishing Command when nothing is pending."""
        state = self.state
        if not self.pending:
            return _finish(state, len(state.get("compensated") or []))
        name = self.pending[0]
        results = state.get("results") or {}
        return _Compensation(
            step=self.definition.step(name),
            ctx=context_for(self.definition, state, name, state["saga_id"]),
            result=StepResult.from_record(results[name]) if name in results else None,
            last=len(self.pending) == 1,
        )

    def record(self, planned: _Compensation, outcome: Outcome) -> list[JournalEntry] | None:
        """Note a compensation that ended well; the entries to journal now, if any.

        A committed step's compensation with more to come is journaled at once, with any
        entry before it not journaled yet (the failed step's cleanup of its partial work,
        usually nothing: a crash before the next journal write runs it again, harmlessly).
        The last one is recorded by the superstep itself.
        """
        entry: JournalEntry = {"step": planned.step.name, "events": list(outcome.events)}
        self.done.append(entry)
        self.state = _advance(self.state, entry)
        if any(event["action"] == "execute" for event in entry["events"]):
            self._list_pending()
        else:
            del self.pending[0]
        self.writer({PROGRESS: entry["events"]})
        if self.journal is None or planned.last or planned.result is None:
            return None
        return self.done[self.journaled :]

    def journaled_up_to_now(self) -> None:
        self.journaled = len(self.done)


def _journal(config: RunnableConfig, mode: CompensationMode) -> RollbackJournal | None:
    return rollback_journal(config) if mode == "stepwise" else None


def make_compensate_node(
    definition: SagaDefinition, mode: CompensationMode = "stepwise"
) -> CompensateNode:
    """A node that runs every pending compensation, in order, in one superstep, and records
    them; it stops at the first one that gives up (the saga then waits for an operator).

    Stepwise (the default), each committed step's compensation is journaled as it ends
    (:mod:`sagagraph.graph.rollback_journal`), so a crash mid-rollback resumes this superstep
    after the last one journaled; the one that was running runs again (compensations are
    idempotent). With ``mode="batch"`` nothing is journaled: a crash runs the whole batch
    again. Each compensation's events also go to LangGraph's custom stream as it ends, so a
    listener hears of it before the superstep ends. Under ``ainvoke`` the node awaits the
    participant's ``acompensate`` when it has one, else runs ``compensate`` on the step pool
    (:mod:`sagagraph.saga.async_execution`), not on asyncio's small default executor.
    """
    if mode not in ("stepwise", "batch"):
        raise ConfigurationError(f"compensation: expected 'stepwise' or 'batch', got {mode!r}")

    def compensate(state: SagaState, config: RunnableConfig) -> Command[Any]:
        rollback = _Rollback(definition, state, _journal(config, mode), get_stream_writer())
        if rollback.journal is not None:
            rollback.replay(rollback.journal.read())
        while True:
            planned = rollback.next()
            if isinstance(planned, Command):
                return _merge(rollback.done, planned)
            outcome = compensate_step(planned.step, planned.ctx, planned.result)
            if not outcome.ok:
                return _merge(rollback.done, _gave_up(planned, outcome))
            entries = rollback.record(planned, outcome)
            if entries and rollback.journal is not None:
                rollback.journal.append(rollback.journaled, entries)
                rollback.journaled_up_to_now()

    async def acompensate(state: SagaState, config: RunnableConfig) -> Command[Any]:
        rollback = _Rollback(definition, state, _journal(config, mode), get_stream_writer())
        if rollback.journal is not None:
            rollback.replay(await rollback.journal.aread())
        while True:
            planned = rollback.next()
            if isinstance(planned, Command):
                return _merge(rollback.done, planned)
            outcome = await acompensate_step(planned.step, planned.ctx, planned.result)
            if not outcome.ok:
                return _merge(rollback.done, _gave_up(planned, outcome))
            entries = rollback.record(planned, outcome)
            if entries and rollback.journal is not None:
                await rollback.journal.aappend(rollback.journaled, entries)
                rollback.journaled_up_to_now()

    return CompensateNode(COMPENSATE, compensate, acompensate)


def _escalation_recorded(state: SagaState) -> bool:
    """True when this failure's alert already went out (the last event records it)."""
    events = state.get("events") or []
    return bool(events) and events[-1]["action"] == ESCALATION


EscalateNode = DualNode[SagaState, Command[Any]]
"""The ``escalate`` node (one body: it only records and interrupts)."""


def make_escalate_node(
    on_escalation: Callable[[dict[str, Any]], None] | None,
) -> EscalateNode:
    """A node that alerts an operator once, then pauses the saga until they decide.

    It runs in two supersteps. The first logs, calls ``on_escalation`` and records an
    ``escalate`` event; the second interrupts. LangGraph runs an interrupted node again from
    its top when it resumes, so alerting in the same superstep as ``interrupt()`` would alert
    twice for one failure; this way the alert is checkpointed before the saga waits.
    """

    def escalate(state: SagaState) -> Command[Any]:
        failure = state.get("compensation_failure")
        assert failure is not None, "escalate runs only after a compensation gave up"
        payload = escalation_payload(state["saga_id"], failure)
        if not _escalation_recorded(state):
            alerted = alert_operator(state["saga_id"], failure, on_escalation)
            return Command(update={"events": [alerted]}, goto=ESCALATE)
        decision = interrupt(payload)
        action = decision.get("action") if isinstance(decision, dict) else decision
        if action == "retry":
            return Command(
                update={
                    "status": "compensating",
                    "compensation_failure": None,
                    "events": [make_event(failure["step"], "resolve", "ok", 1, "operator: retry")],
                },
                goto=COMPENSATE,
            )
        if action == "skip":
            note = str(decision.get("note") or "") if isinstance(decision, dict) else ""
            record = (state.get("results") or {}).get(failure["step"])
            skipped = {
                "step": failure["step"],
                "note": note,
                "error": failure["error"],
                "left_behind": record["output"] if record else None,
            }
            return Command(
                update={
                    "status": "compensating",
                    "compensation_failure": None,
                    "results": {failure["step"]: None},
                    "skipped": [skipped],
                    "events": [
                        make_event(failure["step"], "resolve", "skipped", 1, f"operator: {note}")
                    ],
                },
                goto=COMPENSATE,
            )
        raise ValueError(f"resolve: expected action 'retry' or 'skip', got {action!r}")

    def run(state: SagaState, config: RunnableConfig) -> Command[Any]:
        return escalate(state)

    async def arun(state: SagaState, config: RunnableConfig) -> Command[Any]:
        return escalate(state)

    return EscalateNode(ESCALATE, run, arun)


def add_compensation_nodes(
    graph: StateGraph[Any, None, Any, Any],
    definition: SagaDefinition,
    *,
    on_escalation: Callable[[dict[str, Any]], None] | None = None,
    mode: CompensationMode = "stepwise",
    compensate: DualNode[Any, Command[Any]] | None = None,
) -> None:
    """Add ``compensate`` and ``escalate`` to ``graph``.

    ``compensate`` stands in for the kernel's node (the blackboard's wraps it); by default
    :func:`make_compensate_node` for ``definition`` and ``mode``.
    """
    node = compensate if compensate is not None else make_compensate_node(definition, mode)
    # cast: LangGraph's node protocols do not match a total=False TypedDict state under mypy.
    graph.add_node(COMPENSATE, cast(Any, node), destinations=(ESCALATE, END))
    graph.add_node(
        ESCALATE,
        cast(Any, make_escalate_node(on_escalation)),
        destinations=(ESCALATE, COMPENSATE),
    )
