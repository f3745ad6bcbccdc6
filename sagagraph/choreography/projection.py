"""A passive projection of the event log: a saga's state and JSON view, from its events alone.

Nothing here takes part in the saga. Folding the events of one saga in log order gives the
same records the orchestration graph keeps (results, compensated, events, usage, reason), so
``status`` prints the same JSON object in both coordination styles. Each event type happens at
most once in a saga, so a duplicate (same id, or the same type re-sent under another id) counts
once: the first one in log order.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sagagraph.choreography.messages import SagaMessage
from sagagraph.errors import SagaNotFoundError
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.names import TERMINAL_STATUSES
from sagagraph.saga.view import saga_view


def project(saga_id: str, messages: Iterable[SagaMessage]) -> dict[str, Any]:
    """The state-like record of one saga; SagaNotFoundError when it has no events."""
    state: dict[str, Any] = {
        "saga_id": saga_id,
        "saga": None,
        "mode": "choreography",
        "router": "deterministic",
        "status": "running",
        "reason": None,
        "input": {},
        "fail_at": None,
        "results": {},
        "completed": [],
        "halted": None,
        "failure": None,
        "compensation_failure": None,
        "compensated": [],
        "events": [],
        "usage": {},
        "next": [],
    }
    seen: set[str] = set()
    started = False
    for message in messages:
        if message["saga_id"] != saga_id or message["type"] in seen:
            continue
        seen.add(message["type"])
        started = started or message["kind"] == "start"
        _apply(state, message)
    if not seen:
        raise SagaNotFoundError(f"saga {saga_id!r}: no events on this bus")
    if not started:
        # Events for a saga nobody started (forged, or from another log): the step services refused
        # them, and there is no saga to show.
        raise SagaNotFoundError(f"saga {saga_id!r}: never started on this bus (no start event)")
    return state


def _apply(state: dict[str, Any], message: SagaMessage) -> None:
    state["saga"] = state["saga"] or message["saga"]
    state["events"] += message["events"]
    for used_by, usage in message["usage"].items():
        before = state["usage"].get(used_by, {"input_tokens": 0, "output_tokens": 0})
        state["usage"][used_by] = {
            "input_tokens": before["input_tokens"] + usage.get("input_tokens", 0),
            "output_tokens": before["output_tokens"] + usage.get("output_tokens", 0),
        }
    step = message["step"]
    kind = message["kind"]
    if kind == "start":
        state["input"] = message["input"]
        state["fail_at"] = message["fail_at"]
    elif kind == "done" and step is not None and step in message["results"]:
        state["results"][step] = message["results"][step]
        state["completed"].append(step)
    elif kind == "compensated" and step is not None:
        if message["ran_compensation"]:
            if state["results"].pop(step, None) is not None:
                state["completed"].remove(step)
            state["compensated"].append(step)
        if state["status"] not in TERMINAL_STATUSES:
            state["status"] = "compensating"
    elif kind == "compensation_failed":
        state["status"] = "compensation_failed"
        state["compensation_failure"] = message["compensation_failure"]
    for key in ("reason", "halted", "failure"):
        if state[key] is None and message[key] is not None:
            state[key] = message[key]
    if message["terminal"] in ("completed", "rolled_back"):
        state["status"] = message["terminal"]
    if state["status"] in TERMINAL_STATUSES or state["status"] == "compensation_failed":
        state["next"] = []
    else:
        state["next"] = [message["next_step"]] if message["next_step"] else []


def choreography_view(saga_id: str, messages: Iterable[SagaMessage]) -> dict[str, Any]:
    """The JSON view of a choreographed saga (the keys orchestration's ``status`` prints)."""
    state = project(saga_id, messages)
    view = saga_view(state)
    view["next"] = state["next"]
    view["waiting_for_operator"] = state["status"] == "compensation_failed"
    return view


def is_finished(messages: Iterable[SagaMessage]) -> bool:
    """True once the saga completed, rolled back, or waits for an operator."""
    return any(m["terminal"] is not None for m in messages)


class EventTeller:
    """Tells the hooks' ``on_event`` each event a saga's log shows, once, in the order
    :func:`project` records it: the events of the first message of each type, in log order.
    Called with the log read so far, each time it is read again."""

    def __init__(self, hooks: SagaHooks) -> None:
        self.hooks = hooks
        self._read: set[str] = set()
        self._types: dict[str, set[str]] = {}

    def __call__(self, messages: Iterable[SagaMessage]) -> None:
        for message in messages:
            if message["id"] in self._read:
                continue
            self._read.add(message["id"])
            types = self._types.setdefault(message["saga_id"], set())
            if message["type"] not in types:
                types.add(message["type"])
                for event in message["events"]:
                    self.hooks.on_event(message["saga_id"], event)
