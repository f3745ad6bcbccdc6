"""Tool calls that take semantic locks: ``compensable(..., lock="seat:{flight}:{seat}")``.

The agents are LangChain's real ``create_agent`` with the real ``ChatOpenAI`` client against
the scripted server; each asks, in one turn, for every seat its task names (several calls in
one turn), then answers with what its tools said. The locks live in the saga store's lock
table (SQLite, and PostgreSQL when it is up), as a step's ``ctx.lock`` keys do.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool, tool

from sagagraph import (
    SagaDefinition,
    agent_step,
    build_saga_graph,
    compensable,
    new_saga_id,
    open_checkpointer,
    run_saga,
)
from sagagraph.errors import ConfigurationError
from sagagraph.graph.locking import held_locks
from sagagraph.saga.protocol import StepContext, StepResult
from sagagraph.tools.records import ToolCall
from tests.support.gated_saga import Notify, Partner, chat_model
from tests.support.openai_server import Reply, ScriptedOpenAIServer

SEAT_LOCK = "seat:{flight}:{seat}"


def respond(request: dict[str, Any]) -> Reply:
    """Book every seat the task names (``Book SG-101/12A SG-101/14C``) in one turn; once the
    calls are answered, reply with what the tools said, one line each."""
    messages = request.get("messages") or []
    if messages[-1].get("role") == "tool":
        said = [str(m.get("content")) for m in messages if m.get("role") == "tool"]
        return Reply(content="\n".join(said))
    task = next(str(m["content"]) for m in messages if m.get("role") == "user")
    calls = []
    for wanted in task.split()[1:]:
        flight, _, seat = wanted.partition("/")
        args = {"flight": flight, "seat": seat} if seat else {"flight": flight}
        calls.append({"name": "book_seat", "arguments": json.dumps(args)})
    return Reply(tool_calls=calls)


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(respond) as started:
        yield started


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


def seat_tool(partner: Partner, undo: Any = None) -> BaseTool:
    @tool
    def book_seat(flight: str, seat: str = "") -> str:
        """Book ``seat`` on ``flight``."""
        return partner.do("book_seat", {"flight": flight, "seat": seat})

    return compensable(book_seat, undo=undo or partner.undo, lock=SEAT_LOCK)


class Gate:
    """A step after the agent that holds its saga open until the test lets it go."""

    name = "gate"

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.release = threading.Event()

    def execute(self, ctx: StepContext) -> StepResult:
        self.reached.set()
        self.release.wait(120)
        return StepResult(data={})

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        return None


def booking_saga(partner: Partner, base_url: str, *steps: Any, undo: Any = None) -> Any:
    book = agent_step(
        "book",
        chat_model(base_url),
        [seat_tool(partner, undo)],
        prompt=lambda ctx: f"Book {ctx.input['seats']}",
    )
    return build_saga_graph(SagaDefinition.of("seats", [book, *steps, Notify()]))


def test_a_second_saga_asking_for_a_locked_seat_is_told_it_is_busy(
    tmp_path: Path, server: ScriptedOpenAIServer, store_url: str
) -> None:
    partner = Partner(tmp_path)
    gate = Gate()
    with open_checkpointer(store_url) as checkpointer:
        # The first saga waits at its gate, holding its seat; the second has no gate.
        app = booking_saga(partner, server.base_url, gate).compile(checkpointer=checkpointer)
        other = booking_saga(partner, server.base_url).compile(checkpointer=checkpointer)
        first_id, second_id = new_saga_id("first"), new_saga_id("second")
        views: dict[str, Any] = {}

        def first() -> None:
            views["first"] = run_saga(app, {"seats": "SG-101/12A"}, saga_id=first_id)

        runner = threading.Thread(target=first)
        runner.start()
        try:
            assert gate.reached.wait(120)
            held = held_locks(checkpointer, first_id)
            assert [(r["key"], r["step"]) for r in held] == [("seat:SG-101:12A", "book:call-1")]
            # Its agent asks for the held seat and a free one, in one turn: only the free one
            # is booked; the model reads the busy seat as the tool's error.
            second = run_saga(other, {"seats": "SG-101/12A SG-101/14C"}, saga_id=second_id)
            assert second["status"] == "completed"
            said = second["results"]["book"]["answer"].splitlines()
            assert said[0] == (
                f"error: LockBusyError: lock 'seat:SG-101:12A': held by saga '{first_id}'"
            )
            assert json.loads(said[1])["seat"] == "14C"
            calls = second["results"]["book"]["tool_calls"]
            assert [c["status"] for c in calls] == ["failed", "forward"]
            assert held_locks(checkpointer, second_id) == []  # released when it completed
            assert [r["key"] for r in held_locks(checkpointer)] == ["seat:SG-101:12A"]
        finally:
            gate.release.set()
            runner.join()
        assert views["first"]["status"] == "completed"
        assert held_locks(checkpointer) == []
    booked = [(r["args"]["seat"], r["key"].split(":")[0]) for r in partner.rows()]
    assert sorted(booked) == sorted([("12A", first_id), ("14C", second_id)])


def test_a_failed_saga_undoes_its_bookings_and_each_undo_releases_its_lock(
    tmp_path: Path, server: ScriptedOpenAIServer, store_url: str
) -> None:
    partner = Partner(tmp_path)
    seen: dict[str, list[str]] = {}
    with open_checkpointer(store_url) as checkpointer:

        def undo(call: ToolCall) -> None:
            # Newest first: when 12A's booking is undone, 14C's undo already released its key.
            seen[call["args"]["seat"]] = [r["key"] for r in held_locks(checkpointer, saga_id)]
            partner.undo(call)

        app = booking_saga(partner, server.base_url, undo=undo).compile(checkpointer=checkpointer)
        saga_id = new_saga_id("fails")
        view = run_saga(app, {"seats": "SG-101/12A SG-101/14C"}, saga_id=saga_id, fail_at="notify")
        assert view["status"] == "rolled_back"
        assert held_locks(checkpointer) == []
    assert seen == {
        "14C": ["seat:SG-101:12A", "seat:SG-101:14C"],
        "12A": ["seat:SG-101:12A"],
    }
    assert [r["state"] for r in partner.rows()] == ["undone", "undone"]


def test_a_call_lacking_an_argument_its_lock_names_fails_in_one_line(
    tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    partner = Partner(tmp_path)
    with open_checkpointer(f"sqlite:///{tmp_path / 'sagas.sqlite'}") as checkpointer:
        app = booking_saga(partner, server.base_url).compile(checkpointer=checkpointer)
        view = run_saga(app, {"seats": "SG-101/"}, saga_id=new_saga_id("lacks"))
        assert held_locks(checkpointer) == []
    assert view["status"] == "completed"
    assert view["results"]["book"]["answer"] == (
        "error: ConfigurationError: tool 'book_seat': lock 'seat:{flight}:{seat}' needs the "
        "argument 'seat', which the call does not pass"
    )
    assert partner.rows() == []  # the call never ran


def test_a_lock_naming_an_argument_the_tool_lacks_is_refused_when_declared(
    tmp_path: Path,
) -> None:
    partner = Partner(tmp_path)

    @tool
    def book_seat(flight: str, seat: str) -> str:
        """Book ``seat`` on ``flight``."""
        return partner.do("book_seat", {"flight": flight, "seat": seat})

    with pytest.raises(ConfigurationError) as refused:
        compensable(book_seat, undo=partner.undo, lock="seat:{flight}:{row}")
    assert str(refused.value) == (
        "tool 'book_seat': lock 'seat:{flight}:{row}' names 'row', which is not one of its "
        "arguments (flight, seat)"
    )
    with pytest.raises(ConfigurationError, match="on_busy must be 'wait' or 'fail'"):
        compensable(book_seat, undo=partner.undo, lock=SEAT_LOCK, on_busy="pending")
