"""Structured calls to an OpenAI-compatible chat model: a bounded repair, errors without secrets,
and how much paper one request may carry.

:class:`StructuredCalls` is the half of :class:`~sagagraph.agents.openai_engine.OpenAIEngine`
that talks to the server; the engine adds the prompts and what the three agents ask for.
A reply that does not parse into the schema is sent back with the error (bounded by
``repair_attempts``); when it still fails the step raises :class:`MalformedModelOutput`.
Transport failures raise :class:`ModelCallError` or :class:`StepTimeoutError`. No message
carries the API key.

The context window: a local model often has a small context (Ollama and llama.cpp are commonly
run with 8k tokens), so a 40-page paper does not fit in one request. :func:`context_tokens`
gives the window to plan for: ``SAGAGRAPH_CONTEXT_TOKENS`` when set, else the known window of
a hosted model (:data:`KNOWN_WINDOWS`), else :data:`LOCAL_DEFAULT` (a local server's window is
what it was started with, which its model name does not tell). :func:`paper_chars` turns it
into the characters of paper text a request may hold, after the instructions and the reply.
When a server refuses anyway (HTTP 400 ``context_length_exceeded``, as OpenAI, vLLM and
llama.cpp answer), :func:`overflow_limit` reads the window from its message when it gives one,
so the engine can plan again with the real size.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable
from typing import Any, TypeVar

import openai
from langchain_core.exceptions import ModelError, OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel, SecretStr, ValidationError

from sagagraph.agents.engine import NO_USAGE, StructuredOutputMethod
from sagagraph.checkpoints.urls import redact_url
from sagagraph.errors import (
    ConfigurationError,
    MalformedModelOutput,
    ModelCallError,
    StepError,
    StepTimeoutError,
)
from sagagraph.redaction import redact, register_secret
from sagagraph.saga.protocol import Usage

ENV = "SAGAGRAPH_CONTEXT_TOKENS"
"""Environment variable that sets the context window, in tokens."""
LOCAL_DEFAULT = 8_192
"""The window assumed for a model not in :data:`KNOWN_WINDOWS` (Ollama, llama.cpp, vLLM)."""
MIN_TOKENS = 2_048
"""The smallest window the engine plans for: below it the instructions barely fit."""
CHARS_PER_TOKEN = 3.5
"""Characters of paper text per token, on the safe side (English prose runs near 4; the
numbers, symbols and broken words of PDF text run lower)."""
RESERVED_TOKENS = 2_500
"""Tokens of a request kept for the instructions, the structured-output schema and the reply."""

KNOWN_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("o4-mini", 200_000),
    ("o3", 200_000),
    ("o1", 200_000),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
)
"""Context windows of hosted models, by the start of the model's name (longest prefix first)."""

# HTTP 400 bodies of servers refusing a request that is too long:
# OpenAI and vLLM: "This model's maximum context length is 8192 tokens. However, you requested
# 9000 tokens ..."; llama.cpp server: "the request exceeds the available context size (8192
# tokens)", type "exceed_context_size_error"; OpenAI's code: "context_length_exceeded".
_OVERFLOW = re.compile(
    r"context_length_exceeded|exceed_context_size|maximum context length|context length|"
    r"context size|context window|too many tokens|prompt is too long|input is too long",
    re.IGNORECASE,
)
_LIMIT = re.compile(
    r"(?:maximum context length is|context size \(?|context window of|n_ctx\D{0,12})\s*(\d{3,7})",
    re.IGNORECASE,
)


def window_of(model: str) -> int:
    """The known context window of ``model``, else :data:`LOCAL_DEFAULT`."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    return next(
        (tokens for prefix, tokens in KNOWN_WINDOWS if name.startswith(prefix)), LOCAL_DEFAULT
    )


def context_tokens(model: str, tokens: int | None = None) -> int:
    """The window to plan for: ``tokens``, else ``SAGAGRAPH_CONTEXT_TOKENS``, else the model's."""
    if tokens is None:
        raw = os.environ.get(ENV, "").strip()
        if raw:
            try:
                tokens = int(raw.replace("_", ""))
            except ValueError:
                raise ConfigurationError(f"{ENV}={raw!r}: expected a number of tokens") from None
    if tokens is None:
        return window_of(model)
    if tokens < MIN_TOKENS:
        raise ConfigurationError(f"context window must be >= {MIN_TOKENS} tokens, got {tokens}")
    return tokens


