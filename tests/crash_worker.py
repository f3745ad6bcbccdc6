"""A worker process for crash tests: runs, resumes or recovers a toy saga, and may die on purpose.

    python -m tests.crash_worker run --db URL --journal PATH --saga-id ID --steps 4 \\
        [--fail-at s4] [--crash s2:compensate:after]
    python -m tests.crash_worker resume --db URL --journal PATH --saga-id ID --steps 4
    python -m tests.crash_worker recover --db URL --journal PATH --steps 4 [--compensate]

``--crash STEP:ACTION:MOMENT`` kills the process with ``os._exit`` inside that step's execute
or compensate, before or after its effect is written: no cleanup, no exception handler, as
when a machine loses power. The exit status is then ``CRASH_EXIT_CODE``. Otherwise the worker
prints the saga's JSON view (a list of views for ``recover``) and exits 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from sagagraph import resume_saga, run_saga
from sagagraph.graph.runner import recover_sagas
from tests.toy_saga import Action, Crash, Journal, Moment, Plan, saga_app, toy_saga


def parse_crash(spec: str) -> Crash:
    step, action, moment = spec.split(":")
    return Crash(step, cast(Action, action), cast(Moment, moment), hard=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="crash_worker")
    parser.add_argument("command", choices=["run", "resume", "recover"])
    parser.add_argument("--db", required=True)
    parser.add_argument("--journal", type=Path, required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--saga-id")
    parser.add_argument("--fail-at")
    parser.add_argument("--crash", type=parse_crash)
    parser.add_argument("--compensate", action="store_true")
    args = parser.parse_args(argv)

    plan = Plan(crash=args.crash)
    definition = toy_saga(args.steps, Journal(args.journal), plan)
    result: Any
    with saga_app(definition, args.db) as app:
        if args.command == "run":
            result = run_saga(app, {}, saga_id=args.saga_id, fail_at=args.fail_at)
        elif args.command == "resume":
            result = resume_saga(app, args.saga_id)
        else:
            result = recover_sagas(app, compensate=args.compensate)
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
