"""The ``sagagraph`` command.

Exit codes: 0 completed, 3 rolled back, 4 needs an operator, 2 bad usage or unreadable input,
1 unexpected error. Errors are one line on stderr, never a traceback, unless ``--debug``.
Progress goes to stderr, so ``--json`` output on stdout stays clean.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from sagagraph.agents.view import Event, describe_error
from sagagraph.config import Settings, load_alert_hook
from sagagraph.errors import ConfigurationError, InputError, SagaGraphError

EXIT_COMPLETED = 0
EXIT_UNEXPECTED = 1
EXIT_USAGE = 2
EXIT_ROLLED_BACK = 3
EXIT_NEEDS_OPERATOR = 4

PAPER_STEPS = ("validator", "reviewer", "summarizer")

_STATUS_EXIT = {
    "completed": EXIT_COMPLETED,
    "rolled_back": EXIT_ROLLED_BACK,
    "resolved_by_operator": EXIT_ROLLED_BACK,
    "compensation_failed": EXIT_NEEDS_OPERATOR,
}


def exit_code_for(view: dict[str, Any]) -> int:
    """The exit code a saga's final view maps to."""
    if view.get("waiting_for_operator"):
        return EXIT_NEEDS_OPERATOR
    return _STATUS_EXIT.get(str(view.get("status")), EXIT_UNEXPECTED)


# --- output ---------------------------------------------------------------------------------

_MARK = {"ok": "+", "halted": "!", "error": "x", "retry": "~", "timeout": "x", "rejected": "?"}


def format_event(event: Event) -> str:
    """One progress line: ``  + validator    execute ok      outputs/s1/validation.txt``."""
    mark = _MARK.get(event["outcome"], "-")
    attempt = f" (attempt {event['attempt']})" if event["attempt"] > 1 else ""
    detail = f"  {event['detail']}" if event["detail"] else ""
    action = f"{event['action']} {event['outcome']}{attempt}"
    return f"  {mark} {event['step']:<12} {action:<22}{detail}"


def print_view(view: dict[str, Any], out: TextIO) -> None:
    """A human summary of a saga's view."""
    print(f"saga {view['saga_id']}: {view['status']}", file=out)
    if view.get("reason"):
        print(f"  reason: {view['reason']}", file=out)
    if view.get("completed"):
        print(f"  completed: {', '.join(view['completed'])}", file=out)
    if view.get("compensated"):
        print(f"  compensated: {', '.join(view['compensated'])}", file=out)
    for step, path in (view.get("outputs") or {}).items():
        print(f"  output {step}: {path}", file=out)
    for skipped in view.get("skipped") or []:
        left = skipped.get("left_behind") or "nothing recorded"
        print(
            f"  skipped by an operator: {skipped['step']} ({skipped['note']}); left behind: {left}",
            file=out,
        )
    usage = view.get("usage") or {}
    if usage.get("input_tokens") or usage.get("output_tokens"):
        print(f"  tokens: {usage['input_tokens']} in, {usage['output_tokens']} out", file=out)
    if view.get("waiting_for_operator"):
        failure = view.get("compensation_failure") or {}
        print(
            f"  needs an operator: compensation of {failure.get('step')} failed "
            f"({failure.get('error')}); run: sagagraph resolve {view['saga_id']} --retry "
            "| --skip --note TEXT",
            file=out,
        )


