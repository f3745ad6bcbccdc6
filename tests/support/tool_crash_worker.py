"""A worker process for the tool-call crash tests: it may die by SIGKILL at a tool boundary.

The travel swarm as a saga (offline scripted model, SQLite partners, a durable checkpointer)::

    python -m tests.support.tool_crash_worker saga-run --data DIR --db URL --saga-id ID \\
        --traveller T \\
        [--crash STORE.METHOD:CALL:MOMENT]
    python -m tests.support.tool_crash_worker saga-recover --data DIR --db URL [--compensate]

One ``create_agent`` agent with ToolCompensationMiddleware and a SqliteSaver::

    python -m tests.support.tool_crash_worker agent-run --data DIR --db PATH --thread T \\
        --traveller T \\
        [--crash ...]
    python -m tests.support.tool_crash_worker agent-resume|agent-rollback --data DIR \\
        --db PATH --thread T

``--crash airline.book:call-1:after`` kills the process (SIGKILL: no cleanup, no handler)
right before or after the partner call of that store method whose key ends in ``:call-1``.
Every partner call is appended to ``DIR/journal.jsonl`` (op, key, outcome), so
the test can count calls. The saga commands print the saga's JSON view (a list for
``saga-recover``); the agent commands print ``{"outcome": ..., "error": ...}``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from examples.travel_swarm.billing import billing_tools
from examples.travel_swarm.flight import flight_tools
from examples.travel_swarm.hotel import hotel_tools
from examples.travel_swarm.partners import FLIGHT, TravelStores, open_partners
from examples.travel_swarm.scripted_model import ScriptedSwarmModel
from examples.travel_swarm.supervisor import swarm_graph
from sagagraph import open_checkpointer, run_saga
from sagagraph.graph.recover import recover_sagas

OPS = {
    "airline": ("book", "cancel"),
    "hotel": ("reserve", "cancel"),
    "wallet": ("charge", "refund"),
}


def instrument(stores: TravelStores, folder: Path, crash: str | None) -> None:
    """Journal every partner call; die by SIGKILL at the ``crash`` boundary."""
    op, call, moment = crash.split(":") if crash else ("", "", "")
    journal = folder / "journal.jsonl"

    def note(name: str, key: str, outcome: str) -> None:
        with journal.open("a") as out:
            out.write(json.dumps({"op": name, "key": key, "outcome": outcome}) + "\n")
            out.flush()
            os.fsync(out.fileno())

    def wrap(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def call_partner(key: str, *args: Any) -> Any:
            hit = name == op and key.endswith(f":{call}")
            if hit and moment == "before":
                os.kill(os.getpid(), signal.SIGKILL)
            try:
                returned = method(key, *args)
            except Exception:
                note(name, key, "raised")
                raise
            # "gave_back": a cancel or refund that undid something (True); else "ok".
            note(name, key, "gave_back" if returned is True else "ok")
            if hit and moment == "after":
                os.kill(os.getpid(), signal.SIGKILL)
            return returned

        return call_partner

    for store_name, methods in OPS.items():
        store = getattr(stores, store_name)
        for method in methods:
            setattr(store, method, wrap(f"{store_name}.{method}", getattr(store, method)))


def _partners(folder: Path, crash: str | None) -> TravelStores:
    stores = open_partners(folder)
    instrument(stores, folder, crash)
    return stores


def saga_command(args: argparse.Namespace) -> None:
    stores = _partners(Path(args.data), args.crash)
    with open_checkpointer(args.db) as checkpointer:
        app = swarm_graph(stores, ScriptedSwarmModel()).compile(checkpointer=checkpointer)
        if args.command == "saga-run":
            trip = {"traveller": args.traveller, "flight": FLIGHT, "nights": 3}
            print(json.dumps(run_saga(app, trip, saga_id=args.saga_id)))
        else:
            print(json.dumps(recover_sagas(app, compensate=args.compensate)))


def agent_command(args: argparse.Namespace) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from sagagraph import Retry, create_compensating_agent

    stores = _partners(Path(args.data), args.crash)
    tools = [
        *flight_tools(stores.airline),
        *hotel_tools(stores.hotel),
        *billing_tools(stores.wallet),
    ]
    config: Any = {"configurable": {"thread_id": args.thread}}
    with SqliteSaver.from_conn_string(args.db) as saver:
        agent, middleware = create_compensating_agent(
            ScriptedTripModel(args.traveller), tools, checkpointer=saver, undo_retry=Retry()
        )
        try:
            if args.command == "agent-run":
                # "sync": each agent superstep is on disk before the next starts, so a
                # finished call is never made again after a crash (see docs/tools.md).
                messages = {"messages": [{"role": "user", "content": "trip"}]}
                agent.invoke(messages, config, durability="sync")
            elif args.command == "agent-resume":
                agent.invoke(None, config, durability="sync")
            else:
                middleware.rollback(agent, config)
        except Exception as error:
            print(json.dumps({"outcome": "error", "error": f"{type(error).__name__}: {error}"}))
            return
        print(json.dumps({"outcome": "ok", "error": None}))


class ScriptedTripModel(ScriptedSwarmModel):
    """One agent that books the whole trip: flight, the free hotel, then the charge."""

    traveller: str = "ada"

    def __init__(self, traveller: str) -> None:
        super().__init__(traveller=traveller)  # type: ignore[call-arg]

    def _generate(
        self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Any:
        from langchain_core.messages import AIMessage, ToolMessage
        from langchain_core.outputs import ChatGeneration, ChatResult

        done = sum(isinstance(m, ToolMessage) for m in messages)
        plan = [
            ("book_flight", {"flight": FLIGHT, "traveller": self.traveller}),
            ("reserve_room", {"hotel_name": "old-town", "guest": self.traveller, "nights": 3}),
            ("charge_wallet", {"owner": self.traveller, "amount_cents": 42_000 + 3 * 9_500}),
        ]
        if done < len(plan):
            name, args = plan[done]
            reply = AIMessage(
                content="", tool_calls=[{"name": name, "args": args, "id": f"c{done + 1}"}]
            )
        else:
            reply = AIMessage(content="trip booked")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.tool_crash_worker")
    parser.add_argument(
        "command",
        choices=["saga-run", "saga-recover", "agent-run", "agent-resume", "agent-rollback"],
    )
    parser.add_argument("--data", required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--saga-id")
    parser.add_argument("--thread")
    parser.add_argument("--traveller", default="ada")
    parser.add_argument("--crash")
    parser.add_argument("--compensate", action="store_true")
    args = parser.parse_args(argv)
    if args.command.startswith("saga"):
        saga_command(args)
    else:
        agent_command(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
