"""LLM-router mode: a ``supervisor`` node asks a chat model for the next step, behind a guard.

Before each step, and after the last, the supervisor sends the model a compact view of the
saga as JSON: the saga's name, its steps in order, the steps committed so far and the last one
that committed (``{"saga", "steps", "committed", "last"}``, plus ``"rejected"`` when asking
again). Only step *names* reach the model: never the saga input, never a step's result data,
never a paper's text, so instructions hidden in a paper cannot reach the router. A saga with
optional or alternative steps adds the options open now (``"options"``: name, kind, choice,
description) and the facts its definition declares for routing (``"facts"``,
``SagaDefinition.route_facts``; nothing when it declares none), and is asked with the prompt
``router_choices``.

The model answers ``{"next_step": "...", "reason": "..."}``. ``next_step`` is a free string on
purpose: a hallucinated step is visible and counted, not hidden by a schema. The request is
made with ``with_structured_output(..., method="json_schema")`` (default),
``"function_calling"`` or ``"json_mode"``, or as plain text JSON (``method="text"``, for chat
models without structured output). Either way the reply is parsed here from the raw message
(:func:`ask_router`): malformed JSON, an empty reply or a failed model call comes back as a
:class:`ProposalReply` with ``problem`` or ``error``, a rejected proposal, never a crash. How
the router asks, and what it does after bad proposals, are its
:class:`~sagagraph.graph.routing.RouterOptions`.

Every proposal goes through :func:`sagagraph.saga.routes.guard`: only a defined step that is
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

The router is a :class:`~sagagraph.saga.routes.Router` (:class:`LLMRouter`): its decision is a
flow that yields each model call, so under ``ainvoke`` the supervisor asks with the model's
``ainvoke`` (same guard, events and fallback), and LLM-routed sagas wait for their router on
the event loop, not for a thread. The blackboard's controller uses the same router.

Routing tokens are recorded under ``usage["supervisor"]``; counters (decisions, model calls,
rejected proposals, failed calls, fallbacks) and the last choice under the state's ``route``
key.

The builder imports this module only for a graph built with ``router="llm"``: a saga routed by
its declared rules loads no part of the LLM router but its options (which the command line
builds for every run, in :mod:`sagagraph.graph.routing`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command
from pydantic import BaseModel, Field

from sagagraph.errors import ConfigurationError
from sagagraph.graph.hooks import graph_hooks, node_hooks
from sagagraph.graph.nodes import SUPERVISOR, DualNode, saga_identity
from sagagraph.graph.routing import (
    RouterMethod,
    RouterOptions,
    chosen,
    decision,
    needs_compensation,
    telling,
)
from sagagraph.graph.state import SagaState
from sagagraph.redaction import redact
from sagagraph.saga.drivers import Flow
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.names import COMPENSATE
from sagagraph.saga.protocol import SagaDefinition, Usage
from sagagraph.saga.routes import (
    FINISH,
    Accepted,
    Choice,
    Rejected,
    RouteQuestion,
    allowed_now,
    deciding,
    facts_from_records,
    guard,
    next_by_rules,
    routing_options,
)
from sagagraph.saga.templates import render_template
from sagagraph.saga.view import describe_error, make_event


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


_PROPOSAL_SHOWN = 120
"""Characters of a raw proposal kept in an event (a babbling model must not flood the trail)."""


def _shown(text: str) -> str:
    return text if len(text) <= _PROPOSAL_SHOWN else text[: _PROPOSAL_SHOWN - 3] + "..."


def _add(total: Usage, usage: Usage | None) -> Usage:
    if usage is None:
        return total
    return {
        "input_tokens": total["input_tokens"] + usage["input_tokens"],
        "output_tokens": total["output_tokens"] + usage["output_tokens"],
    }


@dataclass(frozen=True)
class _Ask:
    """One model call of a decision: ``invoke`` under the sync driver, ``ainvoke`` under the
    async one; every failure comes back as a reply (:func:`ask_router`)."""

    runnable: Runnable[Any, Any]
    messages: list[BaseMessage]
    method: RouterMethod

    def run(self) -> ProposalReply:
        return ask_router(self.runnable, self.messages, self.method)

    async def arun(self) -> ProposalReply:
        return await aask_router(self.runnable, self.messages, self.method)


def _asking(
    runnable: Runnable[Any, Any], messages: list[BaseMessage], method: RouterMethod
) -> Flow[ProposalReply]:
    reply = yield _Ask(runnable, messages, method)
    assert isinstance(reply, ProposalReply)
    return reply


def proposing(
    runnable: Runnable[Any, Any],
    system: str,
    question: RouteQuestion,
    options: RouterOptions,
) -> Flow[Choice]:
    """Ask for proposals until the guard accepts one or the attempts run out, then fall back.

    With optional or alternative steps the guard judges by the definition's points, the model
    also sees the options open now and the declared route facts of the committed results,
    and the fallback is the declared rules' choice.
    """
    definition, committed = question.definition, question.committed
    steps = definition.step_names
    points = definition.points if definition.has_choices else None
    # Only the declared route facts reach the model: never a step's data, never the input.
    declared = definition.route_facts is not None and points is not None
    facts = facts_from_records(definition, question.records) if declared else {}
    choice = Choice()
    shown_to_model: list[dict[str, str]] = []
    for attempt in range(1, options.max_attempts + 1):
        view = compact_view(definition, committed, shown_to_model)
        if points is not None:
            view["options"] = routing_options(definition, committed)
            view["facts"] = facts
        reply = yield from _asking(runnable, router_messages(system, view), options.method)
        choice.calls += 1
        choice.usage = _add(choice.usage, reply.usage)
        if reply.error is not None:
            choice.errors += 1
            choice.last_problem = f"model call failed: {reply.error}"
            choice.events.append(
                make_event(SUPERVISOR, "route", "error", attempt, choice.last_problem)
            )
            continue
        verdict = reply.problem or guard(reply.next_step or "", steps, committed, points=points)
        shown = repr(_shown(reply.proposal))
        if isinstance(verdict, Accepted):
            detail = f"proposal {shown} accepted"
            if verdict.step != reply.proposal:
                detail += f" as {verdict.step!r} (normalised)"
            choice.events.append(make_event(verdict.step, "route", "ok", attempt, detail))
            choice.step = verdict.step
            return choice
        choice.rejected += 1
        choice.last_problem = redact(verdict.reason)
        detail = f"proposal {shown} rejected ({verdict.kind}): {verdict.reason}"
        choice.events.append(make_event(SUPERVISOR, "route", "rejected", attempt, detail))
        shown_to_model.append({"proposal": _shown(reply.proposal), "reason": verdict.reason})
    if options.fallback == "deterministic":
        rules = ""
        if points is None:
            choice.step = allowed_now(steps, committed)[0]
        else:
            rule_facts = facts_from_records(definition, question.records)
            by_rules = next_by_rules(definition, committed, rule_facts)
            choice.step, rules = by_rules.step, by_rules.detail
        choice.fallback = True
        detail = f"fallback: deterministic route after {options.max_attempts} unusable proposal(s)"
        if rules:
            detail += f" (rules: {rules})"
        choice.events.append(make_event(choice.step, "route", "ok", options.max_attempts, detail))
    return choice


class LLMRouter:
    """The LLM router (:mod:`module docstring <sagagraph.graph.llm_router>`), a
    :class:`~sagagraph.saga.routes.Router`.

    A router model that cannot be bound (a stand-in used only to draw the graph, a chat model
    without structured output) raises ConfigurationError when it is first asked.
    """

    kind = "llm"

    def __init__(self, model: BaseChatModel, options: RouterOptions, system: str) -> None:
        self.options = options
        self.system = system
        self._runnable: Runnable[Any, Any] | None = None
        self._unusable: ConfigurationError | None = None
        try:
            self._runnable = bind_router_model(model, options)
        except ConfigurationError as error:
            self._unusable = error

    def decide(self, question: RouteQuestion) -> Flow[Choice]:
        if self._runnable is None:
            assert self._unusable is not None
            raise self._unusable
        return proposing(self._runnable, self.system, question, self.options)


def make_supervisor(
    definition: SagaDefinition,
    router_model: BaseChatModel,
    options: RouterOptions,
    hooks: SagaHooks | None = None,
) -> DualNode[SagaState, Command[Any]]:
    """The ``supervisor`` node: asks the LLM router for the next step; returns a ``Command``."""
    router = LLMRouter(
        router_model,
        options,
        render_template("sagagraph.graph", router_prompt(definition), finish=FINISH),
    )
    built = graph_hooks(hooks)

    def supervise(state: SagaState, config: RunnableConfig) -> Flow[Command[Any]]:
        saga_id, update = saga_identity(definition, state, config, "llm")
        told = node_hooks(config, built)
        if needs_compensation(state):
            # A failed or halted saga is routed to compensate before the supervisor; if a
            # resume ever lands here, nothing may run, whatever a model would say.
            yield from telling(told, saga_id, decision("deterministic", SUPERVISOR, COMPENSATE))
            return Command(update=update, goto=COMPENSATE)
        started = time.time_ns()
        records = state.get("results") or {}
        question = RouteQuestion(definition, list(state.get("completed") or []), records)
        choice = yield from deciding(router, question)
        command = chosen(state, saga_id, update, choice, llm=True)
        goto = str(command.goto)
        yield from telling(
            told, saga_id, decision(router.kind, SUPERVISOR, goto, choice.events, started)
        )
        return command

    return DualNode(SUPERVISOR, supervise)


def router_prompt(definition: SagaDefinition) -> str:
    """The router's prompt: ``router``, or ``router_choices`` for a saga with options."""
    return "router_choices" if definition.has_choices else "router"