def paper_chars(tokens: int) -> int:
    """Characters of paper text one request to a ``tokens`` window may carry."""
    return int(max(tokens - RESERVED_TOKENS, tokens // 4) * CHARS_PER_TOKEN)


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` takes, estimated as :func:`paper_chars` plans them."""
    return int(len(text) / CHARS_PER_TOKEN) + 1


def is_overflow(status: int | None, message: str, code: str | None = None) -> bool:
    """True when a server's error says the request did not fit its context."""
    if code == "context_length_exceeded":
        return True
    return status in (400, 413, 422) and bool(_OVERFLOW.search(message))


def overflow_limit(message: str) -> int | None:
    """The context window a server's refusal names, when it names one."""
    m = _LIMIT.search(message)
    return int(m.group(1)) if m else None


log = logging.getLogger("sagagraph")

M = TypeVar("M", bound=BaseModel)
Check = Callable[[M], str | None]

DEFAULT_REPAIR_ATTEMPTS = 1
"""Times a malformed reply is sent back to the model with the error, before giving up."""


class ContextOverflowError(ModelCallError):
    """The server refused a request as longer than its context window (HTTP 400
    ``context_length_exceeded`` or its llama.cpp and vLLM wordings)."""

    def __init__(self, message: str, limit: int | None = None) -> None:
        super().__init__(message)
        self.limit = limit
        """The window the server named, in tokens, when it named one."""


def _one_line(text: str, limit: int = 240) -> str:
    line = " ".join(text.split()) or "(no message)"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _describe_malformed(error: BaseException) -> str:
    """The first problem of a parsing error, on one line, without pydantic's doc links."""
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, ValidationError):
        cause = cause.__cause__ or cause.__context__
    error = cause or error
    if isinstance(error, ValidationError):
        problems = error.errors(include_url=False)
        first = problems[0] if problems else None
        if first is not None:
            where = ".".join(str(p) for p in first["loc"]) or "reply"
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            return _one_line(f"{where}: {first['msg']}{more}")
    text = str(error).split("For troubleshooting, visit:")[0]
    if isinstance(error, OutputParserException):
        return _one_line(text)  # already says what failed ("Invalid json output: ...")
    return _one_line(f"{type(error).__name__}: {text}")


def _usage_of(message: object) -> Usage:
    """Tokens of one reply, from its ``usage_metadata`` (zero when the server sent none)."""
    meta = getattr(message, "usage_metadata", None) or {}
    return {
        "input_tokens": int(meta.get("input_tokens", 0) or 0),
        "output_tokens": int(meta.get("output_tokens", 0) or 0),
    }


class StructuredCalls:
    """Structured calls to one chat model; the base of the engine that runs on it.

    A base class rather than a member, so the engine keeps ``chat``, ``method`` and
    ``repair_attempts`` as its own attributes, as callers read them.
    """

    def __init__(
        self, chat: BaseChatModel, *, method: StructuredOutputMethod, repair_attempts: int
    ) -> None:
        """``method`` resolved and ``repair_attempts`` checked by the engine, whose arguments
        they are, so its configuration errors keep their order."""
        self.chat = chat
        self.method: StructuredOutputMethod = method
        self.repair_attempts = repair_attempts
        self._runnables: dict[type[BaseModel], Runnable[Any, Any]] = {}

    # -- one structured call, with a bounded repair -----------------------------------------

    def _structured(self, schema: type[BaseModel]) -> Runnable[Any, Any]:
        if schema not in self._runnables:
            self._runnables[schema] = self.chat.with_structured_output(
                schema, method=self.method, include_raw=True
            )
        return self._runnables[schema]

    def _ask(
        self,
        step: str,
        schema: type[M],
        messages: list[BaseMessage],
        check: Check[M] | None = None,
    ) -> tuple[M, Usage]:
        """Ask for ``schema``; send a malformed reply back at most ``repair_attempts`` times."""
        if self.method == "json_mode":
            # json_mode constrains the reply to JSON but does not carry the schema: say it.
            # It goes last, so the shared paper prefix stays identical.
            messages = [*messages, HumanMessage(self._schema_instruction(schema))]
        usage = NO_USAGE
        attempts = 1 + self.repair_attempts
        problem = ""
        request = messages
        for attempt in range(1, attempts + 1):
            try:
                out = self._structured(schema).invoke(request)
            except (openai.APIError, ModelError) as error:
                raise self._call_error(step, error) from None
            except (ValueError, openai.OpenAIError) as error:
                # json_schema: the OpenAI client validates the reply itself and raises; the
                # reply and its token usage are lost with it.
                problem = _describe_malformed(error)
            else:
                raw = out.get("raw")
                usage = self._sum(usage, _usage_of(raw))
                parsed = out.get("parsed")
                if isinstance(parsed, schema):
                    problem = (check(parsed) if check else None) or ""
                    if not problem:
                        return parsed, usage
                elif out.get("parsing_error") is not None:
                    problem = _describe_malformed(out["parsing_error"])
                else:
                    problem = self._describe_empty(raw)
            problem = self._redact(problem)
            log.info("%s: malformed reply (attempt %d of %d): %s", step, attempt, attempts, problem)
            request = [
                *messages,
                HumanMessage(
                    f"Your previous reply was rejected: {problem}. Reply again with a "
                    f"{schema.__name__} that follows the schema and the instructions exactly."
                ),
            ]
        raise MalformedModelOutput(
            f"{step}: the model's reply is not a valid {schema.__name__} "
            f"after {attempts} attempt(s): {problem}"
        )

    @staticmethod
    def _schema_instruction(schema: type[BaseModel]) -> str:
        return (
            f"Reply with one JSON object, and nothing else, that is a valid {schema.__name__} "
            f"under this JSON schema:\n{json.dumps(schema.model_json_schema())}"
        )

    @staticmethod
    def _describe_empty(raw: object) -> str:
        if isinstance(raw, AIMessage) and raw.invalid_tool_calls:
            bad = raw.invalid_tool_calls[0]
            return _one_line(f"the tool call arguments are not JSON: {bad.get('args') or ''}")
        if isinstance(raw, AIMessage) and not raw.content and not raw.tool_calls:
            return "the reply is empty"
        return "the reply holds no structured output"

    @staticmethod
    def _sum(a: Usage, b: Usage) -> Usage:
        return {
            "input_tokens": a["input_tokens"] + b["input_tokens"],
            "output_tokens": a["output_tokens"] + b["output_tokens"],
        }

    # -- errors, without secrets ------------------------------------------------------------

    @property
    def _model_name(self) -> str:
        return str(getattr(self.chat, "model_name", None) or type(self.chat).__name__)

    @property
    def _url(self) -> str:
        url = getattr(self.chat, "openai_api_base", None) or "https://api.openai.com/v1"
        return redact_url(str(url))

    def _redact(self, text: str) -> str:
        # The client's key may not come from the environment: register it, then the one
        # redaction (sagagraph.redaction) hides it here and in every event and log line.
        secret: object = getattr(self.chat, "openai_api_key", None)
        if isinstance(secret, SecretStr):
            register_secret(secret.get_secret_value())
        return redact(text)

    def _call_error(self, step: str, error: BaseException) -> StepError:
        where = f"model {self._model_name!r} at {self._url}"
        if isinstance(error, openai.APITimeoutError):
            timeout = getattr(self.chat, "request_timeout", None)
            within = f" within {timeout}s" if isinstance(timeout, int | float) else ""
            return StepTimeoutError(f"{step}: the {where} did not answer{within}")
        if isinstance(error, openai.APIConnectionError):
            # The root cause says why ("[Errno 111] Connection refused"); the wrappers do not.
            root: BaseException = error
            for _ in range(8):  # bounded: exception chains can loop
                inner = root.__cause__ or root.__context__
                if inner is None or not str(inner):
                    break
                root = inner
            why = _one_line(str(root), 120)
            return ModelCallError(self._redact(f"{step}: cannot reach the {where}: {why}"))
        if isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError):
            # The server's text may quote the key (OpenAI shows part of it): leave it out.
            return ModelCallError(
                f"{step}: the {where} refused the API key (HTTP {error.status_code}); "
                "check OPENAI_API_KEY"
            )
        if isinstance(error, openai.APIStatusError):
            body = error.body
            text = body.get("message") if isinstance(body, dict) else None
            detail = _one_line(str(text or error.message), 200)
            code = getattr(error, "code", None)
            if is_overflow(error.status_code, detail, code if isinstance(code, str) else None):
                return ContextOverflowError(
                    self._redact(
                        f"{step}: the {where} refused a request longer than its "
                        f"context (HTTP {error.status_code}): {detail}"
                    ),
                    overflow_limit(detail),
                )
            hint = ""
            if error.status_code == 400 and "response_format" in detail:
                hint = " (try SAGAGRAPH_STRUCTURED_OUTPUT=function_calling or json_mode)"
            return ModelCallError(
                self._redact(
                    f"{step}: the {where} answered HTTP {error.status_code}: {detail}{hint}"
                )
            )
        return ModelCallError(self._redact(f"{step}: the {where} failed: {_one_line(str(error))}"))