def emit(view: dict[str, Any], as_json: bool) -> int:
    if as_json:
        json.dump(view, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print_view(view, sys.stdout)
    return exit_code_for(view)


# --- building the paper saga ----------------------------------------------------------------


def settings_from(args: argparse.Namespace) -> Settings:
    return Settings.resolve(
        db=getattr(args, "db", None),
        outputs=getattr(args, "outputs", None),
        llm=getattr(args, "llm", None),
        model=getattr(args, "model", None),
        bus=getattr(args, "bus", None),
        parallel=getattr(args, "parallel", None),
    )


def paper_definition(settings: Settings, *, password: str | None = None, loader: Any = None) -> Any:
    from sagagraph.agents.models import make_engine
    from sagagraph.agents.paper_loader import PaperLoader
    from sagagraph.agents.paper_saga import paper_saga_definition

    engine = make_engine(settings.llm, settings.model)
    return paper_saga_definition(
        engine=engine,
        outputs_dir=settings.outputs,
        loader=loader if loader is not None else PaperLoader(password),
        parallel=settings.parallel,
    )


def router_options(args: argparse.Namespace | None) -> Any:
    """LLM-router options: flags first, then ``SAGAGRAPH_STRUCTURED_OUTPUT``."""
    from sagagraph.graph.llm_router import RouterOptions

    overrides: dict[str, Any] = {}
    if args is not None and getattr(args, "router_attempts", None):
        overrides["max_attempts"] = args.router_attempts
    if args is not None and getattr(args, "router_fallback", None):
        overrides["fallback"] = args.router_fallback
    return RouterOptions.from_env(**overrides)


def paper_graph(
    settings: Settings,
    router: str,
    *,
    password: str | None = None,
    loader: Any = None,
    args: argparse.Namespace | None = None,
) -> Any:
    from sagagraph.graph.builder import build_saga_graph

    definition = paper_definition(settings, password=password, loader=loader)
    if router == "llm":
        from sagagraph.agents.models import make_chat_model

        try:
            model = make_chat_model(settings.model)
        except ConfigurationError as error:
            raise ConfigurationError(
                f"--router llm needs a chat model: {error} (or use --router deterministic)"
            ) from None
        return build_saga_graph(
            definition,
            router="llm",
            router_model=model,
            router_options=router_options(args),
            on_escalation=load_alert_hook(),
        )
    return build_saga_graph(definition, on_escalation=load_alert_hook())


@contextmanager
def paper_app(
    settings: Settings,
    router: str,
    *,
    password: str | None = None,
    loader: Any = None,
    args: argparse.Namespace | None = None,
) -> Iterator[Any]:
    """The compiled paper saga on the configured checkpointer."""
    from sagagraph.checkpoints.factory import open_checkpointer

    graph = paper_graph(settings, router, password=password, loader=loader, args=args)
    with open_checkpointer(settings.db) as checkpointer:
        yield graph.compile(checkpointer=checkpointer)


def progress_printer(enabled: bool) -> Callable[[Event], None]:
    def show(event: Event) -> None:
        if enabled:
            print(format_event(event), file=sys.stderr, flush=True)

    return show


# --- commands -------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    from sagagraph.agents.ids import new_saga_id, validate_saga_id
    from sagagraph.agents.paper import check_paper
    from sagagraph.agents.paper_loader import PaperLoader
    from sagagraph.graph.runner import run_saga

    settings = settings_from(args)
    if args.fail_at and args.fail_at not in PAPER_STEPS:
        raise ConfigurationError(
            f"--fail-at: unknown step {args.fail_at!r} (steps: {', '.join(PAPER_STEPS)})"
        )
    saga_id = validate_saga_id(args.saga_id or new_saga_id())
    # Unreadable input ends here, with exit 2, before any saga or output exists. The loader
    # caches what it parsed, so the saga's steps do not read the PDF again.
    loader = PaperLoader(args.password)
    check_paper(args.paper, loader=loader)
    # Absolute, so that resume, recover and choreography agents find it from any folder.
    args.paper = str(Path(args.paper).resolve())
    if args.mode == "choreography":
        return run_choreography(args, settings, saga_id, loader)
    show = progress_printer(not args.json)
    with paper_app(settings, args.router, loader=loader, args=args) as app:
        if saga_status_or_none(app, saga_id) is not None:
            raise InputError(f"saga {saga_id!r}: already exists; use: sagagraph resume {saga_id}")
        if not args.json:
            print(f"saga {saga_id}: {args.paper} ({args.router} routing)", file=sys.stderr)
        saga_input = {
            "paper": str(args.paper),
            "settings": settings.recorded() | {"router": args.router},
        }
        # run_saga holds the saga's lease while it runs, so `recover` elsewhere leaves it alone.
        view = run_saga(app, saga_input, saga_id=saga_id, fail_at=args.fail_at, on_event=show)
        return emit(view, args.json)


def saga_status_or_none(app: Any, saga_id: str) -> dict[str, Any] | None:
    from sagagraph.errors import SagaNotFoundError
    from sagagraph.graph.runner import saga_status

    try:
        return saga_status(app, saga_id)
    except SagaNotFoundError:
        return None


def run_choreography(
    args: argparse.Namespace, settings: Settings, saga_id: str, loader: Any
) -> int:
    from sagagraph.choreography.runner import run_choreographed_saga

    if args.router != "deterministic":
        raise ConfigurationError(
            "--router llm applies to orchestration only (--mode orchestration)"
        )
    definition = paper_definition(settings, loader=loader)
    view = run_choreographed_saga(
        definition,
        {"paper": str(args.paper)},
        saga_id=saga_id,
        bus_url=settings.bus,
        fail_at=args.fail_at,
    )
    if not args.json:
        # Agents ran in threads; show the trail they left, in the order it was written.
        for event in view.get("events") or []:
            print(format_event(event), file=sys.stderr)
    return emit(view, args.json)


def recorded_settings(view: dict[str, Any], args: argparse.Namespace) -> tuple[Settings, str]:
    """Settings a saga was started with (flags given now win), and its router."""
    recorded = ((view.get("input") or {}).get("settings")) or {}
    settings = Settings.resolve(
        db=getattr(args, "db", None),
        outputs=getattr(args, "outputs", None) or recorded.get("outputs"),
        llm=getattr(args, "llm", None) or recorded.get("llm"),
        model=getattr(args, "model", None) or recorded.get("model"),
        parallel=bool(recorded.get("parallel")),
    )
    return settings, str(recorded.get("router") or view.get("router") or "deterministic")


def load_view(args: argparse.Namespace, saga_id: str) -> dict[str, Any]:
    from sagagraph.graph.runner import saga_status

    with paper_app(settings_from(args), "deterministic") as app:
        view = saga_status(app, saga_id)
        view["input"] = app.get_state(_config(saga_id)).values.get("input") or {}
        return view


def _config(saga_id: str) -> Any:
    from sagagraph.graph.runner import saga_config

    return saga_config(saga_id)


def cmd_status(args: argparse.Namespace) -> int:
    from sagagraph.errors import SagaNotFoundError
    from sagagraph.graph.runner import saga_status

    settings = settings_from(args)
    view = None
    # A choreographed saga has no checkpoints: do not create an empty database to find out.
    if checkpoints_may_exist(settings.db):
        with paper_app(settings, "deterministic") as app:
            try:
                view = saga_status(app, args.saga_id)
            except SagaNotFoundError:
                view = None
    if view is None:
        view = choreography_view_or_none(args)
        if view is None:
            raise InputError(f"saga {args.saga_id!r}: not found (checkpointer and event log)")
    emit(view, args.json)
    return EXIT_COMPLETED


def checkpoints_may_exist(db_url: str) -> bool:
    """False only for a SQLite checkpointer whose file does not exist yet."""
    from sagagraph.checkpoints.factory import sqlite_path

    return not db_url.startswith("sqlite:///") or sqlite_path(db_url).exists()


def choreography_view_or_none(args: argparse.Namespace) -> dict[str, Any] | None:
    try:
        from sagagraph.choreography.runner import choreography_status
    except ImportError:
        return None
    try:
        view: dict[str, Any] | None = choreography_status(settings_from(args).bus, args.saga_id)
    except SagaGraphError:
        return None
    return view


def cmd_list(args: argparse.Namespace) -> int:
    from sagagraph.graph.runner import list_sagas

    with paper_app(settings_from(args), "deterministic") as app:
        views = list_sagas(app, status=args.status)
    if args.json:
        json.dump(
            [
                {k: v[k] for k in ("saga_id", "status", "reason", "completed", "compensated")}
                for v in views
            ],
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
        return EXIT_COMPLETED
    if not views:
        print("no sagas" + (f" with status {args.status}" if args.status else ""))
    for v in views:
        steps = ",".join(v["completed"]) or "-"
        reason = f"  {v['reason']}" if v.get("reason") else ""
        print(f"{v['saga_id']:<28} {v['status']:<22} {steps}{reason}")
    return EXIT_COMPLETED


def cmd_resume(args: argparse.Namespace) -> int:
    from sagagraph.graph.runner import resume_saga

    view = load_view(args, args.saga_id)
    settings, router = recorded_settings(view, args)
    with paper_app(settings, router, password=args.password) as app:
        view = resume_saga(app, args.saga_id, on_event=progress_printer(not args.json))
        return emit(view, args.json)


def cmd_recover(args: argparse.Namespace) -> int:
    from sagagraph.errors import SagaBusyError
    from sagagraph.graph.runner import recover_saga, unfinished_sagas

    base = settings_from(args)
    with paper_app(base, "deterministic") as app:
        pending = unfinished_sagas(app)
    if not pending:
        print("nothing to recover", file=sys.stderr)
        return EXIT_COMPLETED
    worst = EXIT_COMPLETED
    for saga_id in pending:
        view = load_view(args, saga_id)
        settings, router = recorded_settings(view, args)
        with paper_app(settings, router, password=args.password) as app:
            print(f"recovering {saga_id} ({view['status']})", file=sys.stderr)
            try:
                final = recover_saga(
                    app,
                    saga_id,
                    compensate=args.compensate,
                    on_event=progress_printer(not args.json),
                )
            except SagaBusyError as busy:
                # A live process is running it (it holds the saga's lease): not ours to touch.
                print(f"skipped {saga_id}: {busy}", file=sys.stderr)
                continue
        if not args.json:
            print_view(final, sys.stdout)
        else:
            print(json.dumps(final, default=str))
        worst = max(worst, exit_code_for(final))
    return worst


def cmd_resolve(args: argparse.Namespace) -> int:
    from sagagraph.graph.runner import resolve_saga

    view = load_view(args, args.saga_id)
    settings, router = recorded_settings(view, args)
    with paper_app(settings, router) as app:
        view = resolve_saga(
            app,
            args.saga_id,
            "retry" if args.retry else "skip",
            note=args.note or "",
            on_event=progress_printer(not args.json),
        )
        return emit(view, args.json)


def cmd_graph(args: argparse.Namespace) -> int:
    settings = Settings.resolve(llm="offline")
    from sagagraph.agents.paper_saga import paper_saga_definition
    from sagagraph.graph.builder import build_saga_graph

    definition = paper_saga_definition(outputs_dir=settings.outputs, parallel=args.parallel)
    router_model = None
    if args.router == "llm":
        # Drawing never calls the model; a named stand-in keeps `graph` free of API keys.
        router_model = "drawing-only"
    graph = build_saga_graph(definition, router=args.router, router_model=router_model)
    print(graph.compile().get_graph().draw_mermaid())
    return EXIT_COMPLETED


def cmd_compare(args: argparse.Namespace) -> int:
    from sagagraph.compare import compare_routers, render_comparison

    rows = compare_routers(
        args.papers,
        settings=settings_from(args),
        router_options=router_options(args),
        password=args.password,
        fail_at=args.fail_at,
    )
    if args.json:
        json.dump(rows, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print(render_comparison(rows))
    return EXIT_COMPLETED


def cmd_agent(args: argparse.Namespace) -> int:
    from sagagraph.choreography.runner import run_agent

    settings = settings_from(args)
    if args.name not in PAPER_STEPS:
        raise ConfigurationError(f"agent: unknown agent {args.name!r} ({', '.join(PAPER_STEPS)})")
    run_agent(paper_definition(settings), args.name, settings.bus)
    return EXIT_COMPLETED


def cmd_events(args: argparse.Namespace) -> int:
    from sagagraph.choreography.runner import saga_events

    events = saga_events(settings_from(args).bus, args.saga_id)
    if not events:
        raise InputError(f"saga {args.saga_id!r}: no events on {settings_from(args).bus!r}")
    if args.json:
        json.dump(events, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        for message in events:
            step = message.get("step") or "-"
            details = [e["detail"] for e in message.get("events") or [] if e.get("detail")]
            detail = f"  {details[-1]}" if details else ""
            print(f"{message['ts']}  {message['type']:<24} {step:<12}{detail}")
    return EXIT_COMPLETED


# --- parser ---------------------------------------------------------------------------------


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
    return parser


def configure_logging(debug: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="sagagraph: %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    # Step failures are shown as progress lines; the log repeats them only when debugging.
    # CRITICAL (a compensation gave up) always shows.
    logging.getLogger("sagagraph").setLevel(logging.DEBUG if debug else logging.CRITICAL)
    for noisy in ("httpx", "pypdf", "openai", "aio_pika", "aiormq"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if debug else logging.ERROR)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.debug)
    try:
        code: int = args.func(args)
        return code
    except SagaGraphError as error:
        if args.debug:
            raise
        print(f"sagagraph: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print(
            "sagagraph: interrupted; the saga can be resumed (sagagraph resume ID)", file=sys.stderr
        )
        return 130
    except Exception as error:
        if args.debug:
            raise
        print(
            f"sagagraph: unexpected error: {describe_error(error)} (--debug shows the traceback)",
            file=sys.stderr,
        )
        return EXIT_UNEXPECTED


if __name__ == "__main__":
    sys.exit(main())
