"""Choosing and configuring the engine: command-line flags first, then the environment.

The variables are those of docs/configuration.md: ``SAGAGRAPH_LLM`` (``offline`` or
``openai``; unset, ``openai`` when ``OPENAI_API_KEY`` is set), ``SAGAGRAPH_MODEL`` (default
:data:`DEFAULT_MODEL`), ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` (any OpenAI-compatible
server; local servers accept any key), ``SAGAGRAPH_STRUCTURED_OUTPUT``
(:func:`~sagagraph.agents.engine.resolve_method`), ``SAGAGRAPH_MODEL_TIMEOUT`` (default
:data:`DEFAULT_TIMEOUT`) and ``SAGAGRAPH_CONTEXT_TOKENS`` (:mod:`~sagagraph.agents.openai_calls`).

The API key goes straight into ``ChatOpenAI``, which keeps it as a ``SecretStr``; nothing
here stores, logs or repeats it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal, cast, get_args

from pydantic import SecretStr

from sagagraph.agents.engine import choice, resolve_method
from sagagraph.errors import ConfigurationError

if TYPE_CHECKING:
    from langchain_openai import ChatOpenAI

    from sagagraph.agents.engine import PaperEngine


LlmKind = Literal["offline", "openai"]

DEFAULT_MODEL = "gpt-4o-mini"
"""Chat model used when neither ``model=`` nor ``SAGAGRAPH_MODEL`` names one."""
DEFAULT_TIMEOUT = 120.0
"""Seconds one HTTP request to the model may take before it fails."""
DEFAULT_MAX_RETRIES = 0
"""Retries the OpenAI client makes on its own (connection errors, 429, 5xx): none, so the
step's ``Retry`` policy is the only layer and every attempt is an event of the saga."""


def resolve_llm(llm: str | None = None) -> LlmKind:
    """Which engine to use: ``--llm``, else ``SAGAGRAPH_LLM``, else by ``OPENAI_API_KEY``."""
    allowed = get_args(LlmKind)
    if llm is not None:
        return cast(LlmKind, choice(llm, allowed, "--llm"))
    from_env = os.environ.get("SAGAGRAPH_LLM", "").strip()
    if from_env:
        return cast(LlmKind, choice(from_env, allowed, "SAGAGRAPH_LLM"))
    return "openai" if os.environ.get("OPENAI_API_KEY", "").strip() else "offline"


def _timeout_from_env(default: float) -> float:
    raw = os.environ.get("SAGAGRAPH_MODEL_TIMEOUT", "").strip()
    if not raw:
        return default
    try:
        seconds = float(raw)
    except ValueError:
        raise ConfigurationError(
            f"SAGAGRAPH_MODEL_TIMEOUT={raw!r}: expected a number of seconds"
        ) from None
    if seconds <= 0:
        raise ConfigurationError(f"SAGAGRAPH_MODEL_TIMEOUT={raw!r}: expected seconds > 0")
    return seconds


def make_chat_model(
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> ChatOpenAI:
    """A ``ChatOpenAI`` for ``model`` (else ``SAGAGRAPH_MODEL``, else :data:`DEFAULT_MODEL`).

    ``base_url`` defaults to ``OPENAI_BASE_URL`` (else OpenAI), ``api_key`` to
    ``OPENAI_API_KEY``; ConfigurationError when there is no key at all. ``timeout`` left at
    its default gives way to ``SAGAGRAPH_MODEL_TIMEOUT``.
    """
    from langchain_openai import ChatOpenAI

    if timeout == DEFAULT_TIMEOUT:
        timeout = _timeout_from_env(timeout)
    name = (model or os.environ.get("SAGAGRAPH_MODEL", "")).strip() or DEFAULT_MODEL
    key = api_key or os.environ.get("OPENAI_API_KEY", "").strip()
    if not key:
        raise ConfigurationError(
            "the openai engine needs OPENAI_API_KEY (any value for a local server such as "
            "Ollama, vLLM or llama.cpp); or use --llm offline"
        )
    url = base_url or os.environ.get("OPENAI_BASE_URL", "").strip() or None
    if max_retries < 0:
        raise ConfigurationError(f"max_retries must be >= 0, got {max_retries}")
    return ChatOpenAI(
        model=name,
        base_url=url,
        api_key=SecretStr(key),
        timeout=timeout,
        max_retries=max_retries,
    )


def make_engine(
    llm: str | None = None,
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
    method: str | None = None,
) -> PaperEngine:
    """The engine :func:`resolve_llm` picks; the keyword arguments configure ``openai``."""
    if resolve_llm(llm) == "offline":
        from sagagraph.agents.offline_engine import OfflineEngine

        return OfflineEngine()
    from sagagraph.agents.openai_engine import OpenAIEngine

    chat = make_chat_model(
        model, base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
    )
    return OpenAIEngine(chat, method=resolve_method(method))
