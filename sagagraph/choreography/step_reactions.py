"""What one service's step does with an event it accepted: run, compensate, give up or escalate.

Each reaction is a :data:`Decision`: the messages to emit, the saga's new local state and the
committed result, which :class:`~sagagraph.choreography.step_service.StepService` records in its
ledger in one transaction. Reactions read nothing but the event, the saga's facts from its
history (:class:`~sagagraph.choreography.saga_facts.SagaFacts`: input, earlier results,
compensations so far) and the local state they are handed, so the step service's delivery
bookkeeping (dedup, authentication, refusal, delivery counts) stays apart. What the event
carries besides its own step's outcome (its copy of the input and of others' results) is
never used.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from sagagraph.choreography.bus import DEFAULT_MAX_DELIVERIES
from sagagraph.choreography.ledger import LocalState
from sagagraph.choreography.messages import SagaMessage, new_message
from sagagraph.choreography.saga_facts import SagaFacts
from sagagraph.choreography.topology import Choreography, StepRole
from sagagraph.saga.execution import compensate_step, execute_step
from sagagraph.saga.hooks import NO_HOOKS, SagaHooks
from sagagraph.saga.protocol import SagaDefinition, Step, StepContext, StepRecord, StepResult
from sagagraph.saga.records import (
    Phase,
    compensation_failed,
    escalation_event,
    failure_record,
    halt_record,
    rollback_finished,
    step_failed,
)
from sagagraph.saga.view import Event, FailureRecord, make_event

log = logging.getLogger("sagagraph")

Decision = tuple[list[SagaMessage], LocalState | None, StepRecord | None]
"""Messages to emit, the saga's new local state (None: unchanged) and the committed result."""

DefinitionFor = Callable[[Mapping[str, Any]], SagaDefinition]
"""The definition to run one saga with, from its input (e.g. its recorded outputs folder)."""


