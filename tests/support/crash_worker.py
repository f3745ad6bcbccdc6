"""A worker process for crash tests: runs, resumes or recovers a saga, and may die on purpose.

Toy saga (``tests.support.toy_saga``)::

    python -m tests.support.crash_worker run --db URL --journal PATH --saga-id ID --steps 4 \\
        [--outputs DIR] [--fail-at s4] [--crash s2:compensate:after[:sigkill]]
    python -m tests.support.crash_worker resume --db URL --journal PATH --saga-id ID --steps 4
    python -m tests.support.crash_worker recover --db URL --journal PATH --steps 4 [--compensate]
    python -m tests.support.crash_worker fleet --db URL --journal PATH --steps 4 \
        --case ID:s2:execute:after[:sigkill][@FAIL_AT] --case ...

``fleet`` starts one child process per ``--case``, all at once (``os.fork`` of this warmed-up
interpreter, so a case costs milliseconds, not an interpreter start); each runs its saga
until it dies at its boundary. It prints ``{saga_id: exit status}`` (negative: the signal).

The real ``sagagraph`` command, with faults injected into the paper saga's output store::

    python -m tests.support.crash_worker cli [--crash reviewer:execute:during] \\
        [--break-undo reviewer] \\
        -- run PAPER --db URL --outputs DIR ...

``--crash STEP:ACTION:MOMENT`` kills the process inside that step's execute or compensate,
``before`` or ``after`` its effect is written (for ``cli``, also ``during``: the output's
temporary file is on disk, not yet renamed into place). The process dies with ``os._exit``
(exit status ``CRASH_EXIT_CODE``) or, with a ``:sigkill`` suffix, by ``SIGKILL``: no cleanup,
no exception handler, as when a machine loses power. With ``:hold`` the process prints
``HOLDING`` there and waits to be killed from outside. ``--break-undo STEP`` makes that step's
compensation fail on every attempt in this process. Otherwise the toy commands print the
saga's JSON view (a list of views for ``recover``) and exit 0; ``cli`` exits as ``sagagraph``.

Nothing here is part of the package: production code carries no test hooks.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from sagagraph import resume_saga, run_saga
from sagagraph.graph.recover import recover_sagas
from tests.support.toy_saga import Action, Crash, Journal, Moment, Plan, die, saga_app, toy_saga


def parse_crash(spec: str) -> Crash:
    """``STEP:ACTION:MOMENT``, then optionally ``:sigkill`` or ``:hold``."""
    step, action, moment, *how = spec.split(":")
    if action not in ("execute", "compensate") or moment not in ("before", "after", "during"):
        raise argparse.ArgumentTypeError(f"--crash {spec!r}: expected STEP:ACTION:MOMENT")
    if how not in ([], ["sigkill"], ["hold"]):
        raise argparse.ArgumentTypeError(f"--crash {spec!r}: only ':sigkill' or ':hold' follow")
    return Crash(
        step,
        cast(Action, action),
        cast(Moment, moment),
        hard=True,
        sigkill=how == ["sigkill"],
        hold=how == ["hold"],
    )


def toy_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="crash_worker")
    parser.add_argument("command", choices=["run", "resume", "recover", "fleet"])
    parser.add_argument("--db", required=True)
    parser.add_argument("--journal", type=Path, required=True)
    parser.add_argument("--outputs", type=Path)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--saga-id")
    parser.add_argument("--fail-at")
    parser.add_argument("--crash", type=parse_crash)
    parser.add_argument("--compensate", action="store_true")
    parser.add_argument("--case", action="append", default=[])
    args = parser.parse_args(argv)
    if args.command == "fleet":
        children = {case.split(":")[0]: start_case_in_child(args, case) for case in args.case}
        statuses = {
            saga_id: os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            for saga_id, pid in children.items()
        }
        json.dump(statuses, sys.stdout)
        return 0

    plan = Plan(crash=args.crash)
    definition = toy_saga(args.steps, Journal(args.journal), plan, outputs=args.outputs)
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


def start_case_in_child(args: argparse.Namespace, case: str) -> int:
    """Fork a child that runs one saga until it dies at its boundary; return its pid."""
    spec, _, fail_at = case.partition("@")
    saga_id, _, crash_spec = spec.partition(":")
    crash = parse_crash(crash_spec)
    pid = os.fork()
    if pid == 0:  # the child: nothing opened in the parent is shared, all is opened here
        code = 1
        try:
            plan = Plan(crash=crash)
            definition = toy_saga(args.steps, Journal(args.journal), plan, outputs=args.outputs)
            with saga_app(definition, args.db) as app:
                run_saga(app, {}, saga_id=saga_id, fail_at=fail_at or None)
            code = 0  # it should have died on the way
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    return pid


def inject_into_paper_store(crash: Crash | None, broken_undo: Iterable[str]) -> None:
    """Wrap the paper saga's OutputStore so it dies, or refuses to undo, where asked."""
    from sagagraph.agents import store as store_module

    broken = set(broken_undo)
    store_cls = store_module.OutputStore
    original_write = store_cls.write
    original_compensate = store_cls.compensate
    original_replace = os.replace
    dying_on_rename: list[Crash] = []

    def at(step: str, action: str, moment: str) -> None:
        if crash is not None and (crash.step, crash.action, crash.moment) == (
            step,
            action,
            moment,
        ):
            die(crash)

    def write(self: Any, key: str, name: str, text: str) -> Path:
        step = key.rpartition(":")[2]
        at(step, "execute", "before")
        if crash is not None and (crash.step, crash.action, crash.moment) == (
            step,
            "execute",
            "during",
        ):
            dying_on_rename.append(crash)
        path = original_write(self, key, name, text)
        at(step, "execute", "after")
        return path

    def compensate(self: Any, key: str, names: Iterable[str] = ()) -> list[Path]:
        step = key.rpartition(":")[2]
        if step in broken:
            raise ConnectionError(f"{step}: undo refused (injected by the test)")
        at(step, "compensate", "before")
        deleted = original_compensate(self, key, names)
        at(step, "compensate", "after")
        return deleted

    def replace(src: Any, dst: Any, **kwargs: Any) -> None:
        if dying_on_rename:
            # The temporary file is written and synced; the rename never happens.
            die(dying_on_rename.pop())
        original_replace(src, dst, **kwargs)

    store_cls.write = write  # type: ignore[method-assign]
    store_cls.compensate = compensate  # type: ignore[method-assign]
    os.replace = replace  # the store renames through os.replace; this process dies anyway


def cli_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="crash_worker cli")
    parser.add_argument("--crash", type=parse_crash)
    parser.add_argument("--break-undo", action="append", default=[])
    parser.add_argument("sagagraph_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    rest = list(args.sagagraph_args)
    if rest[:1] == ["--"]:
        rest = rest[1:]
    inject_into_paper_store(args.crash, args.break_undo)
    from sagagraph.cli import main as sagagraph_main

    return sagagraph_main(rest)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["cli"]:
        return cli_main(argv[1:])
    return toy_main(argv)


if __name__ == "__main__":
    sys.exit(main())
