"""Options the model factory and the OpenAI engine share: structured-output method, choices."""

from __future__ import annotations

import os
from typing import Literal, cast, get_args

from sagagraph.errors import ConfigurationError

StructuredOutputMethod = Literal["json_schema", "function_calling", "json_mode"]
"""How a structured output is asked of the model (``SAGAGRAPH_STRUCTURED_OUTPUT``)."""


def choice(value: str, allowed: tuple[str, ...], source: str) -> str:
    """``value`` lower-cased if it is one of ``allowed``; else one line naming ``source``."""
    normalised = value.strip().lower()
    if normalised not in allowed:
        raise ConfigurationError(f"{source}={value!r}: expected one of {', '.join(allowed)}")
    return normalised


def resolve_method(method: str | None = None) -> StructuredOutputMethod:
    """How to ask for structured output: ``method=``, else ``SAGAGRAPH_STRUCTURED_OUTPUT``."""
    allowed = get_args(StructuredOutputMethod)
    if method is not None:
        return cast(StructuredOutputMethod, choice(method, allowed, "method"))
    from_env = os.environ.get("SAGAGRAPH_STRUCTURED_OUTPUT", "").strip()
    if from_env:
        return cast(
            StructuredOutputMethod, choice(from_env, allowed, "SAGAGRAPH_STRUCTURED_OUTPUT")
        )
    return "json_schema"
