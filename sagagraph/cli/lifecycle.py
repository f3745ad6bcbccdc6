"""A saga's life after ``run``: ``status``, ``list``, ``resume``, ``recover``, ``resolve``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sagagraph.cli.apps import (
    checkpoints_may_exist,
    load_view,
    paper_app,
    recorded_settings,
    settings_from,
)
from sagagraph.cli.blackboard import blackboard_status, blackboard_unfinished
from sagagraph.cli.output import EXIT_COMPLETED, emit, exit_code_for, print_view, progress_printer
from sagagraph.errors import InputError, SagaGraphError


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
    view = blackboard_status(settings, args.saga_id, view)
    if view is None:
        view = choreography_view_or_none(args)
        if view is None:
            raise InputError(f"saga {args.saga_id!r}: not found (checkpointer and event log)")
    emit(view, args.json)
    return EXIT_COMPLETED


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
    pending = sorted(set(pending) | set(blackboard_unfinished(base)))
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
