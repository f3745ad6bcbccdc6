"""The one way a saga pages an operator: a compensation gave up after its retries.

Orchestration (the ``escalate`` node) and choreography (the step whose compensation gave up)
both record :func:`escalation_event` and call the hooks' ``on_escalation``, so the CRITICAL log
line, the alert and the ``escalate`` event read the same whichever style ran the saga.
:class:`AlertHooks` turns an alert callable (``SAGAGRAPH_ALERT_HOOK``) into such a hook.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable
from typing import Any

from sagagraph.errors import ConfigurationError
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.names import ESCALATE
from sagagraph.saga.view import Event, FailureRecord, make_event

log = logging.getLogger("sagagraph")

ESCALATION = ESCALATE
"""Event action recorded once when a compensation gives up and an operator is alerted."""

AlertHook = Callable[[dict[str, Any]], None]
"""An alert: called with :func:`escalation_payload` when a compensation gives up."""


def escalation_payload(saga_id: str, failure: FailureRecord) -> dict[str, Any]:
    """What an alert receives: the saga id and the compensation's failure record."""
    return {"saga_id": saga_id, **failure}


def escalation_event(saga_id: str, failure: FailureRecord) -> Event:
    """Log CRITICAL and return the ``escalate`` event to record; the caller then tells the
    hooks (``on_escalation``)."""
    log.critical(
        "saga %s needs an operator: compensation of %s failed after %d attempt(s): %s",
        saga_id,
        failure["step"],
        failure["attempts"],
        failure["error"],
    )
    detail = (
        f"needs an operator: compensation failed after {failure['attempts']} "
        f"attempt(s): {failure['error']}"
    )
    return make_event(failure["step"], ESCALATION, "waiting", 1, detail)


def alert_hooks(alert: AlertHook | None) -> SagaHooks | None:
    """:class:`AlertHooks` calling ``alert``; None without one."""
    return AlertHooks(alert) if alert is not None else None


class AlertHooks(SagaHooks):
    """Hooks that call ``alert`` with :func:`escalation_payload` when a compensation gives up
    (an alert that raises is logged, never raised: hooks are isolated)."""

    def __init__(self, alert: AlertHook) -> None:
        self.alert = alert

    def on_escalation(self, saga_id: str, failure: FailureRecord) -> None:
        self.alert(escalation_payload(saga_id, failure))


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


def alerts_from_env() -> SagaHooks | None:
    """:class:`AlertHooks` for ``SAGAGRAPH_ALERT_HOOK``; None when it is not set."""
    return alert_hooks(load_alert_hook())
