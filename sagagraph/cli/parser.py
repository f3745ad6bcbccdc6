"""The ``sagagraph`` argument parser: one sub-command per verb, each with only the flags it uses.

Building it imports no command module: each verb names its handler as ``module:function``
(under ``sagagraph.cli``), imported when that verb runs. ``--help`` and a usage error so
load argparse and the flags only, and ``graph`` never loads what ``run`` needs.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, get_args

from sagagraph.cli.flags import (
    PAPER_STEPS,
    agents_flag,
    bus_flag,
    bus_key_flags,
    db_flag,
    debug_flag,
    engine_flags,
    fail_at_flag,
    insecure_bus_flag,
    json_flag,
    password_flag,
    queue_flag,
    router_flag,
    router_flags,
    saga_id_arg,
    step_timeout_flag,
)
from sagagraph.saga.view import Status

STATUSES = (*get_args(Status), "orphaned")
"""What ``list --status`` accepts: the saga statuses, and ``orphaned`` (its process died)."""

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
Flag = Callable[[argparse.ArgumentParser], None]


class Handler:
    """A verb's handler, ``module:function`` under ``sagagraph.cli``, imported when it runs."""

    def __init__(self, target: str) -> None:
        self.module, _, self.function = target.partition(":")

    def __call__(self, args: argparse.Namespace) -> int:
        module = importlib.import_module(f"sagagraph.cli.{self.module}")
        code: int = getattr(module, self.function)(args)
        return code

    def __repr__(self) -> str:
        return f"Handler('{self.module}:{self.function}')"


def version() -> str:
    """The installed package's version, else the source tree's."""
    from importlib import metadata  # about 25 ms: only for --version

    try:
        return metadata.version("sagagraph")
    except metadata.PackageNotFoundError:
        from sagagraph import __version__

        return __version__


class VersionAction(argparse._VersionAction):
    """``--version``, looked up when asked for, not each time the parser is built."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        self.version = f"sagagraph {version()}"
        super().__call__(parser, *args, **kwargs)


def verb(sub: Subparsers, name: str, what: str, handler: str) -> argparse.ArgumentParser:
    """A sub-command that runs ``handler`` and accepts ``--debug`` after the verb too."""
    p = sub.add_parser(name, help=what)
    debug_flag(p)  # hidden from help and usage: its place among the flags shows nowhere
    p.set_defaults(func=Handler(handler))
    return p


def flags(p: argparse.ArgumentParser, *adders: Flag) -> None:
    """The shared flags, in the order given (the order ``--help`` lists them in)."""
    for add in adders:
        add(p)


def add_run(sub: Subparsers) -> None:
    run = verb(sub, "run", "run a paper through validator, reviewer and summarizer", "run:cmd_run")
    run.add_argument("paper", metavar="PAPER", help="paper to process: .pdf, .txt or .md")
    run.add_argument("--saga-id", metavar="ID", help="id for this saga (default: a new one)")
    router_flag(run)
    run.add_argument(
        "--mode",
        choices=("orchestration", "choreography", "blackboard"),
        default="orchestration",
        help="a LangGraph graph coordinates the agents (default), events on a bus do, or a "
        "controller reading a shared board does",
    )
    fail_at_flag(run, f"make STEP fail, to watch the compensation ({', '.join(PAPER_STEPS)})")
    password_flag(run)
    run.add_argument(
        "--parallel",
        action="store_true",
        help="run the reviewer and the summarizer side by side (deterministic orchestration)",
    )
    flags(run, step_timeout_flag, router_flags, agents_flag, db_flag, engine_flags, bus_flag)
    flags(run, bus_key_flags, insecure_bus_flag)
    json_flag(run, "print the saga's view as one JSON object on stdout (progress: stderr)")


def add_lifecycle(sub: Subparsers) -> None:
    status = verb(
        sub, "status", "show one saga (orchestrated or choreographed)", "lifecycle:cmd_status"
    )
    flags(status, saga_id_arg, db_flag, bus_flag, json_flag)

    lst = verb(
        sub, "list", "list the sagas of the checkpointer and the event log", "listing:cmd_list"
    )
    lst.add_argument(
        "--status",
        choices=STATUSES,
        metavar="STATUS",
        help=f"only sagas with this status: {', '.join(STATUSES)}",
    )
    flags(lst, db_flag, bus_flag)
    json_flag(lst, "print a JSON array of sagas")

    resume = verb(
        sub, "resume", "continue an unfinished saga where it stopped", "lifecycle:cmd_resume"
    )
    flags(resume, saga_id_arg, password_flag, step_timeout_flag, agents_flag, db_flag, bus_flag)
    flags(resume, bus_key_flags, insecure_bus_flag)
    flags(resume, engine_flags, json_flag)

    recover = verb(
        sub, "recover", "finish every saga left running or compensating", "lifecycle:cmd_recover"
    )
    recover.add_argument("--compensate", action="store_true", help="roll them back instead")
    flags(recover, password_flag, step_timeout_flag, agents_flag, db_flag, bus_flag)
    flags(recover, bus_key_flags, insecure_bus_flag)
    engine_flags(recover)
    json_flag(recover, "print one JSON object per saga, one a line")

    resolve = verb(sub, "resolve", "answer a saga waiting for an operator", "lifecycle:cmd_resolve")
    saga_id_arg(resolve)
    how = resolve.add_mutually_exclusive_group(required=True)
    how.add_argument("--retry", action="store_true", help="try the failed compensation again")
    how.add_argument("--skip", action="store_true", help="take responsibility and go on")
    resolve.add_argument("--note", metavar="TEXT", help="who decided, and why (needed by --skip)")
    db_flag(resolve)
    resolve.add_argument(
        "--outputs", metavar="DIR", help="outputs folder (default: the one the saga recorded)"
    )
    json_flag(resolve)

    add_approvals(sub)


def add_approvals(sub: Subparsers) -> None:
    """``approve`` and ``reject``: answer tool calls waiting for an operator's approval."""
    approve = verb(
        sub, "approve", "let tool calls waiting for approval run", "approvals:cmd_approve"
    )
    reject = verb(sub, "reject", "refuse tool calls waiting for approval", "approvals:cmd_reject")
    approve.add_argument(
        "--edit",
        metavar="JSON",
        help="run the call with these arguments (a JSON object, over the model's)",
    )
    reject.add_argument("--why", metavar="TEXT", required=True, help="who decided, and why")
    for p in (approve, reject):
        saga_id_arg(p)
        p.add_argument(
            "--call", metavar="CALL_ID", help="only this call (status lists them; default: all)"
        )
        p.add_argument(
            "--app",
            metavar="MODULE:FUNCTION",
            help="the saga's graph or definition, for a saga other than the paper's "
            "(default: $SAGAGRAPH_APP)",
        )
        flags(p, db_flag, json_flag)


