"""How much paper one request to the model may carry: the context window, and how to tell that
a server refused a request for being too long.

A local model often has a small context (Ollama and llama.cpp are commonly run with 8k tokens),
so a 40-page paper does not fit in one request. :func:`context_tokens` gives the window to plan
for: ``SAGAGRAPH_CONTEXT_TOKENS`` when set, else the known window of a hosted model
(:data:`KNOWN_WINDOWS`), else :data:`LOCAL_DEFAULT` (a local server's window is what it was
started with, which its model name does not tell). :func:`paper_chars` turns it into the
characters of paper text a request may hold, after the instructions and the reply.

When a server refuses anyway (HTTP 400 ``context_length_exceeded``, as OpenAI, vLLM and
llama.cpp answer), :func:`overflow_limit` reads the window from its message when it gives one,
so the engine can plan again with the real size.
"""

from __future__ import annotations

import os
import re

from sagagraph.errors import ConfigurationError

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
    for prefix, tokens in KNOWN_WINDOWS:
        if name.startswith(prefix):
            return tokens
    return LOCAL_DEFAULT


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