class StepReactions:
    """The reactions of one step of a choreography, each returning a :data:`Decision`."""

    def __init__(
        self,
        choreography: Choreography,
        step: str,
        *,
        definition_for: DefinitionFor | None = None,
        hooks: SagaHooks = NO_HOOKS,
        max_deliveries: int = DEFAULT_MAX_DELIVERIES,
    ) -> None:
        self.choreography = choreography
        self.role: StepRole = choreography.role(step)
        self._definition_for = definition_for
        self._hooks = hooks
        self._max_deliveries = max_deliveries

    @property
    def name(self) -> str:
        return self.role.name

    def give_up(
        self,
        message: SagaMessage,
        facts: SagaFacts,
        deliveries: int,
        last_error: str | None,
        state: LocalState | None,
        record: StepRecord | None,
    ) -> Decision:
        """The event kept failing (or killing the step service): fail the step so the saga moves on.

        A forward event: the step cleans up and compensates, as when it fails. A compensation
        event, or a forward event whose give-up already failed once: an operator decides.
        ``state`` and ``record`` are this step service's local state for the saga, as in its ledger.
        """
        why = last_error or "the step service stopped while handling it"
        error = f"event {message['id']} set aside after {deliveries} deliveries: {why}"
        log.error("step service %s: %s", self.name, error)
        forward = message["type"] == self.role.forward_trigger
        phase: Phase = "execute" if forward else "compensate"
        failure = failure_record(self.name, phase, error, deliveries)
        reason = f"step {self.name!r} failed: {error}"
        event = make_event(self.name, phase, "error", deliveries, error)
        if forward and state is None and deliveries == self._max_deliveries:
            return self._undo(message, facts, [event], None, reason=reason, failure=failure)
        return self._escalate(
            message,
            facts,
            [event],
            record if state == "committed" else None,
            failure,
            reason=reason if forward else message["reason"],
            halted=message["halted"],
            failure=failure if forward else message["failure"],
        )

    # --- forward ------------------------------------------------------------------------

    def forward(self, message: SagaMessage, facts: SagaFacts, state: LocalState | None) -> Decision:
        saga_id = message["saga_id"]
        if state is not None:
            # Already committed (a copy of the event under another id), or its compensation
            # came first: a forward step never runs after its compensation.
            log.info(
                "step service %s: saga %s is %s here; forward event ignored",
                self.name,
                saga_id,
                state,
            )
            return [], None, None
        step = self._step(facts)
        ctx = self._context(message, facts)
        inject = facts.fail_at == step.name
        outcome = execute_step(step, ctx, inject_failure=inject, hooks=self._hooks)
        result = outcome.result
        usage = {step.name: result.usage} if result is not None and result.usage else {}
        if result is not None and not result.halt:
            record = result.record()
            done = self._message(
                message,
                facts,
                type=self.role.success_event,
                kind="done",
                next_step=self.role.next_step,
                terminal="completed" if self.role.is_last else None,
                results={**facts.results, step.name: record},
                events=outcome.events,
                usage=usage,
            )
            return [done], "committed", record
        if result is not None:
            halt = halt_record(step.name, result.reason, result.data)
            stop = self._compensated(
                message,
                facts,
                outcome.events,
                ran=False,
                reason=halt.reason,
                halted=dict(halt.halted),
                usage=usage,
            )
            return [stop], "halted", None
        assert outcome.error is not None
        failed = step_failed(saga_id, step.name, outcome.error, outcome.attempts)
        # The failed step cleans up its own partial work first (result None), as under
        # orchestration; then its compensation event starts the cascade backwards.
        return self._undo(
            message, facts, outcome.events, None, reason=failed.reason, failure=failed.failure
        )

    # --- backward -----------------------------------------------------------------------

    def compensate(
        self,
        message: SagaMessage,
        facts: SagaFacts,
        state: LocalState | None,
        record: StepRecord | None,
    ) -> Decision:
        saga_id = message["saga_id"]
        if state is None:
            # The compensation overtook the forward event: undo whatever a half-run left
            # (nothing, usually), and remember the saga so the forward event is refused later.
            log.info("step service %s: saga %s compensated before it ran here", self.name, saga_id)
        elif state != "committed":
            return [], None, None
        return self._undo(
            message,
            facts,
            [],
            record if state == "committed" else None,
            reason=message["reason"],
            failure=message["failure"],
            halted=message["halted"],
            blocked=state is None,
        )

    def _undo(
        self,
        message: SagaMessage,
        facts: SagaFacts,
        events: list[Event],
        record: StepRecord | None,
        *,
        reason: str | None,
        failure: FailureRecord | None,
        halted: dict[str, Any] | None = None,
        blocked: bool = False,
    ) -> Decision:
        step = self._step(facts)
        ctx = self._context(message, facts)
        result = StepResult.from_record(record) if record is not None else None
        outcome = compensate_step(step, ctx, result, hooks=self._hooks)
        events = events + outcome.events
        if outcome.ok:
            undone = self._compensated(
                message, facts, events, ran=True, reason=reason, halted=halted, failure=failure
            )
            return [undone], "blocked" if blocked else "compensated", None
        assert outcome.error is not None
        gave_up = compensation_failed(step.name, outcome.error, outcome.attempts)
        return self._escalate(
            message, facts, events, record, gave_up, reason=reason, halted=halted, failure=failure
        )

    def _escalate(
        self,
        message: SagaMessage,
        facts: SagaFacts,
        events: list[Event],
        record: StepRecord | None,
        gave_up: FailureRecord,
        *,
        reason: str | None,
        halted: dict[str, Any] | None,
        failure: FailureRecord | None,
    ) -> Decision:
        """The step cannot be undone: page an operator (as orchestration does) and stop."""
        alerted = escalation_event(message["saga_id"], gave_up)
        self._hooks.on_escalation(message["saga_id"], gave_up)
        stuck = self._message(
            message,
            facts,
            type=self.role.compensation_failed_event,
            kind="compensation_failed",
            next_step=None,
            terminal="compensation_failed",
            results=dict(facts.results),
            events=[*events, alerted],
            reason=reason,
            halted=halted,
            failure=failure,
            compensation_failure=gave_up,
        )
        return [stuck], "compensation_failed", record

    def _compensated(
        self,
        message: SagaMessage,
        facts: SagaFacts,
        events: list[Event],
        *,
        ran: bool,
        reason: str | None,
        halted: dict[str, Any] | None = None,
        failure: FailureRecord | None = None,
        usage: Mapping[str, Any] | None = None,
    ) -> SagaMessage:
        """This step's compensation event; from the first step it also ends the saga."""
        name = self.role.name
        compensated = [*facts.compensated, name] if ran else list(facts.compensated)
        if self.role.is_first:
            events = [*events, rollback_finished(len(compensated)).event]
        results = {s: r for s, r in facts.results.items() if s != name}
        return self._message(
            message,
            facts,
            type=self.role.compensation_event,
            kind="compensated",
            next_step=self.role.previous_step,
            terminal="rolled_back" if self.role.is_first else None,
            results=results,
            compensated=compensated,
            ran_compensation=ran,
            events=events,
            reason=reason,
            halted=halted,
            failure=failure,
            usage=dict(usage or {}),
        )

    def abort(self, cause: SagaMessage, facts: SagaFacts, reason: str) -> SagaMessage:
        """This step's compensation event without running it: the saga is to roll back from
        here (``recover --compensate``); ``cause`` is the step's forward trigger."""
        event = make_event(self.name, "compensate", "skipped", 1, reason)
        return self._compensated(cause, facts, [event], ran=False, reason=reason)

    # --- helpers ------------------------------------------------------------------------

    def _definition(self, facts: SagaFacts) -> SagaDefinition:
        if self._definition_for is None:
            return self.choreography.definition
        return self._definition_for(facts.input)

    def _step(self, facts: SagaFacts) -> Step:
        name = self.role.name
        return next(s for s in self._definition(facts).steps if s.name == name)

    def _context(self, message: SagaMessage, facts: SagaFacts) -> StepContext:
        results = {s: StepResult.from_record(r) for s, r in facts.results.items()}
        return StepContext(
            saga_id=message["saga_id"],
            step=self.role.name,
            input=dict(facts.input),
            results=results,
            attempt=1,
            deps=self._definition(facts).deps,
        )

    def _message(self, cause: SagaMessage, facts: SagaFacts, **fields: Any) -> SagaMessage:
        return new_message(
            saga=cause["saga"],
            saga_id=cause["saga_id"],
            step=self.role.name,
            input=facts.input,
            fail_at=facts.fail_at,
            **fields,
        )