def add_explore(sub: Subparsers) -> None:
    graph = verb(sub, "graph", "print the saga graph as Mermaid", "explore:cmd_graph")
    router_flag(graph, "the graph with fixed edges (default) or with the LLM supervisor")
    graph.add_argument("--parallel", action="store_true", help="the parallel paper saga")

    compare = verb(
        sub, "compare", "run papers under both routers and compare", "explore:cmd_compare"
    )
    compare.add_argument("papers", nargs="+", metavar="PAPER", help="papers: .pdf, .txt or .md")
    fail_at_flag(compare, "make STEP fail in every run")
    compare.add_argument(
        "--modes",
        metavar="MODE,...",
        help="compare coordination styles instead of routers: "
        "orchestration,choreography,blackboard",
    )
    password_flag(compare, "encrypted PDFs")
    flags(compare, router_flags, db_flag, bus_flag, engine_flags, json_flag)


def add_choreography(sub: Subparsers) -> None:
    agent = verb(sub, "agent", "run one choreography agent as its own process", "events:cmd_agent")
    agent.add_argument("name", choices=PAPER_STEPS, metavar="NAME", help=", ".join(PAPER_STEPS))
    flags(agent, bus_flag, bus_key_flags, insecure_bus_flag, engine_flags)

    events = verb(sub, "events", "print a choreographed saga's event log", "events:cmd_events")
    flags(events, saga_id_arg, bus_flag, bus_key_flags)
    json_flag(events, "print the events as a JSON array")


def add_workers(sub: Subparsers) -> None:
    """``submit`` papers to the work queue, run a ``worker``, see ``workers``."""
    submit = verb(
        sub, "submit", "put papers on the work queue, one saga each", "workers:cmd_submit"
    )
    submit.add_argument("papers", nargs="+", metavar="PAPER", help=".pdf, .txt or .md")
    submit.add_argument(
        "--mode",
        choices=("orchestration",),
        default="orchestration",
        help="how workers coordinate the agents (orchestration only, for now)",
    )
    router_flag(submit)
    fail_at_flag(submit, "make STEP fail in every saga")
    submit.add_argument("--parallel", action="store_true", help="reviewer and summarizer at once")
    flags(submit, queue_flag, db_flag, engine_flags)
    json_flag(submit, "print the submitted saga ids as JSON")

    worker = verb(sub, "worker", "run submitted sagas until SIGTERM", "workers:cmd_worker")
    worker.add_argument(
        "--concurrency", type=int, default=1, metavar="N", help="sagas at once (default 1)"
    )
    flags(worker, queue_flag, db_flag, engine_flags)

    workers = verb(
        sub, "workers", "queued, running and finished sagas of the queue", "workers:cmd_workers"
    )
    flags(workers, queue_flag, db_flag, json_flag)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sagagraph",
        description="Run LLM agents as one all-or-nothing transaction (Saga pattern, LangGraph).",
        epilog="exit codes: 0 completed, 3 rolled back after a failure, 5 halted by a step "
        "(invalid paper), 4 needs an operator, 2 bad usage or unreadable input, "
        "1 unexpected error, 130 interrupted",
    )
    parser.add_argument("--version", action=VersionAction)
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_run(sub)
    add_lifecycle(sub)
    add_explore(sub)
    add_choreography(sub)
    add_workers(sub)
    return parser
