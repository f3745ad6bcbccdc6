"""Send two trips through the swarm: one the traveller can pay for, one they cannot.

    python -m examples.travel_swarm.run [--data DIR] [--db URL] [--router deterministic|llm]

Offline: the agents and the router are played by a scripted model. The second trip books a
flight and a hotel (after the first hotel answers FULL), then billing fails with
INSUFFICIENT_FUNDS: the hotel's tool calls are undone, then the flight's, and every partner
ends as it began. Then a slow partner's booking lands after its undo, and is refused.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from examples.shared import print_saga
from examples.travel_swarm.partners import FLIGHT, TravelStores, holdings, open_partners
from examples.travel_swarm.scripted_model import ScriptedSwarmModel
from examples.travel_swarm.supervisor import swarm_graph
from sagagraph import CompensatedKeyError, RouterOptions, new_saga_id, open_checkpointer, run_saga

TRIPS: list[tuple[str, dict[str, Any], str]] = [
    ("Trip 1: Ada can pay", {"traveller": "ada", "flight": FLIGHT, "nights": 3}, "completed"),
    (
        "Trip 2: Bob cannot pay (INSUFFICIENT_FUNDS)",
        {"traveller": "bob", "flight": FLIGHT, "nights": 3},
        "rolled_back",
    ),
]


def print_tools(view: dict[str, Any]) -> None:
    """Each agent's tool calls and where they stand."""
    for step, calls in view["tools"].items():
        for call in calls:
            print(f"  {step:<8} {call['tool']:<14} {call['key']:<28} {call['status']}")


def late_booking_refused(stores: TravelStores, view: dict[str, Any]) -> bool:
    """A slow partner: the flight's first booking lands after its undo. True when refused."""
    key = view["tools"]["flight"][0]["key"]
    try:
        stores.airline.book(key, view["saga_id"], FLIGHT, "bob")
    except CompensatedKeyError as refused:
        print(f"late booking refused: {refused}")
        return True
    return False


def main(
    data_dir: str | Path | None = None, db_url: str | None = None, router: str = "deterministic"
) -> int:
    """Run both trips; 0 when each ends as expected and the partners are as they began."""
    with ExitStack() as stack:
        folder = Path(data_dir or stack.enter_context(tempfile.TemporaryDirectory()))
        stores = open_partners(folder)
        checkpointer = stack.enter_context(
            open_checkpointer(db_url or f"sqlite:///{folder / 'sagas.sqlite'}")
        )
        graph = swarm_graph(
            stores,
            ScriptedSwarmModel(),
            "llm" if router == "llm" else "deterministic",
            RouterOptions(method="text"),
        )
        app = graph.compile(checkpointer=checkpointer)
        ok = True
        for title, trip, expected in TRIPS:
            print(f"\n--- {title}")
            before = holdings(stores, trip["traveller"])
            view = run_saga(app, trip, saga_id=new_saga_id("trip"))
            print_saga(view)
            print("tool calls:")
            print_tools(view)
            after = holdings(stores, trip["traveller"])
            if expected == "rolled_back":
                print(f"partners as they began: {after == before}")
                ok = ok and after == before and late_booking_refused(stores, view)
            ok = ok and view["status"] == expected
        return 0 if ok else 1


def cli(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.travel_swarm.run")
    parser.add_argument("--data", help="folder for the partners (default: a temporary folder)")
    parser.add_argument("--db", help="checkpointer URL (default: sagas.sqlite in that folder)")
    parser.add_argument("--router", choices=["deterministic", "llm"], default="deterministic")
    args = parser.parse_args(argv)
    return main(args.data, args.db, args.router)


if __name__ == "__main__":
    sys.exit(cli())
