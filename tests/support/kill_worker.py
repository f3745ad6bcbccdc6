"""A worker process for the kill-window suite: paper sagas killed from inside the checkpointer.

::

    python -m tests.support.kill_worker fleet --db URL --outputs DIR --paper PATH [--async]
    python -m tests.support.kill_worker run --db URL --outputs DIR --paper PATH --saga-id ID \\
        --kill put:1 [--settings]
    python -m tests.support.kill_worker resume --db URL --outputs DIR [--async] ID [ID ...]
    python -m tests.support.kill_worker recover --db URL --outputs DIR [--compensate]
    python -m tests.support.kill_worker status --db URL --outputs DIR

``fleet`` first runs one saga of each path (``ok``: success; ``fail``: ``fail_at=summarizer``)
to count the checkpointer's ``put`` and ``put_writes`` calls, then forks one child per kill
window: path x method x N (every call of that path) x how (``os._exit`` or ``SIGKILL``). Each
child runs its saga (``invoke``, or ``ainvoke`` on the async savers with ``--async``) and
dies right after the N-th call returned. It prints ``{"counts": ..., "exits": {id: status}}``
(a negative status: the signal). ``resume``, ``recover`` and ``status`` (every saga) print a
list of views.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

from sagagraph.agents.paper_saga import paper_saga_definition
from sagagraph.checkpoints.async_factory import open_async_checkpointer
from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.graph.async_runner import aresume_saga, arun_saga
from sagagraph.graph.builder import build_saga_graph
from sagagraph.graph.recover import recover_sagas
from sagagraph.graph.runner import resume_saga, run_saga
from tests.support.kill_saver import METHODS, CallCounter, How, Method, arm
from tests.support.toy_saga import stored_views

PATHS = {"ok": None, "fail": "summarizer"}
"""Saga path -> the step made to fail (None: the success path)."""
HOWS: tuple[How, ...] = ("exit", "sigkill")
PARALLEL_CHILDREN = 6
"""Children alive at once: enough to overlap, few enough for a small shared machine."""


def case_id(path: str, method: Method, n: int, how: How) -> str:
    return f"{path}-{method.replace('_', '-')}-{n}-{how}"


def _graph(outputs: str) -> Any:
    return build_saga_graph(paper_saga_definition(outputs_dir=outputs))


@contextmanager
def sync_app(db: str, outputs: str) -> Iterator[Any]:
    with open_checkpointer(db) as saver:
        yield _graph(outputs).compile(checkpointer=saver)


def run_one(args: argparse.Namespace, saga_id: str, fail_at: str | None, **arming: Any) -> None:
    """Run one saga to its end (or to the kill); the checkpointer is armed as asked."""
    saga_input: dict[str, Any] = {"paper": args.paper}
    if getattr(args, "settings", False):
        saga_input["settings"] = {"outputs": args.outputs, "router": "deterministic"}
    if args.use_async:

        async def go() -> None:
            async with open_async_checkpointer(args.db) as saver:
                arm(saver, asynchronous=True, **arming)
                app = _graph(args.outputs).compile(checkpointer=saver)
                await arun_saga(cast(Any, app), saga_input, saga_id=saga_id, fail_at=fail_at)

        asyncio.run(go())
        return
    with open_checkpointer(args.db) as saver:
        arm(saver, **arming)
        app = _graph(args.outputs).compile(checkpointer=saver)
        run_saga(app, saga_input, saga_id=saga_id, fail_at=fail_at)


def fork_case(args: argparse.Namespace, saga_id: str, fail_at: str | None, **arming: Any) -> int:
    pid = os.fork()
    if pid == 0:  # the child opens everything itself: nothing of the parent's is shared
        code = 1
        try:
            run_one(args, saga_id, fail_at, **arming)
            code = 0  # it should have died on the way
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    return pid


def count_calls(args: argparse.Namespace, path: str) -> dict[str, int]:
    """Run one saga of ``path`` in a forked child and return its checkpointer call counts.

    In a child, so this process never starts an event loop or a saver's threads: a fork
    taken after them can inherit a lock that no thread of the child will ever release.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            counter = CallCounter()
            run_one(args, f"count-{path}", PATHS[path], counter=counter)
            os.write(write_end, json.dumps(counter.counts).encode())
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        text = pipe.read()
    if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0:
        raise SystemExit(f"counting run of the {path} path failed")
    counts: dict[str, int] = json.loads(text)
    return counts


def fleet(args: argparse.Namespace) -> dict[str, Any]:
    counts = {path: count_calls(args, path) for path in PATHS}
    cases = [
        (case_id(path, method, n, how), PATHS[path], (method, n), how)
        for path in PATHS
        for method in METHODS
        for n in range(1, counts[path][method] + 1)
        for how in HOWS
    ]
    exits: dict[str, int] = {}
    running: dict[int, str] = {}
    for saga_id, fail_at, kill_at, how in cases:
        if len(running) >= PARALLEL_CHILDREN:
            pid, status = os.wait()
            exits[running.pop(pid)] = os.waitstatus_to_exitcode(status)
        pid = fork_case(args, saga_id, fail_at, counter=CallCounter(), kill_at=kill_at, how=how)
        running[pid] = saga_id
    for pid, saga_id in running.items():
        exits[saga_id] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return {"counts": counts, "exits": exits}


def resume(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.use_async:

        async def go() -> list[dict[str, Any]]:
            async with open_async_checkpointer(args.db) as saver:
                app = cast(Any, _graph(args.outputs).compile(checkpointer=saver))
                return [await aresume_saga(app, saga_id) for saga_id in args.saga_ids]

        return asyncio.run(go())
    with sync_app(args.db, args.outputs) as app:
        return [resume_saga(app, saga_id) for saga_id in args.saga_ids]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kill_worker")
    parser.add_argument("command", choices=["fleet", "run", "resume", "recover", "status"])
    parser.add_argument("saga_ids", nargs="*")
    parser.add_argument("--db", required=True)
    parser.add_argument("--outputs", required=True)
    parser.add_argument("--paper")
    parser.add_argument("--async", dest="use_async", action="store_true")
    parser.add_argument("--compensate", action="store_true")
    parser.add_argument("--saga-id")
    parser.add_argument("--kill", help="METHOD:N, e.g. put:1 (dies by SIGKILL)")
    parser.add_argument(
        "--settings", action="store_true", help="record the outputs folder as the CLI does"
    )
    args = parser.parse_args(argv)
    result: Any
    if args.command == "fleet":
        result = fleet(args)
    elif args.command == "run":
        method, _, n = args.kill.partition(":")
        kill_at = (cast(Method, method), int(n))
        run_one(args, args.saga_id, None, counter=CallCounter(), kill_at=kill_at, how="sigkill")
        result = "not killed"
    elif args.command == "resume":
        result = resume(args)
    else:
        with sync_app(args.db, args.outputs) as app:
            if args.command == "recover":
                result = recover_sagas(app, compensate=args.compensate)
            else:
                result = stored_views(app)
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
