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
    MODES,
    NO_REASON_GIVEN,
    ORCHESTRATION,
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
    pipeline_flag,
    queue_flag,
    router_flag,
    router_flags,
    saga_id_arg,
    step_timeout_flag,
)
from sagagraph.saga.view import Status

STATUSES = (*get_args(Status), "orphaned", "dead_letter", "dead_lettered")
"""What ``list --status`` accepts: the saga statuses, ``orphaned`` (its process died) and
``dead_letter`` or ``dead_lettered`` (the work queue gave up on it)."""

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
Flag = Callable[[argparse.ArgumentParser], None]


class Handler:
    """A verb's handler, ``module:function`` under ``sagagraph.cli`` (or a full module name
    starting ``sagagraph.``: the console, an entry point above the CLI), imported when it runs."""

    def __init__(self, target: str) -> None:
        self.module, _, self.function = target.partition(":")

    @property
    def module_name(self) -> str:
        """The full name of the handler's module."""
        full = self.module.startswith("sagagraph.")
        return self.module if full else f"sagagraph.cli.{self.module}"

    def __call__(self, args: argparse.Namespace) -> int:
        module = importlib.import_module(self.module_name)
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


def positive_int(text: str) -> int:
    """An integer of at least 1 (argparse reports anything else as a usage error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


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
        choices=MODES,
        default=ORCHESTRATION,
        help="a LangGraph graph coordinates the agents (default), events on a bus do, or a "
        "controller reading a shared board does",
    )
    fail_at_flag(run, f"make STEP fail, to watch the compensation ({', '.join(PAPER_STEPS)})")
    pipeline_flag(run)
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
        sub,
        "list",
        "list the sagas of the checkpointer and the event log, newest first",
        "listing:cmd_list",
    )
    lst.add_argument(
        "--status",
        choices=STATUSES,
        metavar="STATUS",
        help=f"only sagas with this status: {', '.join(STATUSES)}",
    )
    lst.add_argument(
        "--since",
        metavar="WHEN",
        help="only sagas updated since WHEN: a duration (30m, 2h, 7d) or an ISO date or time",
    )
    lst.add_argument("--limit", type=positive_int, metavar="N", help="at most N sagas (the newest)")
    flags(lst, db_flag, bus_flag)
    json_flag(lst, "print a JSON array of sagas, newest first")

    resume = verb(
        sub, "resume", "continue an unfinished saga where it stopped", "lifecycle:cmd_resume"
    )
    flags(resume, saga_id_arg, password_flag, step_timeout_flag, agents_flag, db_flag, bus_flag)
    flags(resume, bus_key_flags, insecure_bus_flag)
    flags(resume, engine_flags, json_flag)
    app_flag(resume, ACTING_APP)

    recover = verb(
        sub, "recover", "finish every saga left running or compensating", "lifecycle:cmd_recover"
    )
    recover.add_argument("--compensate", action="store_true", help="roll them back instead")
    recover.add_argument(
        "--watch",
        action="store_true",
        help="keep taking over orphaned sagas (their process died) until SIGTERM",
    )
    recover.add_argument(
        "--every", type=float, default=10.0, metavar="S", help="with --watch: look every S s"
    )
    recover.add_argument(
        "--app",
        action="append",
        metavar="MODULE:FACTORY",
        help="a saga factory besides the paper saga's, whose sagas it recovers (repeat; "
        "default: $SAGAGRAPH_APP)",
    )
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
    app_flag(resolve, ACTING_APP)
    resolve.add_argument(
        "--outputs", metavar="DIR", help="outputs folder (default: the one the saga recorded)"
    )
    json_flag(resolve)

    rollback = verb(
        sub,
        "rollback",
        "compensate one unfinished saga instead of finishing it",
        "lifecycle:cmd_rollback",
    )
    saga_id_arg(rollback)
    rollback.add_argument(
        "--reason", metavar="TEXT", help="why (recorded in the saga's events and its reason)"
    )
    rollback.add_argument(
        "--by", metavar="NAME", help="who asks (recorded in its events; default: your login)"
    )
    db_flag(rollback)
    app_flag(rollback, ACTING_APP)
    rollback.add_argument(
        "--outputs", metavar="DIR", help="outputs folder (default: the one the saga recorded)"
    )
    json_flag(rollback)

    prune = verb(
        sub,
        "prune",
        "retention: finished sagas keep their last checkpoint; those finished before WHEN go",
        "prune:cmd_prune",
    )
    prune.add_argument(
        "--finished-before",
        metavar="WHEN",
        help="delete the sagas that finished before WHEN: an age (30d, 12h) or an ISO date",
    )
    prune.add_argument(
        "--keep-all",
        action="store_true",
        help="leave every checkpoint of the other finished sagas (only delete old ones)",
    )
    prune.add_argument("--dry-run", action="store_true", help="count what would go; change nothing")
    db_flag(prune)
    json_flag(prune, "print what was pruned as one JSON object")

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
    graph.add_argument(
        "--app",
        metavar="MODULE:FUNCTION",
        help="draw this saga definition instead of the paper's, each step marked by the side "
        "of the pivot it stands on",
    )
    pipeline_flag(graph)

    compare = verb(
        sub,
        "compare",
        "run papers under both routers and compare (needs a chat model for the LLM router)",
        "explore:cmd_compare",
    )
    compare.description = (
        "Run each paper under the deterministic router and the LLM router, side by side. The "
        "LLM router asks a chat model: set OPENAI_API_KEY (any value for a local server) and "
        "OPENAI_BASE_URL for an OpenAI-compatible one (Ollama, vLLM, llama.cpp). With --modes, "
        "the coordination styles are compared instead, with deterministic routing: no model "
        "is needed."
    )
    compare.add_argument("papers", nargs="+", metavar="PAPER", help="papers: .pdf, .txt or .md")
    fail_at_flag(compare, "make STEP fail in every run")
    pipeline_flag(compare)
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

    events = verb(
        sub,
        "events",
        "print a saga's events: a choreographed saga's messages on the bus, an orchestrated "
        "saga's recorded events",
        "events:cmd_events",
    )
    flags(events, saga_id_arg, bus_flag, bus_key_flags, db_flag)
    json_flag(events, "print the events as a JSON array")

    delete = verb(
        sub,
        "delete-namespace",
        "remove a RabbitMQ bus namespace's queues and exchanges (the ?namespace= of --bus)",
        "namespace:cmd_delete_namespace",
    )
    bus_flag(delete)
    delete.add_argument(
        "--yes", action="store_true", help="really delete them, with any events they hold"
    )


def add_workers(sub: Subparsers) -> None:
    """``submit`` sagas to the work queue, run a ``worker``, see ``workers``, ``cancel`` and
    ``requeue`` one."""
    submit = verb(sub, "submit", "put sagas on the work queue, one a paper", "workers:cmd_submit")
    submit.add_argument("papers", nargs="*", metavar="PAPER", help=".pdf, .txt or .md")
    submit.add_argument(
        "--input",
        action="append",
        metavar="JSON",
        help="the input of one saga of --app, as a JSON object (repeat for more)",
    )
    submit.add_argument("--saga-id", metavar="ID", help="the saga's id (one saga only)")
    app_flag(submit, "the saga factory to run (default: the paper saga)")
    submit.add_argument(
        "--priority", type=int, default=0, metavar="N", help="0 (default) to 9: higher first"
    )
    when = submit.add_mutually_exclusive_group()
    when.add_argument("--countdown", type=float, metavar="S", help="start no sooner than S s")
    when.add_argument("--eta", metavar="ISO", help="start no sooner than this time (ISO 8601)")
    submit.add_argument(
        "--mode",
        choices=("orchestration",),
        default="orchestration",
        help="how workers coordinate the agents (orchestration only, for now)",
    )
    router_flag(submit)
    fail_at_flag(submit, "make STEP fail in every saga")
    submit.add_argument("--parallel", action="store_true", help="reviewer and summarizer at once")
    pipeline_flag(submit)
    flags(submit, queue_flag, db_flag, engine_flags)
    json_flag(submit, "print the submitted saga ids as JSON")

    worker = verb(sub, "worker", "run submitted sagas until SIGTERM", "workers:cmd_worker")
    worker.add_argument(
        "--concurrency", type=int, default=1, metavar="N", help="sagas at once (default 1)"
    )
    worker.add_argument(
        "--app",
        action="append",
        metavar="MODULE:FACTORY",
        help="a saga factory this worker runs (repeat for more; default: the paper saga)",
    )
    worker.add_argument(
        "--pool",
        choices=("threads", "prefork", "solo"),
        default="threads",
        help="Celery's pool: threads (default), prefork (needed by --time-limit) or solo",
    )
    worker.add_argument("--rate-limit", metavar="RATE", help="sagas started per worker: 10/m")
    worker.add_argument(
        "--time-limit", type=float, metavar="S", help="a saga's process is killed after S s"
    )
    # No engine flags: each saga runs with the settings recorded when it was submitted.
    flags(worker, queue_flag, db_flag)

    workers = verb(
        sub, "workers", "queued, running and finished sagas of the queue", "workers:cmd_workers"
    )
    flags(workers, queue_flag, db_flag, json_flag)

    cancel = verb(sub, "cancel", "cancel a queued or running saga", "workers:cmd_cancel")
    saga_id_arg(cancel)
    cancel.add_argument(
        "--by", metavar="WHO", help="who cancels it (recorded in its events; default: your login)"
    )
    cancel.add_argument("--reason", metavar="TEXT", help=f"why (default: {NO_REASON_GIVEN!r})")
    flags(cancel, queue_flag, db_flag, json_flag)

    requeue = verb(
        sub, "requeue", "put a dead-lettered saga back on the queue", "workers:cmd_requeue"
    )
    saga_id_arg(requeue)
    requeue.add_argument("--priority", type=int, default=0, metavar="N", help="0 to 9")
    requeue.add_argument("--note", metavar="TEXT", help="who requeued it, and why")
    flags(requeue, queue_flag, db_flag, json_flag)


ACTING_APP = (
    "the factory (MODULE:FACTORY) of the saga's definition, for a saga other than the "
    "paper's (default: $SAGAGRAPH_APP)"
)


def app_flag(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--app", metavar="MODULE:FACTORY", help=what)


def add_console(sub: Subparsers) -> None:
    """``console``: the web view of sagas, served on this machine by default."""
    console = verb(
        sub,
        "console",
        "serve the web console: sagas, timelines, the operator's queue, actions",
        "console:cmd_console",
    )
    flags(console, db_flag, bus_flag, queue_flag)
    console.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only; any other needs "
        "--token-file)",
    )
    console.add_argument(
        "--port", type=int, default=8765, metavar="N", help="port to listen on (default 8765)"
    )
    console.add_argument(
        "--token-file",
        metavar="PATH",
        help="file whose first line is the token actions need (Bearer header or form field)",
    )


EXIT_CODES = (
    "exit codes: 0 completed, 3 rolled back after a failure, 5 halted on purpose (invalid "
    "paper, or cancelled before any step ran), 4 needs an operator, 75 not finished yet "
    "(status of a queued or running saga, "
    "recover leaving one unfinished: ask again later), 2 bad usage or unreadable input, "
    "1 unexpected error, 130 interrupted"
)
"""The top-level ``--help`` epilog: every exit code of :mod:`sagagraph.cli.output`."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sagagraph",
        description="Run LLM agents as one all-or-nothing transaction (Saga pattern, LangGraph).",
        epilog=EXIT_CODES,
    )
    parser.add_argument("--version", action=VersionAction)
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_run(sub)
    add_lifecycle(sub)
    add_explore(sub)
    add_choreography(sub)
    add_workers(sub)
    add_console(sub)
    return parser
