"""ToolCompensationMiddleware with several tool calls in one model turn.

OpenAI models ask for several tools in one answer by default, and ``create_agent`` runs them
in parallel (threads under ``invoke``, tasks under ``ainvoke``). When one of them fails, the
run is rolled back once, after the turn's other calls have settled: each committed call is
undone exactly once, newest first, nothing stays booked, the log never calls a live booking
undone, and the thread stays usable (``get_state``, ``rollback()``, resuming, a new run).

The agent is the real ``create_agent`` with the real ``ChatOpenAI`` client against the
scripted server on 127.0.0.1; the partners are in memory, keyed by the calls' idempotency
keys, and either remember undone keys (a late forward call is refused) or forget them (a late
forward call books).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.sqlite import SqliteSaver

from examples.travel_swarm.billing import PaymentRefused, billing_tools
from examples.travel_swarm.flight import flight_tools
from examples.travel_swarm.hotel import hotel_tools
from examples.travel_swarm.partners import FLIGHT, HOTELS, holdings, open_partners
from sagagraph import (
    CompensatedKeyError,
    Retry,
    ToolCall,
    ToolCompensationMiddleware,
    ToolUndoError,
    compensable,
    create_compensating_agent,
    idempotency_key,
    read_only,
)
from sagagraph.checkpoints.async_factory import open_async_checkpointer
from sagagraph.errors import AgentRunError
from tests.support.openai_server import Reply, ScriptedOpenAIServer
from tests.support.swarm_support import chat_model

SLOW = 0.6
"""Seconds a slow call takes: it lands well after a fast call has failed."""
FAST = 0.0


class Refused(Exception):
    """The partner refuses the request: the run fails."""


@dataclass
class Partner:
    """A partner API keyed by idempotency key: ``book`` makes a booking live, ``cancel`` ends it.

    ``remembers``: a cancelled key is remembered, so a booking that lands after its cancel is
    refused (``CompensatedKeyError``); otherwise a late booking stays live.
    """

    name: str
    remembers: bool
    trail: list[str]
    """Shared by all partners: ``done <key>``, ``failed <key>``, ``undo <key>``, in order."""
    lock: threading.Lock
    live: dict[str, str] = field(default_factory=dict)
    cancelled: set[str] = field(default_factory=set)

    def book(self, key: str, what: str) -> str:
        with self.lock:
            if self.remembers and key in self.cancelled:
                self.trail.append(f"refused {key}")
                raise CompensatedKeyError(f"{self.name}: {key} was already cancelled")
            self.live[key] = what
            self.trail.append(f"done {key}")
        return json.dumps({self.name: key})

    def cancel(self, call: ToolCall) -> None:
        with self.lock:
            self.trail.append(f"undo {call['key']}")
            self.live.pop(call["key"], None)
            if self.remembers:
                self.cancelled.add(call["key"])


@dataclass
class Travel:
    """Three partners, and how each tool behaves: its delay, and whether it is refused."""

    remembers: bool
    trail: list[str] = field(default_factory=list)
    delays: dict[str, float] = field(default_factory=dict)
    refused: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    partners: dict[str, Partner] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("book_flight", "reserve_room", "charge_wallet"):
            self.partners[name] = Partner(name, self.remembers, self.trail, self.lock)

    def live(self) -> dict[str, list[str]]:
        with self.lock:
            return {n: sorted(p.live) for n, p in self.partners.items() if p.live}

    def undos(self) -> list[str]:
        with self.lock:
            return [e.split(" ", 1)[1] for e in self.trail if e.startswith("undo ")]

    def tools(self) -> list[BaseTool]:
        def run(name: str, what: str) -> str:
            key = idempotency_key()
            time.sleep(self.delays.get(name, FAST))
            if name in self.refused:
                with self.lock:
                    self.trail.append(f"failed {key}")
                raise Refused(f"{name} refused {what}")
            return self.partners[name].book(key, what)

        @tool
        def book_flight(what: str) -> str:
            """Book a flight."""
            return run("book_flight", what)

        @tool
        def reserve_room(what: str) -> str:
            """Reserve a room."""
            return run("reserve_room", what)

        @tool
        def charge_wallet(what: str) -> str:
            """Charge the wallet."""
            return run("charge_wallet", what)

        @tool
        def seats_free(what: str) -> int:
            """Free seats (read-only)."""
            time.sleep(self.delays.get("seats_free", FAST))
            return 3

        return [
            compensable(book_flight, undo=self.partners["book_flight"].cancel),
            compensable(reserve_room, undo=self.partners["reserve_room"].cancel),
            compensable(charge_wallet, undo=self.partners["charge_wallet"].cancel),
            read_only(seats_free),
        ]


def turn(*names: str) -> Reply:
    """One model answer asking for ``names``, all at once."""
    return Reply(tool_calls=[{"name": n, "arguments": json.dumps({"what": n})} for n in names])


class Script:
    """Replies in order, whatever the request; then ``done``."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        with self.lock:
            return self.replies.pop(0) if self.replies else Reply(content="done")


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def server(script: Script) -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(script) as running:
        yield running


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    with SqliteSaver.from_conn_string(str(tmp_path / "agent.sqlite")) as checkpointer:
        yield checkpointer


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def ask(agent: Any, thread: str, text: str = "trip") -> dict[str, Any]:
    result: dict[str, Any] = agent.invoke(
        {"messages": [{"role": "user", "content": text}]}, config(thread), durability="sync"
    )
    return result


