"""The ``sagagraph`` argument parser: one sub-command per verb."""

from __future__ import annotations

import argparse

from sagagraph.cli.apps import PAPER_STEPS
from sagagraph.cli.events import cmd_agent, cmd_events
from sagagraph.cli.explore import cmd_compare, cmd_graph
from sagagraph.cli.lifecycle import cmd_list, cmd_recover, cmd_resolve, cmd_resume, cmd_status
from sagagraph.cli.run import cmd_run
from sagagraph.cli.workers import add_worker_commands


def router_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--router-attempts",
        type=int,
        metavar="N",
        help="LLM router: proposals asked for per decision, first included (default 2)",
    )
    p.add_argument(
        "--router-fallback",
        choices=("deterministic", "abort"),
        help="LLM router: after N rejected proposals, take the deterministic step (default) "
        "or compensate and stop",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sagagraph",
        description="Run LLM agents as one all-or-nothing transaction (Saga pattern, LangGraph).",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(p: argparse.ArgumentParser, *, json_flag: bool = True) -> None:
        p.add_argument(
            "--db", help="checkpointer URL (default: $SAGAGRAPH_DB or sqlite:///sagagraph.sqlite)"
        )
        p.add_argument("--outputs", help="outputs folder (default: $SAGAGRAPH_OUTPUTS or outputs)")
        p.add_argument(
            "--llm",
            choices=("offline", "openai"),
            help="engine (default: $SAGAGRAPH_LLM; openai if OPENAI_API_KEY is set; else offline)",
        )
        p.add_argument("--model", help="chat model name (default: $SAGAGRAPH_MODEL)")
        p.add_argument(
            "--bus",
            help="event bus URL for choreography (default: $SAGAGRAPH_AMQP_URL or sqlite:///sagagraph-events.sqlite)",
        )
        if json_flag:
            p.add_argument("--json", action="store_true", help="print one JSON object")
        p.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
        )

    run = sub.add_parser("run", help="run a paper through validator, reviewer and summarizer")
    run.add_argument("paper", help="paper to process: .pdf, .txt or .md")
    run.add_argument("--saga-id", help="id for this saga (default: a new one)")
    run.add_argument("--router", choices=("deterministic", "llm"), default="deterministic")
    run.add_argument("--mode", choices=("orchestration", "choreography"), default="orchestration")
    run.add_argument("--fail-at", metavar="STEP", help="make STEP fail (demo the compensation)")
    run.add_argument("--password", help="password of an encrypted PDF")
    run.add_argument(
        "--parallel",
        action="store_true",
        help="run the reviewer and the summarizer side by side (deterministic orchestration)",
    )
    router_flags(run)
    common(run)
    run.set_defaults(func=cmd_run)

    status = sub.add_parser("status", help="show one saga")
    status.add_argument("saga_id")
    common(status)
    status.set_defaults(func=cmd_status)

    lst = sub.add_parser("list", help="list sagas")
    lst.add_argument("--status", help="only sagas with this status (e.g. compensation_failed)")
    common(lst)
    lst.set_defaults(func=cmd_list)

    resume = sub.add_parser("resume", help="continue an unfinished saga where it stopped")
    resume.add_argument("saga_id")
    resume.add_argument("--password", help="password of an encrypted PDF")
    common(resume)
    resume.set_defaults(func=cmd_resume)

    recover = sub.add_parser("recover", help="finish every saga left running or compensating")
    recover.add_argument("--compensate", action="store_true", help="roll them back instead")
    recover.add_argument("--password", help="password of an encrypted PDF")
    common(recover)
    recover.set_defaults(func=cmd_recover)

    resolve = sub.add_parser("resolve", help="answer a saga waiting for an operator")
    resolve.add_argument("saga_id")
    how = resolve.add_mutually_exclusive_group(required=True)
    how.add_argument("--retry", action="store_true", help="try the failed compensation again")
    how.add_argument("--skip", action="store_true", help="take responsibility and go on")
    resolve.add_argument("--note", help="why (required with --skip)")
    common(resolve)
    resolve.set_defaults(func=cmd_resolve)

    graph = sub.add_parser("graph", help="print the saga graph as Mermaid")
    graph.add_argument("--router", choices=("deterministic", "llm"), default="deterministic")
    graph.add_argument("--parallel", action="store_true", help="the parallel paper saga")
    graph.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    graph.set_defaults(func=cmd_graph)

    compare = sub.add_parser("compare", help="run papers under both routers and compare")
    compare.add_argument("papers", nargs="+", metavar="PAPER")
    compare.add_argument("--fail-at", metavar="STEP", help="make STEP fail in every run")
    compare.add_argument("--password", help="password of encrypted PDFs")
    router_flags(compare)
    common(compare)
    compare.set_defaults(func=cmd_compare)

    agent = sub.add_parser("agent", help="run one choreography agent as its own process")
    agent.add_argument("name", choices=PAPER_STEPS)
    common(agent, json_flag=False)
    agent.set_defaults(func=cmd_agent)

    events = sub.add_parser("events", help="print a choreographed saga's event log")
    events.add_argument("saga_id")
    common(events)
    events.set_defaults(func=cmd_events)

    add_worker_commands(sub, common)
    return parser
