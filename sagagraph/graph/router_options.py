"""The LLM router's options: how it asks its chat model, and what it does after bad proposals."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal, get_args

from sagagraph.errors import ConfigurationError

RouterMethod = Literal["json_schema", "function_calling", "json_mode", "text"]
Fallback = Literal["deterministic", "abort"]


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