def statuses(agent: Any, thread: str) -> dict[str, str]:
    values = agent.get_state(config(thread)).values
    return {c["key"]: c["status"] for c in values.get("tool_calls") or []}


def key(thread: str, n: int) -> str:
    return f"{thread}:agent:call-{n}"


# (calls in the turn, the one refused, delays): the refused call fails at once or late.
CASES = {
    "2-calls-slow-sibling": (
        ["book_flight", "charge_wallet"],
        "charge_wallet",
        {"book_flight": SLOW},
    ),
    "2-calls-fast-sibling": (
        ["book_flight", "charge_wallet"],
        "charge_wallet",
        {"charge_wallet": SLOW},
    ),
    "2-calls-first-refused": (
        ["charge_wallet", "book_flight"],
        "charge_wallet",
        {"book_flight": SLOW},
    ),
    "3-calls-slow-and-fast": (
        ["book_flight", "reserve_room", "charge_wallet"],
        "charge_wallet",
        {"book_flight": SLOW, "charge_wallet": SLOW / 3},
    ),
    "3-calls-middle-refused": (
        ["book_flight", "reserve_room", "charge_wallet"],
        "reserve_room",
        {"book_flight": SLOW, "charge_wallet": SLOW},
    ),
}


def expected_undos(thread: str, calls: list[str], refused: str, first: int = 1) -> list[str]:
    """The committed calls' keys, newest first (call numbers follow the model's order)."""
    numbered = [(first + i, name) for i, name in enumerate(calls)]
    return [key(thread, n) for n, name in reversed(numbered) if name != refused]


def assert_rolled_back_once(
    agent: Any,
    middleware: ToolCompensationMiddleware,
    travel: Travel,
    thread: str,
    undone: list[str],
    refused_key: str,
) -> None:
    """Each committed call undone once, newest first; nothing live; the thread usable."""
    assert travel.undos() == undone
    assert travel.live() == {}
    assert not any(e.startswith("refused ") for e in travel.trail), travel.trail
    log = statuses(agent, thread)  # get_state works
    assert {k: s for k, s in log.items() if k in undone} == dict.fromkeys(undone, "undone")
    assert log[refused_key] == "failed"
    # rollback() finds nothing left to undo, and undoes nothing again.
    report = middleware.rollback(agent, config(thread))
    assert report.undone == [] and report.failed == []
    # Resuming the failed run raises again without undoing anything again.
    with pytest.raises(AgentRunError, match="refused"):
        agent.invoke(None, config(thread), durability="sync")
    assert travel.undos() == undone


@pytest.mark.parametrize("remembers", [True, False], ids=["remembering", "forgetful"])
@pytest.mark.parametrize("case", list(CASES))
def test_one_failed_call_in_a_turn_rolls_back_once_after_its_siblings_settle(
    case: str,
    remembers: bool,
    server: ScriptedOpenAIServer,
    script: Script,
    saver: SqliteSaver,
) -> None:
    calls, refused, delays = CASES[case]
    travel = Travel(remembers, delays=delays, refused={refused})
    agent, middleware = create_compensating_agent(
        chat_model(server), travel.tools(), checkpointer=saver, undo_retry=Retry(max_attempts=2)
    )
    script.replies = [turn(*calls)]
    thread = f"t-{case}"

    with pytest.raises(Refused, match=f"{refused} refused"):
        ask(agent, thread)

    refused_key = key(thread, calls.index(refused) + 1)
    undone = expected_undos(thread, calls, refused)
    # The calls ran in parallel: a sibling slower than the refused call settled after it.
    for n, name in enumerate(calls, start=1):
        if delays.get(name, FAST) > delays.get(refused, FAST):
            assert travel.trail.index(f"failed {refused_key}") < travel.trail.index(
                f"done {key(thread, n)}"
            ), travel.trail
    # The rollback waited for every sibling, slow ones included.
    first_undo = travel.trail.index(f"undo {undone[0]}")
    assert all(f"done {k}" in travel.trail[:first_undo] for k in undone), travel.trail
    assert_rolled_back_once(agent, middleware, travel, thread, undone, refused_key)


