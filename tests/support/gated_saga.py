"""A saga whose agent step calls tools that need an operator's approval, for the gate's tests.

``payout``: ``order`` (a plain step that records the order), then ``pay``, a ``create_agent``
agent whose model (``ChatOpenAI`` against the scripted server of :mod:`openai_server`) asks,
in one turn, for three calls: ``hold_room`` (compensable, no approval), ``charge_card``
(compensable, approval) and ``send_wire`` (irreversible, approval); then ``notify``.

Every partner write lands in one SQLite file (``partner.sqlite`` under the data folder),
keyed by the call's idempotency key, so a test counts what ran and what was undone. The CLI
reaches the saga through ``--app tests.support.gated_saga:graph``, with the data folder in
``GATE_DATA`` and the model server in ``OPENAI_BASE_URL``. ``GATE_KILL_AT=<tool>`` makes the
process die by SIGKILL when that tool is about to write; ``GATE_KILL_WHEN`` moves the kill:
``before`` (the default), ``during`` (the partner's write made, not committed) or ``after``
(committed, the call's result not yet checkpointed). ``GATE_KILL_AT=notify`` kills the
process as the step after the agent starts: the agent's step is checkpointed by then.
``GATE_KILL_AFTER=SECONDS`` SIGKILLs the process that many seconds after the agent's step
starts in it, wherever it is then (a kill at a random moment, not at a boundary);
``GATE_PACE=SECONDS`` makes each partner write and undo take about three times that long
(before, inside and after its transaction), so such kills land inside calls too.

The two gated calls run side by side, so where ``send_wire`` stands when a kill at
``charge_card`` lands is a race; ``GATE_WIRE`` decides it (:data:`WIRE_STAGES`): the dying
call waits, before it writes, until ``send_wire`` is there, and ``send_wire`` waits there
for the kill. ``marked``:
its approval is marked and the wire not sent; ``sent``: the wire sent, the call's result not
yet returned; ``answered``: the call's result checkpointed in the saga store (named by
``GATE_DB``). Without ``GATE_WIRE`` the race stays a race.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, tool
from langgraph.graph import StateGraph

from sagagraph import (
    SagaDefinition,
    StepContext,
    StepResult,
    ToolCall,
    agent_step,
    build_saga_graph,
    compensable,
    idempotency_key,
    irreversible,
    open_checkpointer,
)
from tests.support.openai_server import Reply

TURN = [
    {"name": "hold_room", "arguments": json.dumps({"hotel": "old-town"})},
    {"name": "charge_card", "arguments": json.dumps({"amount_cents": 9_500})},
    {"name": "send_wire", "arguments": json.dumps({"to": "hotel", "amount_cents": 500})},
]
"""The model's one turn: three calls, two of them gated."""


def responder(request: dict[str, Any]) -> Reply:
    """Ask for the turn's calls first; once every call has its answer, end the run."""
    last = (request.get("messages") or [{}])[-1]
    if last.get("role") == "tool":
        return Reply(content="paid")
    return Reply(tool_calls=TURN)


def _pace() -> None:
    time.sleep(float(os.environ.get("GATE_PACE") or 0))


