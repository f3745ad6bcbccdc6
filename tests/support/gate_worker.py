"""A process that starts the gated saga of :mod:`gated_saga` and then stays up, waiting.

    python -m tests.support.gate_worker --data DIR --db URL --saga-id ID --base-url URL

It runs the saga until its gated calls wait for approval, prints the saga's JSON view on
one line, and blocks (as a server would): the test kills it there with SIGKILL, then
answers the calls from other processes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from sagagraph import build_saga_graph, open_checkpointer, run_saga
from tests.support.gated_saga import definition


def main() -> None:
    parser = argparse.ArgumentParser()
    for flag in ("--data", "--db", "--saga-id", "--base-url"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    graph = build_saga_graph(definition(Path(args.data), args.base_url))
    with open_checkpointer(args.db) as checkpointer:
        app = graph.compile(checkpointer=checkpointer)
        view = run_saga(app, {"traveller": "ada"}, saga_id=args.saga_id)
        print(json.dumps(view, default=str), flush=True)
        while True:  # waiting, like a long-lived process, until killed
            time.sleep(60)
    sys.exit(0)


if __name__ == "__main__":
    main()
