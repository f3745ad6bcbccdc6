"""Settings from command-line flags first, then the environment.

Only non-secret settings live here. The API key stays in the environment (``OPENAI_API_KEY``),
read by the model factory when a client is made: it never enters a saga's state or events.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sagagraph.checkpoints.urls import default_db_url
from sagagraph.errors import ConfigurationError

DEFAULT_OUTPUTS = "outputs"
DEFAULT_BUS_URL = "sqlite:///sagagraph-events.sqlite"


@dataclass(frozen=True)
class Settings:
    """Where sagas are kept and which engine thinks for them."""

    db: str
    """Checkpointer URL (``SAGAGRAPH_DB``)."""
    outputs: str
    """Folder under which each saga writes ``<saga_id>/...`` (``SAGAGRAPH_OUTPUTS``)."""
    llm: str | None
    """``offline`` or ``openai`` (``SAGAGRAPH_LLM``); None: decided by whether a key is set."""
    model: str | None
    """Chat model name (``SAGAGRAPH_MODEL``)."""
    bus: str
    """Event bus URL for choreography (``SAGAGRAPH_AMQP_URL`` or ``SAGAGRAPH_BUS``)."""
    parallel: bool = False
    """Run the reviewer and the summarizer side by side after the validator (``--parallel``)."""
    step_timeout: float | None = None
    """Seconds each paper step may take (``--step-timeout``, ``SAGAGRAPH_STEP_TIMEOUT``)."""
    mode: str = "orchestration"
    """``orchestration`` or ``blackboard``: which graph runs (and resumes) the saga (``--mode``)."""
    pipeline: str = "default"
    """``default`` (validator, reviewer, summarizer) or ``adaptive`` (``--pipeline``)."""

    @classmethod
    def resolve(
        cls,
        *,
        db: str | None = None,
        outputs: str | None = None,
        llm: str | None = None,
        model: str | None = None,
        bus: str | None = None,
        parallel: bool | None = None,
        step_timeout: float | str | None = None,
        mode: str | None = None,
        pipeline: str | None = None,
    ) -> Settings:
        env = os.environ
        if step_timeout is not None:
            timeout = seconds(step_timeout, "--step-timeout")
        else:
            timeout = seconds(env.get("SAGAGRAPH_STEP_TIMEOUT"), "SAGAGRAPH_STEP_TIMEOUT")
        return cls(
            db=db or default_db_url(),
            outputs=outputs or env.get("SAGAGRAPH_OUTPUTS") or DEFAULT_OUTPUTS,
            llm=llm or env.get("SAGAGRAPH_LLM") or None,
            model=model or env.get("SAGAGRAPH_MODEL") or None,
            bus=bus or env.get("SAGAGRAPH_BUS") or env.get("SAGAGRAPH_AMQP_URL") or DEFAULT_BUS_URL,
            parallel=bool(parallel),
            step_timeout=timeout,
            mode=mode or "orchestration",
            pipeline=pipeline or "default",
        )

    def recorded(self) -> dict[str, Any]:
        """What a saga records of its settings, so any process can resume it the same way."""
        return {
            "outputs": self.outputs,
            "llm": self.llm,
            "model": self.model,
            "parallel": self.parallel,
            "step_timeout": self.step_timeout,
            "mode": self.mode,
            "pipeline": self.pipeline,
        }


def seconds(value: float | str | None, source: str) -> float | None:
    """A positive number of seconds from a flag or variable; None when unset or empty."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = float(value)
    except ValueError:
        raise ConfigurationError(f"{source}={value!r}: expected seconds, e.g. 30") from None
    if not number > 0 or number == float("inf"):
        raise ConfigurationError(f"{source}={value!r}: expected a positive number of seconds")
    return number


AlertHook = Callable[[dict[str, Any]], None]


def load_alert_hook(spec: str | None = None) -> AlertHook | None:
    """The callable ``SAGAGRAPH_ALERT_HOOK`` names (``package.module:function``), or None.

    It is called with the failure record (saga id, step, error, attempts) the moment a
    compensation exhausts its retries, beside the CRITICAL log record.
    """
    spec = spec if spec is not None else os.environ.get("SAGAGRAPH_ALERT_HOOK", "")
    if not spec.strip():
        return None
    module_name, _, attr = spec.strip().partition(":")
    if not module_name or not attr:
        raise ConfigurationError(f"SAGAGRAPH_ALERT_HOOK={spec!r}: expected package.module:function")
    try:
        hook = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as error:
        raise ConfigurationError(f"SAGAGRAPH_ALERT_HOOK={spec!r}: {error}") from None
    if not callable(hook):
        raise ConfigurationError(f"SAGAGRAPH_ALERT_HOOK={spec!r}: {attr} is not callable")
    return hook  # type: ignore[no-any-return]