class Partner:
    """The partner APIs behind the tools: one table of effects, keyed by call key."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "partner.sqlite"
        with closing(self._open()) as conn, conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS effects "
                "(key TEXT PRIMARY KEY, tool TEXT, args TEXT, state TEXT, undos INTEGER DEFAULT 0)"
            )
            conn.execute("CREATE TABLE IF NOT EXISTS undo_calls (key TEXT, tool TEXT)")

    def _open(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def do(self, tool: str, args: Mapping[str, Any]) -> str:
        key = idempotency_key()
        dies = os.environ.get("GATE_KILL_AT") == tool
        when = os.environ.get("GATE_KILL_WHEN", "before")
        wire = os.environ.get("GATE_WIRE") if tool == "send_wire" else None
        if wire == "marked":  # its approval marked (before the tool runs), nothing sent
            _wire_waits_for_the_kill(wire)
        if dies:  # before this call's write: its transaction would hold up the wire's
            _await_wire(key)
        if dies and when == "before":  # a crash test: die before the write
            _die()
        _pace()
        with closing(self._open()) as conn, conn:
            conn.execute(
                "INSERT OR IGNORE INTO effects (key, tool, args, state) VALUES (?, ?, ?, 'done')",
                (key, tool, json.dumps(dict(args), sort_keys=True)),
            )
            _pace()
            if dies and when == "during":  # written, never committed
                _die()
        _pace()
        if wire == "sent":  # the wire is out; the saga has not heard
            _wire_waits_for_the_kill(wire)
        if dies and when == "after":  # the partner holds the charge; the saga never hears
            _die()
        return json.dumps({"key": key, **args})

    def undo(self, call: ToolCall) -> None:
        _pace()
        with closing(self._open()) as conn, conn:
            # Every undo asked for, a no-op one (of a call never made) included.
            conn.execute("INSERT INTO undo_calls VALUES (?, ?)", (call["key"], call["tool"]))
            conn.execute(
                "UPDATE effects SET state = 'undone', undos = undos + 1 WHERE key = ?",
                (call["key"],),
            )
            _pace()
        _pace()

    def undos(self, tool: str) -> int:
        """How many times ``tool``'s effect was undone (0 when it was never made)."""
        with closing(self._open()) as conn:
            row = conn.execute("SELECT undos FROM effects WHERE tool = ?", (tool,)).fetchone()
        return int(row[0]) if row else 0

    def undo_calls(self, tool: str) -> int:
        """How many times an undo of ``tool`` was asked for, whether or not it had an effect."""
        with closing(self._open()) as conn:
            row = conn.execute("SELECT count(*) FROM undo_calls WHERE tool = ?", (tool,)).fetchone()
        return int(row[0])

    def rows(self) -> list[dict[str, Any]]:
        """Every effect, in key order."""
        with closing(self._open()) as conn:
            found = conn.execute("SELECT key, tool, args, state FROM effects ORDER BY key")
            return [
                {"key": k, "tool": t, "args": json.loads(a), "state": s} for k, t, a, s in found
            ]

    def effects(self) -> dict[str, dict[str, Any]]:
        """Every effect by tool: its arguments and state (one call of each tool a saga)."""
        with closing(self._open()) as conn:
            rows = conn.execute("SELECT key, tool, args, state FROM effects").fetchall()
        return {tool: {"key": k, "args": json.loads(a), "state": s} for k, tool, a, s in rows}


WIRE_STAGES = ("marked", "sent", "answered")
"""Where ``GATE_WIRE`` holds ``send_wire`` when the kill lands (see the module's docstring)."""

_wire_reached = threading.Event()
WIRE_WAIT = 30.0
"""Seconds a kill waits for ``send_wire`` to reach its stage before it gives up (and dies)."""


def _wire_waits_for_the_kill(stage: str) -> None:
    """``send_wire`` is at ``stage``: say so, then wait for the kill (it never comes back)."""
    _wire_reached.set()
    threading.Event().wait(WIRE_WAIT * 2)
    raise RuntimeError(f"send_wire held at {stage!r}: no kill came")


