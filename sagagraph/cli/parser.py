"""The ``sagagraph`` argument parser: one sub-command per verb, each with only the flags it uses."""

from __future__ import annotations

import argparse
from importlib import metadata

from sagagraph.cli.apps import PAPER_STEPS
from sagagraph.cli.events import cmd_agent, cmd_events
from sagagraph.cli.explore import cmd_compare, cmd_graph
from sagagraph.cli.flags import (
    agents_flag,
    bus_flag,
    db_flag,
    debug_flag,
    engine_flags,
    json_flag,
    password_flag,
    router_flags,
    saga_id_arg,
    step_timeout_flag,
)
from sagagraph.cli.lifecycle import cmd_list, cmd_recover, cmd_resolve, cmd_resume, cmd_status
from sagagraph.cli.run import cmd_run
from sagagraph.cli.workers import add_worker_commands

STATUSES = (
    "queued",
    "running",
    "compensating",
    "completed",
    "rolled_back",
    "compensation_failed",
    "resolved_by_operator",
    "orphaned",
)
"""What ``list --status`` accepts: the saga statuses, and ``orphaned`` (its process died)."""


def version() -> str:
    """The installed package's version, else the source tree's."""
    try:
        return metadata.version("sagagraph")
    except metadata.PackageNotFoundError:
        from sagagraph import __version__

        return __version__


def add_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = sub.add_parser("run", help="run a paper through validator, reviewer and summarizer")
    run.add_argument("paper", metavar="PAPER", help="paper to process: .pdf, .txt or .md")
    run.add_argument("--saga-id", metavar="ID", help="id for this saga (default: a new one)")
    run.add_argument(
        "--router",
        choices=("deterministic", "llm"),
        default="deterministic",
        help="who picks each next step: fixed edges (default) or a chat model behind a guard",
    )
    run.add_argument(
        "--mode",
        choices=("orchestration", "choreography", "blackboard"),
        default="orchestration",
        help="a LangGraph graph coordinates the agents (default), events on a bus do, or a "
        "controller reading a shared board does",
    )
    run.add_argument(
        "--fail-at",
        metavar="STEP",
        choices=PAPER_STEPS,
        help=f"make STEP fail, to watch the compensation ({', '.join(PAPER_STEPS)})",
    )
    password_flag(run)
    run.add_argument(
        "--parallel",
        action="store_true",
        help="run the reviewer and the summarizer side by side (deterministic orchestration)",
    )
    step_timeout_flag(run)
    router_flags(run)
    agents_flag(run)
    db_flag(run)
    engine_flags(run)
    bus_flag(run)
    json_flag(run, "print the saga's view as one JSON object on stdout (progress: stderr)")
    debug_flag(run)
    run.set_defaults(func=cmd_run)


def add_lifecycle(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    status = sub.add_parser("status", help="show one saga (orchestrated or choreographed)")
    saga_id_arg(status)
    db_flag(status)
    bus_flag(status)
    json_flag(status)
    debug_flag(status)
    status.set_defaults(func=cmd_status)

    lst = sub.add_parser("list", help="list the sagas of the checkpointer and the event log")
    lst.add_argument(
        "--status",
        choices=STATUSES,
        metavar="STATUS",
        help=f"only sagas with this status: {', '.join(STATUSES)}",
    )
    db_flag(lst)
    bus_flag(lst)
    json_flag(lst, "print a JSON array of sagas")
    debug_flag(lst)
    lst.set_defaults(func=cmd_list)

    resume = sub.add_parser("resume", help="continue an unfinished saga where it stopped")
    saga_id_arg(resume)
    password_flag(resume)
    step_timeout_flag(resume)
    agents_flag(resume)
    db_flag(resume)
    bus_flag(resume)
    engine_flags(resume)
    json_flag(resume)
    debug_flag(resume)
    resume.set_defaults(func=cmd_resume)

    recover = sub.add_parser("recover", help="finish every saga left running or compensating")
    recover.add_argument("--compensate", action="store_true", help="roll them back instead")
    password_flag(recover)
    step_timeout_flag(recover)
    agents_flag(recover)
    db_flag(recover)
    bus_flag(recover)
    engine_flags(recover)
    json_flag(recover, "print one JSON object per saga, one a line")
    debug_flag(recover)
    recover.set_defaults(func=cmd_recover)

    resolve = sub.add_parser("resolve", help="answer a saga waiting for an operator")
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
    debug_flag(resolve)
    resolve.set_defaults(func=cmd_resolve)


def add_explore(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    graph = sub.add_parser("graph", help="print the saga graph as Mermaid")
    graph.add_argument(
        "--router",
        choices=("deterministic", "llm"),
        default="deterministic",
        help="the graph with fixed edges (default) or with the LLM supervisor",
    )
    graph.add_argument("--parallel", action="store_true", help="the parallel paper saga")
    debug_flag(graph)
    graph.set_defaults(func=cmd_graph)

    compare = sub.add_parser("compare", help="run papers under both routers and compare")
    compare.add_argument("papers", nargs="+", metavar="PAPER", help="papers: .pdf, .txt or .md")
    compare.add_argument(
        "--fail-at", metavar="STEP", choices=PAPER_STEPS, help="make STEP fail in every run"
    )
    compare.add_argument(
        "--modes",
        metavar="MODE,...",
        help="compare coordination styles instead of routers: "
        "orchestration,choreography,blackboard",
    )
    password_flag(compare, "encrypted PDFs")
    router_flags(compare)
    db_flag(compare)
    bus_flag(compare)
    engine_flags(compare)
    json_flag(compare)
    debug_flag(compare)
    compare.set_defaults(func=cmd_compare)


def add_choreography(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    agent = sub.add_parser("agent", help="run one choreography agent as its own process")
    agent.add_argument("name", choices=PAPER_STEPS, metavar="NAME", help=", ".join(PAPER_STEPS))
    bus_flag(agent)
    engine_flags(agent)
    debug_flag(agent)
    agent.set_defaults(func=cmd_agent)

    events = sub.add_parser("events", help="print a choreographed saga's event log")
    saga_id_arg(events)
    bus_flag(events)
    json_flag(events, "print the events as a JSON array")
    debug_flag(events)
    events.set_defaults(func=cmd_events)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sagagraph",
        description="Run LLM agents as one all-or-nothing transaction (Saga pattern, LangGraph).",
        epilog="exit codes: 0 completed, 3 rolled back after a failure, 5 halted by a step "
        "(invalid paper), 4 needs an operator, 2 bad usage or unreadable input, "
        "1 unexpected error, 130 interrupted",
    )
    parser.add_argument("--version", action="version", version=f"sagagraph {version()}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_run(sub)
    add_lifecycle(sub)
    add_explore(sub)
    add_choreography(sub)
    add_worker_commands(sub)
    return parser
