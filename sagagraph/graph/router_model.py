"""How the LLM router asks its chat model for a step and reads the reply, never raising.

Only a compact view of the saga (step names and progress) is sent; the reply is parsed here,
from the raw message, whatever the method, so a malformed or empty reply or a failed call
comes back as a :class:`ProposalReply` with ``problem`` or ``error``, never as an exception.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from langgraph.errors import GraphBubbleUp
from pydantic import BaseModel, Field

from sagagraph.errors import ConfigurationError
from sagagraph.graph.router_options import RouterMethod, RouterOptions
from sagagraph.redaction import redact
from sagagraph.saga.protocol import SagaDefinition, Usage
from sagagraph.saga.routes import Rejected
from sagagraph.saga.view import describe_error


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