@pytest.mark.parametrize("remembers", [True, False], ids=["remembering", "forgetful"])
def test_a_parallel_turn_after_a_committed_turn_undoes_both_turns_newest_first(
    remembers: bool, server: ScriptedOpenAIServer, script: Script, saver: SqliteSaver
) -> None:
    travel = Travel(remembers, delays={"reserve_room": SLOW}, refused={"charge_wallet"})
    agent, middleware = create_compensating_agent(
        chat_model(server), travel.tools(), checkpointer=saver
    )
    script.replies = [turn("book_flight", "seats_free"), turn("reserve_room", "charge_wallet")]

    with pytest.raises(Refused):
        ask(agent, "t-turns")

    undone = [key("t-turns", 3), key("t-turns", 1)]  # call-2 is read-only, call-4 refused
    assert_rolled_back_once(agent, middleware, travel, "t-turns", undone, key("t-turns", 4))
    # The thread takes a new run: nothing of the rolled-back run is touched again.
    travel.refused.clear()
    script.replies = [turn("book_flight")]
    ask(agent, "t-turns", "again")
    assert travel.live() == {"book_flight": [key("t-turns", 5)]}
    assert travel.undos() == undone


def test_two_failed_calls_in_one_turn_roll_back_once_and_raise_the_first(
    server: ScriptedOpenAIServer, script: Script, saver: SqliteSaver
) -> None:
    travel = Travel(
        True,
        delays={"book_flight": SLOW, "charge_wallet": SLOW / 3},
        refused={"reserve_room", "charge_wallet"},
    )
    agent, middleware = create_compensating_agent(
        chat_model(server), travel.tools(), checkpointer=saver
    )
    script.replies = [turn("book_flight", "reserve_room", "charge_wallet")]

    with pytest.raises(Refused, match="reserve_room refused"):
        ask(agent, "t-two")

    assert travel.undos() == [key("t-two", 1)]
    assert travel.live() == {}
    log = statuses(agent, "t-two")
    assert log == {
        key("t-two", 1): "undone",
        key("t-two", 2): "failed",
        key("t-two", 3): "failed",
    }
    assert middleware.rollback(agent, config("t-two")).undone == []


def test_a_failed_undo_after_a_parallel_turn_is_reported_and_rollback_finishes_it(
    server: ScriptedOpenAIServer, script: Script, saver: SqliteSaver
) -> None:
    travel = Travel(True, delays={"book_flight": SLOW}, refused={"charge_wallet"})
    cancel = travel.partners["reserve_room"].cancel
    outage = [True]

    def flaky_cancel(call: ToolCall) -> None:
        if outage[0]:
            raise ConnectionError("hotel partner unreachable")
        cancel(call)

    travel.partners["reserve_room"].cancel = flaky_cancel  # type: ignore[method-assign]
    agent, middleware = create_compensating_agent(
        chat_model(server), travel.tools(), checkpointer=saver, undo_retry=Retry(max_attempts=2)
    )
    script.replies = [turn("book_flight", "reserve_room", "charge_wallet")]

    with pytest.raises(ToolUndoError) as raised:
        ask(agent, "t-undo")

    assert raised.value.not_undone == [key("t-undo", 2)]
    assert isinstance(raised.value.__cause__, Refused)
    assert travel.undos() == [key("t-undo", 1)]
    assert statuses(agent, "t-undo")[key("t-undo", 2)] == "undo_failed"
    outage[0] = False
    report = middleware.rollback(agent, config("t-undo"))
    assert [c["key"] for c in report.undone] == [key("t-undo", 2)]
    assert travel.live() == {}
    assert travel.undos() == [key("t-undo", 1), key("t-undo", 2)]


