"""A paper saga started from Python with a relative outputs folder, killed after its first step.

``python -m tests.support.python_outputs_worker DB_URL SAGA_ID [in-validator]`` runs in the
caller's folder: ``paper_saga_definition(outputs_dir="out")``, then ``run_saga``; the
reviewer's engine call kills the process (``os._exit``) once the validator has committed and
been checkpointed. With ``in-validator``, the process SIGKILLs itself as soon as the validator
has written ``validation.txt``, before any checkpoint after the validator.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from sagagraph import run_saga
from sagagraph.agents.offline_engine import OfflineEngine
from sagagraph.agents.paper_saga import paper_saga_definition
from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.graph.builder import build_saga_graph

PAPER = Path(__file__).resolve().parents[2] / "examples" / "papers" / "complete_paper.md"
KILLED_EXIT_CODE = 37


class DiesInReview(OfflineEngine):
    def review(self, paper):  # type: ignore[no-untyped-def]
        os._exit(KILLED_EXIT_CODE)


def die_after_the_first_write() -> None:
    from sagagraph.agents import store

    original = store.OutputStore.write

    def write(self: store.OutputStore, key: str, name: str, text: str) -> Path:
        written = original(self, key, name, text)
        os.kill(os.getpid(), signal.SIGKILL)
        return written

    store.OutputStore.write = write  # type: ignore[method-assign]


def main(db_url: str, saga_id: str, when: str = "") -> None:
    if when == "in-validator":
        die_after_the_first_write()
    definition = paper_saga_definition(engine=DiesInReview(), outputs_dir="out")
    with open_checkpointer(db_url) as checkpointer:
        app = build_saga_graph(definition).compile(checkpointer=checkpointer)
        run_saga(app, {"paper": str(PAPER)}, saga_id=saga_id)


if __name__ == "__main__":
    main(*sys.argv[1:4])
