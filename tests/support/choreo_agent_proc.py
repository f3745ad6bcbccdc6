"""One agent of the test file saga, as its own process:
``python -m tests.support.choreo_agent_proc``.

``--crash-after-commit SAGA_ID`` kills the process (exit 87) right after the agent recorded
its decision for that saga and before it published anything, once (a marker file remembers).
``SAGAGRAPH_TEST_CRASH`` (see tests.support.choreo_saga) kills it in the middle of a step instead.
SIGTERM stops it cleanly after the event in hand.
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

from sagagraph.choreography.messages import SagaMessage
from sagagraph.choreography.runner import CommitHook, run_step_service
from tests.support.choreo_saga import file_saga, file_saga_for

CRASH_AFTER_COMMIT_EXIT_CODE = 87


def crash_after_commit(root: Path, step: str, saga_id: str) -> CommitHook:
    def hook(event: SagaMessage, emitted: list[SagaMessage]) -> None:
        marker = root / f"crashed-after-commit-{step}-{saga_id}"
        if event["saga_id"] == saga_id and emitted and not marker.exists():
            marker.write_text(event["id"])
            os._exit(CRASH_AFTER_COMMIT_EXIT_CODE)

    return hook


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("step")
    parser.add_argument("--bus", required=True)
    parser.add_argument("--root", required=True, type=Path)
    parser.add_argument("--state", required=True, type=Path)
    parser.add_argument("--crash-after-commit")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format=f"{args.step} %(levelname)s %(message)s")
    hook = None
    if args.crash_after_commit:
        hook = crash_after_commit(args.root, args.step, args.crash_after_commit)
    run_step_service(
        file_saga(args.root),
        args.step,
        args.bus,
        state_dir=args.state,
        on_committed=hook,
        definition_for=file_saga_for(args.root),
    )


if __name__ == "__main__":
    main()