@pytest.mark.parametrize("remembers", [True, False], ids=["remembering", "forgetful"])
@pytest.mark.parametrize("case", ["2-calls-slow-sibling", "3-calls-slow-and-fast"])
def test_under_ainvoke_one_failed_call_rolls_back_once_after_its_siblings_settle(
    case: str, remembers: bool, server: ScriptedOpenAIServer, script: Script, tmp_path: Path
) -> None:
    calls, refused, delays = CASES[case]
    travel = Travel(remembers, delays=delays, refused={refused})
    thread = f"a-{case}"
    url = f"sqlite:///{tmp_path / 'agent.sqlite'}"

    async def scenario() -> None:
        async with open_async_checkpointer(url) as saver:
            agent, middleware = create_compensating_agent(
                chat_model(server), travel.tools(), checkpointer=saver
            )
            script.replies = [turn(*calls)]
            with pytest.raises(Refused, match=f"{refused} refused"):
                await agent.ainvoke(
                    {"messages": [{"role": "user", "content": "trip"}]},
                    config(thread),
                    durability="sync",
                )
            undone = expected_undos(thread, calls, refused)
            refused_key = key(thread, calls.index(refused) + 1)
            # In parallel: the slow sibling (call-1) settled after the refused call, and
            # before the first undo.
            trail = travel.trail
            assert trail.index(f"failed {refused_key}") < trail.index(f"done {key(thread, 1)}")
            assert trail.index(f"done {key(thread, 1)}") < trail.index(f"undo {undone[0]}")
            assert travel.undos() == undone
            assert travel.live() == {}
            state = await agent.aget_state(config(thread))
            log = {c["key"]: c["status"] for c in state.values["tool_calls"]}
            assert [k for k, s in log.items() if s == "undone"] == sorted(undone)
            with pytest.raises(AgentRunError, match="refused"):
                await agent.ainvoke(None, config(thread), durability="sync")
            report = await middleware.arollback(agent, config(thread))
            assert report.undone == []
            assert travel.undos() == undone

    asyncio.run(scenario())


@pytest.mark.parametrize("recovery", ["resume", "rollback"])
def test_a_turn_stopped_before_its_rollback_is_rolled_back_by_another_process(
    recovery: str, server: ScriptedOpenAIServer, script: Script, saver: SqliteSaver
) -> None:
    """The process stops once the turn settled (here: interrupt_after the tools node), before
    the rollback ran; a new agent over the same checkpointer (another process) finishes it."""
    travel = Travel(True, delays={"book_flight": SLOW}, refused={"charge_wallet"})
    agent, _ = create_compensating_agent(
        chat_model(server), travel.tools(), checkpointer=saver, interrupt_after=["tools"]
    )
    script.replies = [turn("book_flight", "reserve_room", "charge_wallet")]
    ask(agent, "t-stop")
    assert travel.undos() == []
    assert travel.live() == {
        "book_flight": [key("t-stop", 1)],
        "reserve_room": [key("t-stop", 2)],
    }

    again, middleware = create_compensating_agent(
        chat_model(server), travel.tools(), checkpointer=saver
    )
    if recovery == "resume":
        with pytest.raises(AgentRunError, match="charge_wallet refused"):
            again.invoke(None, config("t-stop"), durability="sync")
    else:
        report = middleware.rollback(again, config("t-stop"))
        assert [c["key"] for c in report.undone] == [key("t-stop", 2), key("t-stop", 1)]
        with pytest.raises(AgentRunError, match="charge_wallet refused"):
            again.invoke(None, config("t-stop"), durability="sync")
    assert travel.undos() == [key("t-stop", 2), key("t-stop", 1)]
    assert travel.live() == {}
    assert middleware.rollback(again, config("t-stop")).undone == []
    assert statuses(again, "t-stop") == {
        key("t-stop", 1): "undone",
        key("t-stop", 2): "undone",
        key("t-stop", 3): "failed",
    }


def test_a_turn_of_tools_that_return_directly_is_rolled_back_too(
    server: ScriptedOpenAIServer, script: Script, saver: SqliteSaver
) -> None:
    travel = Travel(False, delays={"book_flight": SLOW}, refused={"charge_wallet"})
    tools = travel.tools()
    for one in tools:
        one.return_direct = True
    agent, middleware = create_compensating_agent(chat_model(server), tools, checkpointer=saver)
    script.replies = [turn("book_flight", "charge_wallet")]

    with pytest.raises(Refused, match="charge_wallet refused"):
        ask(agent, "t-direct")

    assert travel.undos() == [key("t-direct", 1)]
    assert travel.live() == {}
    assert middleware.rollback(agent, config("t-direct")).undone == []


