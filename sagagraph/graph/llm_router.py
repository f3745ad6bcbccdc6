"""LLM-router mode: a ``supervisor`` node asks a chat model for the next step, behind a guard.

Before each step, and after the last, the supervisor sends the model a compact view of the
saga as JSON: the saga's name, its steps in order, the steps committed so far and the last one
that committed (``{"saga", "steps", "committed", "last"}``, plus ``"rejected"`` when asking
again). Only step *names* reach the model: never the saga input, never a step's result data,
never a paper's text, so instructions hidden in a paper cannot reach the router.

The model answers ``{"next_step": "...", "reason": "..."}``. ``next_step`` is a free string on
purpose: a hallucinated step is visible and counted, not hidden by a schema. The request is
made with ``with_structured_output(..., method="json_schema")`` (default),
``"function_calling"`` or ``"json_mode"``, or as plain text JSON (``method="text"``, for chat
models without structured output). Either way the reply is parsed here, from the raw message:
malformed JSON, an empty reply or a failed model call is a rejected proposal, never a crash.

Every proposal goes through :func:`sagagraph.saga.guard.guard`: only a defined step that is
due now, or ``"finish"`` (any ASCII case, surrounding whitespace ignored: ``"Reviewer "`` is
``reviewer``) once every step has committed, is followed. LangGraph silently ignores
``Command(goto=<unknown node>)``, so the guard is the only defence; an undefined step never
runs. Each decision is an event ``action="route"``: ``outcome="ok"`` under the chosen step (or
``finish``), ``"rejected"`` (bad proposal) or ``"error"`` (model call failed) under
``supervisor``, with the raw proposal and the reason in ``detail``.

After a rejection the model is asked again, told why, up to ``RouterOptions.max_attempts``
proposals per decision. Then the fallback decides: ``"deterministic"`` (default) takes the
next step in definition order; ``"abort"`` records a failure against ``supervisor`` and routes
to ``compensate``, so the committed steps are undone and the saga ends ``rolled_back``.

Under ``ainvoke`` the supervisor asks with the model's ``ainvoke`` (same guard, events and
fallback), so LLM-routed sagas wait for their router on the event loop, not for a thread.

Routing tokens are recorded under ``usage["supervisor"]``; counters (decisions, model calls,
rejected proposals, failed calls, fallbacks) and the last choice under the state's ``route``
key.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END
from langgraph.types import Command
from pydantic import BaseModel, Field

from sagagraph.errors import ConfigurationError
from sagagraph.graph.context import saga_identity
from sagagraph.graph.dual_node import DualNode
from sagagraph.graph.state import SagaState
from sagagraph.prompts import render_prompt
from sagagraph.redaction import redact
from sagagraph.saga.guard import FINISH, Accepted, Rejected, allowed_now, guard
from sagagraph.saga.protocol import SagaDefinition, Usage
from sagagraph.saga.view import Event, FailureRecord, committed_order, describe_error, make_event

log = logging.getLogger("sagagraph")

SUPERVISOR = "supervisor"
"""Name of the router node; also the pseudo-step its token usage is recorded under."""

RouterMethod = Literal["json_schema", "function_calling", "json_mode", "text"]
Fallback = Literal["deterministic", "abort"]

_PROPOSAL_SHOWN = 120
"""Characters of a raw proposal kept in an event (a babbling model must not flood the trail)."""


@dataclass(frozen=True)
class RouterOptions:
    """How the LLM router asks, and what it does when the model keeps proposing badly."""

    max_attempts: int = 2
    """Proposals asked for at each routing decision, including the first (>= 1)."""
    fallback: Fallback = "deterministic"
    """After ``max_attempts`` rejected proposals: ``deterministic`` takes the next step in
    definition order; ``abort`` compensates and ends the saga ``rolled_back``."""
    method: RouterMethod = "json_schema"
    """``json_schema``, ``function_calling`` or ``json_mode`` (``with_structured_output``), or
    ``text`` (plain chat, JSON parsed from the reply, for models without structured output)."""
    strict: bool = True
    """Ask the provider for strict schema adherence (structured methods only)."""

    def __post_init__(self) -> None:
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ConfigurationError(
                f"router max_attempts: must be an integer >= 1, got {self.max_attempts!r}"
            )
        if self.fallback not in ("deterministic", "abort"):
            raise ConfigurationError(
                f"router fallback: expected 'deterministic' or 'abort', got {self.fallback!r}"
            )
        if self.method not in get_args(RouterMethod):
            raise ConfigurationError(
                f"router method: expected one of {', '.join(get_args(RouterMethod))}, "
                f"got {self.method!r}"
            )

    @classmethod
    def from_env(cls, **overrides: Any) -> RouterOptions:
        """Options whose method comes from ``SAGAGRAPH_STRUCTURED_OUTPUT`` unless overridden.

        The variable is shared with the paper engine: one server, one supported form.
        """
        method = os.environ.get("SAGAGRAPH_STRUCTURED_OUTPUT", "").strip().lower()
        if method and "method" not in overrides:
            if method not in get_args(RouterMethod):
                raise ConfigurationError(
                    f"SAGAGRAPH_STRUCTURED_OUTPUT={method!r}: expected one of "
                    f"{', '.join(get_args(RouterMethod))}"
                )
            overrides["method"] = method
        return cls(**overrides)


class RouteProposal(BaseModel):
    """The next step the saga should run, or "finish"."""

    next_step: str = Field(description='name of the next step, or "finish"')
    reason: str = Field(description="one short sentence")


def proposal_schema() -> dict[str, Any]:
    """The JSON schema sent to the model.

    A dict, not the pydantic class: with a class, ``ChatOpenAI`` validates inside the call and
    raises on malformed JSON before the raw reply (and its token usage) can be recorded.
    """
    schema = RouteProposal.model_json_schema()
    schema["additionalProperties"] = False  # required by strict mode
    return schema


@dataclass(frozen=True)
class ProposalReply:
    """One answer of the router model, read from its raw message."""

    proposal: str
    """``next_step`` when the reply parsed, else the raw reply text (for the audit trail)."""
    next_step: str | None = None
    """The proposed step, None when the reply did not parse."""
    problem: Rejected | None = None
    """Why the reply is unusable before the guard even looks at it."""
    error: str | None = None
    """The model call failed (``Type: message``)."""
    usage: Usage | None = None
    """Tokens the call spent, when the provider reported them."""


def bind_router_model(model: BaseChatModel, options: RouterOptions) -> Runnable[Any, Any]:
    """The runnable the supervisor invokes: the model itself, or its structured-output form."""
    if not isinstance(model, Runnable):
        raise ConfigurationError(
            f"router model: expected a LangChain chat model, got {type(model).__name__}"
        )
    if options.method == "text":
        return model
    # json_mode sends no schema, so there is nothing to be strict about (and ChatOpenAI refuses).
    strict = {"strict": options.strict} if options.method != "json_mode" else {}
    try:
        return model.with_structured_output(
            proposal_schema(), method=options.method, include_raw=True, **strict
        )
    except NotImplementedError:
        raise ConfigurationError(
            f"router model {type(model).__name__}: no with_structured_output; "
            "use router method 'text'"
        ) from None
    except ValueError as error:
        raise ConfigurationError(
            f"router model {type(model).__name__}: method {options.method!r}: {error}"
        ) from None


def compact_view(
    definition: SagaDefinition, committed: Sequence[str], rejected: Sequence[dict[str, str]] = ()
) -> dict[str, Any]:
    """What the router model sees: step names and progress only, never data or input."""
    view: dict[str, Any] = {
        "saga": definition.name,
        "steps": list(definition.step_names),
        "committed": list(committed),
        "last": {"step": committed[-1], "outcome": "committed"} if committed else None,
    }
    if rejected:
        view["rejected"] = list(rejected)
    return view


def router_messages(system: str, view: dict[str, Any]) -> list[BaseMessage]:
    return [SystemMessage(system), HumanMessage(json.dumps(view))]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return ""


def _usage_of(message: Any) -> Usage | None:
    meta = getattr(message, "usage_metadata", None)
    if not meta:
        return None
    return {
        "input_tokens": int(meta.get("input_tokens", 0)),
        "output_tokens": int(meta.get("output_tokens", 0)),
    }


def _shown(text: str) -> str:
    return text if len(text) <= _PROPOSAL_SHOWN else text[: _PROPOSAL_SHOWN - 3] + "..."


def parse_proposal_object(obj: object, raw: str) -> ProposalReply:
    """A reply already decoded from JSON: it must be an object with a string ``next_step``."""
    if not isinstance(obj, dict):
        return ProposalReply(
            raw, problem=Rejected("malformed reply: expected a JSON object", "malformed")
        )
    step = obj.get("next_step")
    if not isinstance(step, str):
        return ProposalReply(
            raw,
            problem=Rejected("malformed reply: 'next_step' missing or not a string", "malformed"),
        )
    return ProposalReply(step, next_step=step)


def parse_proposal_text(text: str) -> ProposalReply:
    """A reply given as text: JSON (optionally in a Markdown code fence) with ``next_step``."""
    body = text.strip()
    if not body:
        return ProposalReply(text, problem=Rejected("empty reply", "empty"))
    if body.startswith("```"):
        body = body.strip("`").strip()
        if body.lower().startswith("json"):
            body = body[4:]
    try:
        obj = json.loads(body)
    except ValueError:
        return ProposalReply(text, problem=Rejected("malformed reply: not JSON", "malformed"))
    return parse_proposal_object(obj, text)


def read_reply(message: Any, method: RouterMethod) -> ProposalReply:
    """Parse the raw chat message of one router call."""
    if method == "function_calling":
        calls = getattr(message, "tool_calls", None) or []
        if calls:
            args = calls[0].get("args")
            if not args:  # an empty arguments string parses to {}
                return ProposalReply("", problem=Rejected("empty reply", "empty"))
            return parse_proposal_object(args, json.dumps(args))
        invalid = getattr(message, "invalid_tool_calls", None) or []
        if invalid:
            raw = str(invalid[0].get("args") or "")
            if not raw.strip():
                return ProposalReply(raw, problem=Rejected("empty reply", "empty"))
            return ProposalReply(
                raw, problem=Rejected("malformed reply: tool arguments are not JSON", "malformed")
            )
        # No tool call: some servers answer in the content instead; read it the same way.
    return parse_proposal_text(_text_of(getattr(message, "content", "")))


def ask_router(
    runnable: Runnable[Any, Any], messages: list[BaseMessage], method: RouterMethod
) -> ProposalReply:
    """One model call; every failure comes back as a reply with ``problem`` or ``error``."""
    try:
        out = runnable.invoke(messages)
    except GraphBubbleUp:
        raise
    except Exception as error:
        return ProposalReply("", error=describe_error(error))
    return _reply_of(out, method)


async def aask_router(
    runnable: Runnable[Any, Any], messages: list[BaseMessage], method: RouterMethod
) -> ProposalReply:
    """:func:`ask_router` with ``runnable.ainvoke``: the call does not hold a thread."""
    try:
        out = await runnable.ainvoke(messages)
    except GraphBubbleUp:
        raise
    except Exception as error:
        return ProposalReply("", error=describe_error(error))
    return _reply_of(out, method)


def _reply_of(out: Any, method: RouterMethod) -> ProposalReply:
    """The reply in what the runnable returned (a message, or ``{"raw": message, ...}``)."""
    message = out.get("raw") if isinstance(out, dict) else out
    reply = read_reply(message, method)
    # The raw reply is quoted in events, reasons and the next prompt: no secret it echoes
    # (a server that repeats the API key) goes further than this.
    problem = reply.problem
    if problem is not None:
        problem = Rejected(redact(problem.reason), problem.kind)
    return ProposalReply(
        redact(reply.proposal), reply.next_step, problem, reply.error, _usage_of(message)
    )


def _add(total: Usage, usage: Usage | None) -> Usage:
    if usage is None:
        return total
    return {
        "input_tokens": total["input_tokens"] + usage["input_tokens"],
        "output_tokens": total["output_tokens"] + usage["output_tokens"],
    }


@dataclass
class Decision:
    """The outcome of one routing decision: the step chosen (None: abort) and its trail."""

    step: str | None = None
    """A step name, ``finish``, or None when the fallback is ``abort``."""
    events: list[Event] = field(default_factory=list)
    usage: Usage = field(default_factory=lambda: Usage(input_tokens=0, output_tokens=0))
    calls: int = 0
    rejected: int = 0
    errors: int = 0
    fallback: bool = False
    last_problem: str = "no proposal"


Deciding = Generator[list[BaseMessage], ProposalReply, Decision]
"""A routing decision in progress: yields each request, is sent each reply, returns the
:class:`Decision`. Model calls happen outside it, so the sync and async supervisors share it."""


def deciding(
    system: str,
    definition: SagaDefinition,
    committed: Sequence[str],
    options: RouterOptions,
) -> Deciding:
    """Ask for proposals until the guard accepts one or the attempts run out, then fall back."""
    steps = definition.step_names
    decision = Decision()
    shown_to_model: list[dict[str, str]] = []
    for attempt in range(1, options.max_attempts + 1):
        reply = yield router_messages(system, compact_view(definition, committed, shown_to_model))
        decision.calls += 1
        decision.usage = _add(decision.usage, reply.usage)
        if reply.error is not None:
            decision.errors += 1
            decision.last_problem = f"model call failed: {reply.error}"
            decision.events.append(
                make_event(SUPERVISOR, "route", "error", attempt, decision.last_problem)
            )
            continue
        verdict = reply.problem or guard(reply.next_step or "", steps, committed)
        shown = repr(_shown(reply.proposal))
        if isinstance(verdict, Accepted):
            detail = f"proposal {shown} accepted"
            if verdict.step != reply.proposal:
                detail += f" as {verdict.step!r} (normalised)"
            decision.events.append(make_event(verdict.step, "route", "ok", attempt, detail))
            decision.step = verdict.step
            return decision
        decision.rejected += 1
        decision.last_problem = redact(verdict.reason)
        detail = f"proposal {shown} rejected ({verdict.kind}): {verdict.reason}"
        decision.events.append(make_event(SUPERVISOR, "route", "rejected", attempt, detail))
        shown_to_model.append({"proposal": _shown(reply.proposal), "reason": verdict.reason})
    if options.fallback == "deterministic":
        decision.step = allowed_now(steps, committed)[0]
        decision.fallback = True
        detail = f"fallback: deterministic route after {options.max_attempts} unusable proposal(s)"
        decision.events.append(
            make_event(decision.step, "route", "ok", options.max_attempts, detail)
        )
    return decision


def decide_next(
    runnable: Runnable[Any, Any],
    system: str,
    definition: SagaDefinition,
    committed: Sequence[str],
    options: RouterOptions,
) -> Decision:
    """One routing decision, asking the model with ``invoke``."""
    steps = deciding(system, definition, committed, options)
    try:
        messages = next(steps)
        while True:
            messages = steps.send(ask_router(runnable, messages, options.method))
    except StopIteration as done:
        return cast(Decision, done.value)


async def adecide_next(
    runnable: Runnable[Any, Any],
    system: str,
    definition: SagaDefinition,
    committed: Sequence[str],
    options: RouterOptions,
) -> Decision:
    """One routing decision, asking the model with ``ainvoke``."""
    steps = deciding(system, definition, committed, options)
    try:
        messages = next(steps)
        while True:
            messages = steps.send(await aask_router(runnable, messages, options.method))
    except StopIteration as done:
        return cast(Decision, done.value)


SupervisorNode = DualNode[SagaState, Command[Any]]
"""The ``supervisor`` node: ``invoke`` asks the model with ``invoke``, ``ainvoke`` with
``ainvoke`` (no thread of asyncio's small default executor held while the model thinks)."""


def make_supervisor(
    definition: SagaDefinition, router_model: BaseChatModel, options: RouterOptions
) -> SupervisorNode:
    """The ``supervisor`` node: ask, guard, ask again, fall back; return a ``Command``.

    A router model that cannot be bound (a stand-in used only to draw the graph, a chat model
    without structured output) raises ConfigurationError when the supervisor first runs.
    """
    runnable: Runnable[Any, Any] | None = None
    unusable: ConfigurationError | None = None
    try:
        runnable = bind_router_model(router_model, options)
    except ConfigurationError as error:
        unusable = error
    system = render_prompt("router", finish=FINISH)

    def start(
        state: SagaState, config: RunnableConfig
    ) -> tuple[Runnable[Any, Any], str, dict[str, Any], list[str]] | Command[Any]:
        """What the model is asked about, or the Command when it must not be asked."""
        if runnable is None:
            assert unusable is not None
            raise unusable
        saga_id, update = saga_identity(definition, state, config, "llm")
        if state.get("failure") or state.get("halted"):
            # The builder routes a failed or halted saga to compensate before asking; if a
            # resume ever lands here, nothing may run, whatever a model would say.
            return Command(update=update, goto="compensate")
        committed = committed_order(state.get("events") or [], state.get("results") or {})
        return runnable, saga_id, update, committed

    def supervisor(state: SagaState, config: RunnableConfig) -> Command[Any]:
        started = start(state, config)
        if isinstance(started, Command):
            return started
        model, saga_id, update, committed = started
        decision = decide_next(model, system, definition, committed, options)
        return _routed(state, saga_id, update, decision, options)

    async def asupervisor(state: SagaState, config: RunnableConfig) -> Command[Any]:
        started = start(state, config)
        if isinstance(started, Command):
            return started
        model, saga_id, update, committed = started
        decision = await adecide_next(model, system, definition, committed, options)
        return _routed(state, saga_id, update, decision, options)

    return SupervisorNode(SUPERVISOR, supervisor, asupervisor)


def _routed(
    state: SagaState,
    saga_id: str,
    update: dict[str, Any],
    decision: Decision,
    options: RouterOptions,
) -> Command[Any]:
    """The supervisor's Command for a decision: the step chosen, ``END``, or ``compensate``."""
    for event in decision.events:
        if event["outcome"] != "ok":
            log.info("saga %s: router: %s", saga_id, event["detail"])
    counters = {"decisions": 0, "calls": 0, "rejected": 0, "errors": 0, "fallbacks": 0}
    counters |= {k: v for k, v in (state.get("route") or {}).items() if k in counters}
    counters["decisions"] += 1
    counters["calls"] += decision.calls
    counters["rejected"] += decision.rejected
    counters["errors"] += decision.errors
    counters["fallbacks"] += int(decision.fallback)
    update |= {
        "usage": {SUPERVISOR: decision.usage},
        "route": counters | {"last": decision.step or "compensate"},
        "events": decision.events,
    }
    if decision.step is None:
        error = (
            f"RouterAborted: no acceptable next step after {options.max_attempts} "
            f"proposal(s); last: {decision.last_problem}"
        )
        failure: FailureRecord = {
            "step": SUPERVISOR,
            "phase": "execute",
            "error": error,
            "attempts": options.max_attempts,
        }
        update["events"] = [
            *decision.events,
            make_event(SUPERVISOR, "route", "error", options.max_attempts, error),
        ]
        log.warning("saga %s: %s; compensating", saga_id, error)
        update |= {
            "status": "compensating",
            "failure": failure,
            "reason": f"LLM router aborted: {error}",
        }
        return Command(update=update, goto="compensate")
    if decision.step == FINISH:
        update["status"] = "completed"
        return Command(update=update, goto=END)
    return Command(update=update, goto=decision.step)