def _await_wire(key: str) -> None:
    """Wait until ``send_wire`` is where ``GATE_WIRE`` wants it (the call ``key`` is to die)."""
    stage = os.environ.get("GATE_WIRE")
    if stage == "answered":
        there = _await_wire_checkpointed(key.split(":pay:", 1)[0])
    else:
        there = not stage or _wire_reached.wait(WIRE_WAIT)
    if not there:  # the call fails instead of dying: the test sees no kill
        raise RuntimeError(f"send_wire never reached {stage!r}")


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _await_wire_checkpointed(saga_id: str) -> bool:
    """Wait until ``send_wire``'s result is a pending write of the agent's checkpoint in the
    saga store (``GATE_DB``): the call answered, its log record durable. False: it never was."""
    config: Any = {"configurable": {"thread_id": saga_id}}
    deadline = time.monotonic() + WIRE_WAIT
    with open_checkpointer(os.environ["GATE_DB"]) as saver:
        while time.monotonic() < deadline:
            for saved in saver.list(config):
                for _, channel, value in saved.pending_writes or []:
                    records = value if channel == "tool_calls" else []
                    if any(r.get("tool") == "send_wire" for r in records):
                        return True
            time.sleep(0.05)
    return False


def payout_tools(partner: Partner) -> list[BaseTool]:
    @tool
    def hold_room(hotel: str) -> str:
        """Hold a room at ``hotel``."""
        return partner.do("hold_room", {"hotel": hotel})

    @tool
    def charge_card(amount_cents: int) -> str:
        """Charge the traveller's card."""
        return partner.do("charge_card", {"amount_cents": amount_cents})

    @tool
    def send_wire(to: str, amount_cents: int) -> str:
        """Wire money to ``to``: cannot be called back."""
        return partner.do("send_wire", {"to": to, "amount_cents": amount_cents})

    return [
        compensable(hold_room, undo=partner.undo),
        compensable(charge_card, undo=partner.undo, approval=True),
        irreversible(send_wire, approval=True),
    ]


class Order:
    """A plain step before the agent: something to compensate when the agent's step fails."""

    name = "order"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def execute(self, ctx: StepContext) -> StepResult:
        (self.folder / f"{ctx.saga_id}.order").write_text(json.dumps(dict(ctx.input)))
        return StepResult(data={"order": ctx.saga_id})

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        (self.folder / f"{ctx.saga_id}.order").unlink(missing_ok=True)


class Notify:
    """A plain step after the agent: it runs only once every gated call was decided."""

    name = "notify"

    def execute(self, ctx: StepContext) -> StepResult:
        if os.environ.get("GATE_KILL_AT") == "notify":  # the agent's step is checkpointed
            os.kill(os.getpid(), signal.SIGKILL)
        return StepResult(data={"told": ctx.input.get("traveller")})

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        return None


def chat_model(base_url: str) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="gpt-test", base_url=base_url, api_key="sk-test", max_retries=0)


def pay_prompt(ctx: StepContext) -> str:
    """The agent's prompt; the agent's step starting here arms ``GATE_KILL_AFTER``'s timer."""
    arm_kill_timer()
    return f"Pay for the trip of {ctx.input['traveller']}."


def definition(
    folder: Path, base_url: str, *, middleware: list[Any] | None = None
) -> SagaDefinition:
    partner = Partner(folder)
    pay = agent_step(
        "pay",
        lambda deps: deps["chat_model"],  # the model from the saga's deps
        payout_tools(partner),
        prompt=pay_prompt,
        system_prompt="You pay for trips.",
        middleware=middleware or [],
    )
    return SagaDefinition.of(
        "payout", [Order(folder), pay, Notify()], deps={"chat_model": chat_model(base_url)}
    )


_kill_armed = False


def arm_kill_timer() -> None:
    """Start ``GATE_KILL_AFTER``'s SIGKILL timer, once per process."""
    global _kill_armed
    if (after := os.environ.get("GATE_KILL_AFTER")) and not _kill_armed:
        _kill_armed = True
        die = threading.Timer(float(after), os.kill, (os.getpid(), signal.SIGKILL))
        die.daemon = True
        die.start()


def graph() -> StateGraph[Any, None, Any, Any]:
    """The saga's graph, for ``sagagraph approve|reject --app tests.support.gated_saga:graph``."""
    folder = Path(os.environ["GATE_DATA"])
    return build_saga_graph(definition(folder, os.environ["OPENAI_BASE_URL"]))
