"""One step service of a choreographed saga: it reacts to its two events and emits its own.

The step service runs its step through :func:`~sagagraph.saga.execution.execute_step` and
:func:`~sagagraph.saga.execution.compensate_step` (in :mod:`.step_reactions`), so retries,
timeouts, injected failures and audit events behave exactly as under orchestration. It obeys
an event only when the event is authentic (signed with the deployment key, when the bus has
one: :mod:`.signing`) and the saga's history allows it (:mod:`.admission`), and it works from
that history (:mod:`.saga_facts`), never from the copies the event carries. What it
decides is recorded in its :class:`~sagagraph.choreography.ledger.StepLedger` in the same
transaction as the messages it will emit, which makes every handler safe to run again on a
redelivered event.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sagagraph.choreography.admission import judge
from sagagraph.choreography.bus import DEFAULT_MAX_DELIVERIES
from sagagraph.choreography.ledger import StepLedger
from sagagraph.choreography.messages import SagaMessage, encode
from sagagraph.choreography.saga_facts import SagaFacts, facts_from_history, facts_from_message
from sagagraph.choreography.signing import Authenticator
from sagagraph.choreography.step_reactions import DefinitionFor, StepReactions
from sagagraph.choreography.topology import Choreography, StepRole
from sagagraph.saga.hooks import SagaHooks, combine_hooks
from sagagraph.saga.tracing import OPEN_TELEMETRY, continued_from
from sagagraph.saga.view import describe_error

log = logging.getLogger("sagagraph")

History = Callable[[str], list[SagaMessage]]
"""A saga's events on the bus log, by saga id (what :mod:`.admission` judges an event by)."""


class StepService:
    """Handles the events of one step; :meth:`handle` returns the messages to publish."""

    def __init__(
        self,
        choreography: Choreography,
        step: str,
        ledger: StepLedger,
        *,
        history: History | None = None,
        definition_for: DefinitionFor | None = None,
        hooks: SagaHooks | None = None,
        max_deliveries: int = DEFAULT_MAX_DELIVERIES,
        authenticator: Authenticator | None = None,
    ) -> None:
        """``history`` reads the saga's (authenticated) bus log; without it (a step service handed
        events directly, in unit tests) every event is taken as allowed, with the facts it
        carries. ``authenticator`` checks each event's signature and signs what the step service
        emits (default: no key, nothing signed or checked). ``definition_for`` picks the definition
        per saga (default: ``choreography.definition``). The ``max_deliveries``-th delivery of
        an event that never got handled gives up on it: the step fails and compensates.
        ``hooks`` observe each handling (a run of the saga, ``handle <event>``), its attempts
        and escalations, beside OpenTelemetry's."""
        self.choreography = choreography
        self._hooks = combine_hooks(OPEN_TELEMETRY, hooks)
        # What the step does with an event; the step service keeps the delivery bookkeeping.
        self._reactions = StepReactions(
            choreography,
            step,
            definition_for=definition_for,
            hooks=self._hooks,
            max_deliveries=max_deliveries,
        )
        self.role: StepRole = self._reactions.role
        self.ledger = ledger
        self._history = history
        self._auth = authenticator if authenticator is not None else Authenticator(None)
        self._max_deliveries = max_deliveries
        # A broker that reconnects may redeliver an event still being handled: one at a time,
        # so the second delivery finds the first one's record.
        self._one_at_a_time = threading.Lock()

    @property
    def name(self) -> str:
        return self.role.name

    def handle(self, message: SagaMessage) -> list[SagaMessage]:
        """React to one delivered event; safe to call again with the same event.

        Returns the messages to publish before the delivery is acknowledged. For an event
        handled before, that is what was emitted the first time (publishing it again is
        harmless: readers drop duplicates by id).
        """
        # The handling joins the emitter's trace (the event's signed ``trace`` field), when
        # the event is authentic: a forged event's spans start a trace of their own.
        trace = message.get("trace") if self._auth.check(message) is None else None
        saga_id, hooks = message["saga_id"], self._hooks
        with self._one_at_a_time, continued_from(trace):
            hooks.on_run_start(saga_id, f"handle {message['type']}")
            try:
                emitted = self._handle(message)
            except BaseException as error:
                hooks.on_run_end(saga_id, "error")
                if isinstance(error, Exception):
                    self.ledger.note_error(message["id"], describe_error(error))
                raise
            hooks.on_run_end(saga_id, _left(emitted))
            return emitted

    def _handle(self, message: SagaMessage) -> list[SagaMessage]:
        forged = self._auth.check(message)
        if forged is not None:
            # Not recorded as handled: the id of an unauthenticated event proves nothing, and
            # must not shadow the genuine publication that carries it.
            log.warning("step service %s: event %s refused: %s", self.name, message["id"], forged)
            self.ledger.note_refusal(message, forged)
            return []
        emitted = self.ledger.handled(message["id"])
        if emitted is not None:
            log.debug(
                "step service %s: event %s seen before; re-emitting", self.name, message["id"]
            )
            return emitted
        refused, facts = self._judge(message)
        if refused is not None:
            # Quietly: a forged or stale event is not an incident; the ledger keeps the reason.
            log.warning("step service %s: event %s refused: %s", self.name, message["id"], refused)
            self.ledger.record(message, [], refusal=refused)
            return []
        deliveries, last_error = self.ledger.count_delivery(message["id"])
        local, record = self.ledger.state(message["saga_id"])
        reactions = self._reactions
        if deliveries >= self._max_deliveries:
            decision = reactions.give_up(message, facts, deliveries, last_error, local, record)
        elif message["type"] == self.role.forward_trigger:
            decision = reactions.forward(message, facts, local)
        else:
            decision = reactions.compensate(message, facts, local, record)
        outgoing, state, result = decision
        outgoing = [self._auth.seal(m) for m in outgoing]
        for m in outgoing:
            encode(m)  # a result that is not plain data fails here, before anything is recorded
        self.ledger.record(message, outgoing, state=state, result=result)
        return outgoing

    def _judge(self, message: SagaMessage) -> tuple[str | None, SagaFacts]:
        """Why the step service must not act on ``message`` (None: it may), and the saga's facts."""
        if message["saga"] != self.choreography.saga or message["type"] not in (
            self.role.subscriptions
        ):
            why = f"{self.name} does not react to {message['saga']}/{message['type']}"
            return why, SagaFacts()
        if self._history is None:
            return None, facts_from_message(message)
        history = self._history(message["saga_id"])
        refused, accepted = judge(self.choreography, self.role, message, history)
        return refused, facts_from_history(self.choreography, accepted)

    def abort(self, cause: SagaMessage, facts: SagaFacts, reason: str) -> SagaMessage:
        """This step's compensation event without running it: the saga is to roll back from
        here (``recover --compensate``); ``cause`` is the step's forward trigger, ``facts``
        the saga's history."""
        return self._auth.seal(self._reactions.abort(cause, facts, reason))


def _left(emitted: list[SagaMessage]) -> str:
    """How a handling left the saga, for the hooks: the status it ended it with, else
    ``compensating`` or ``running``."""
    for message in emitted:
        if message["terminal"] is not None:
            return str(message["terminal"])
    going_back = any(m["kind"] != "done" for m in emitted)
    return "compensating" if going_back else "running"