def test_under_ainvoke_a_failed_model_call_and_a_failed_undo_roll_back_alike(
    server: ScriptedOpenAIServer, script: Script, tmp_path: Path
) -> None:
    """A model call that fails after a parallel turn undoes the turn's calls; an undo that
    fails is reported, and ``arollback`` finishes it once the partner is back."""
    travel = Travel(True, delays={"book_flight": SLOW})
    cancel = travel.partners["book_flight"].cancel
    outage = [True]

    def flaky_cancel(call: ToolCall) -> None:
        if outage[0]:
            raise ConnectionError("airline unreachable")
        cancel(call)

    travel.partners["book_flight"].cancel = flaky_cancel  # type: ignore[method-assign]
    url = f"sqlite:///{tmp_path / 'agent.sqlite'}"

    async def scenario() -> None:
        async with open_async_checkpointer(url) as saver:
            agent, middleware = create_compensating_agent(
                chat_model(server),
                travel.tools(),
                checkpointer=saver,
                undo_retry=Retry(max_attempts=2),
            )
            script.replies = [
                turn("book_flight", "reserve_room"),
                Reply(status=500, content="model down"),
            ]
            with pytest.raises(ToolUndoError) as raised:
                await agent.ainvoke(
                    {"messages": [{"role": "user", "content": "trip"}]},
                    config("a-model"),
                    durability="sync",
                )
            assert raised.value.not_undone == [key("a-model", 1)]
            assert "model down" in str(raised.value.__cause__)
            assert travel.undos() == [key("a-model", 2)]
            outage[0] = False
            report = await middleware.arollback(agent, config("a-model"))
            assert [c["key"] for c in report.undone] == [key("a-model", 1)]
            assert travel.live() == {}
            state = await agent.aget_state(config("a-model"))
            assert [c["status"] for c in state.values["tool_calls"]] == ["undone", "undone"]

    asyncio.run(scenario())


def test_the_swarm_partners_in_one_parallel_turn_end_as_they_began(
    server: ScriptedOpenAIServer, script: Script, saver: SqliteSaver, tmp_path: Path
) -> None:
    """The travel swarm's SQLite partners (they remember undone keys): bob's flight (slow),
    room and charge asked for at once; the charge is refused; every partner ends as it began."""
    stores = open_partners(tmp_path / "partners")
    book = stores.airline.book
    undone: list[str] = []

    def slow_book(*args: Any) -> dict[str, Any]:
        time.sleep(SLOW)
        return book(*args)

    def recording(method: Any) -> Any:
        def call(key: str, saga_id: str) -> bool:
            undone.append(key)
            returned: bool = method(key, saga_id)
            return returned

        return call

    stores.airline.book = slow_book  # type: ignore[method-assign,assignment]
    stores.airline.cancel = recording(stores.airline.cancel)  # type: ignore[method-assign]
    stores.hotel.cancel = recording(stores.hotel.cancel)  # type: ignore[method-assign]
    stores.wallet.refund = recording(stores.wallet.refund)  # type: ignore[method-assign]
    tools = [
        *flight_tools(stores.airline),
        *hotel_tools(stores.hotel),
        *billing_tools(stores.wallet),
    ]
    agent, middleware = create_compensating_agent(chat_model(server), tools, checkpointer=saver)
    before = holdings(stores, "bob")
    calls = [
        ("book_flight", {"flight": FLIGHT, "traveller": "bob"}),
        ("reserve_room", {"hotel_name": HOTELS[1], "guest": "bob", "nights": 3}),
        ("charge_wallet", {"owner": "bob", "amount_cents": 10**9}),
    ]
    script.replies = [Reply(tool_calls=[{"name": n, "arguments": json.dumps(a)} for n, a in calls])]

    with pytest.raises(PaymentRefused, match="INSUFFICIENT_FUNDS"):
        ask(agent, "swarm")

    assert undone == [key("swarm", 2), key("swarm", 1)]
    assert holdings(stores, "bob") == before
    assert statuses(agent, "swarm") == {
        key("swarm", 1): "undone",
        key("swarm", 2): "undone",
        key("swarm", 3): "failed",
    }
    assert middleware.rollback(agent, config("swarm")).undone == []
    assert undone == [key("swarm", 2), key("swarm", 1)]
