"""A saga's life after ``run``: ``status``, ``list``, ``resume``, ``recover``, ``resolve``."""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from typing import Any

from sagagraph.cli.apps import (
    checkpoints_may_exist,
    inspection_app,
    load_view,
    not_found,
    only_compensates,
    paper_app,
    pdf_password,
    recorded_settings,
    saga_status_or_none,
    settings_from,
)
from sagagraph.cli.blackboard import blackboard_status, blackboard_unfinished
from sagagraph.cli.events import recover_choreography, resume_choreography
from sagagraph.cli.foreign import foreign_reason, refuse_foreign
from sagagraph.cli.interrupt import interruptible
from sagagraph.cli.listing import cmd_list
from sagagraph.cli.output import (
    EXIT_COMPLETED,
    emit,
    print_view,
    progress_printer,
    recover_exit_code,
)
from sagagraph.config import Settings
from sagagraph.errors import InputError, SagaGraphError, SagaNotFoundError
from sagagraph.redaction import redact

__all__ = ["cmd_list", "cmd_recover", "cmd_resolve", "cmd_resume", "cmd_status"]


def cmd_status(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    view = None
    # A choreographed saga has no checkpoints: do not create an empty database to find out.
    if checkpoints_may_exist(settings.db):
        view = blackboard_status(settings, args.saga_id, graph_view_or_none(settings, args))
    if view is None:
        view = choreography_view_or_none(args)
        if view is None:
            raise SagaNotFoundError(not_found(args.saga_id, settings))
    name_stuck_saga(view, settings)
    # The saga's own exit code, the one `run` gave (a batch script need not parse JSON).
    return emit(view, args.json)


def name_stuck_saga(view: dict[str, Any], settings: Settings) -> None:
    """Add the view's ``dead_lettered`` and ``orphaned`` (booleans): the work queue gave up on
    the saga, or it is ``running`` or ``compensating`` with no live process behind it (its
    lease is free: ``recover`` or ``rollback`` finishes it)."""
    from sagagraph.cli.listing import UNFINISHED, lease_is_free

    view["dead_lettered"] = bool(view.get("dead_letter"))
    view["orphaned"] = False
    if (
        view.get("mode") != "choreography"
        and view.get("status") in UNFINISHED
        and not view.get("waiting_for_operator")
        and not view["dead_lettered"]
    ):
        with inspection_app(settings) as app:
            view["orphaned"] = lease_is_free(app, view["saga_id"])


def graph_view_or_none(settings: Settings, args: argparse.Namespace) -> dict[str, Any] | None:
    """The view read through the paper saga's graph (snapshot: next steps, operator waits)."""
    from sagagraph.errors import SagaNotFoundError
    from sagagraph.graph.runner import saga_status

    with inspection_app(settings) as app:
        try:
            view = saga_status(app, args.saga_id)
        except SagaNotFoundError:
            return None
    if view.get("router", "deterministic") == "deterministic":
        return view
    with inspection_app(settings, str(view["router"])) as app:
        return saga_status(app, args.saga_id)


def in_checkpoints(args: argparse.Namespace) -> bool:
    """True when the checkpointer holds saga ``args.saga_id`` (creating no database)."""
    settings = settings_from(args)
    if not checkpoints_may_exist(settings.db):
        return False
    with inspection_app(settings) as app:  # reads only: no model, no key
        return saga_status_or_none(app, args.saga_id) is not None


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


def cmd_resume(args: argparse.Namespace) -> int:
    from sagagraph.graph.runner import resume_saga

    if not in_checkpoints(args) and choreography_view_or_none(args) is not None:
        return resume_choreography(args)
    view = load_view(args, args.saga_id)
    refuse_foreign(view, "resume")
    settings, router = recorded_settings(view, args)
    back = only_compensates(view)  # a finished or compensating saga needs no model key
    with paper_app(
        settings, router, password=pdf_password(args), announce=True, compensating=back
    ) as app:
        view = interruptible(
            lambda: resume_saga(app, args.saga_id, hooks=progress_printer()), args.saga_id
        )
        return emit(view, args.json)


def watch_orphans(args: argparse.Namespace) -> int:
    """``recover --watch``: take over orphaned sagas every ``--every`` seconds until SIGTERM."""
    import signal
    import threading

    from sagagraph.workers.references import PAPER_APP
    from sagagraph.workers.watch import take_over_orphans

    if args.every <= 0:
        raise InputError(f"--every: expected a number of seconds > 0, got {args.every}")
    db = settings_from(args).db
    accepted = frozenset(args.app or [PAPER_APP])
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    say(f"recover: watching for orphaned sagas every {args.every:g} s")
    taken = 0
    while not stop.is_set():
        try:
            taken += len(take_over_orphans(db, accepted, say=say))
        except SagaGraphError as error:  # the database is down: try again next round
            say(f"recover: {redact(str(error))}")
        stop.wait(args.every)
    say(f"recover: stopped after taking over {taken} saga(s)")
    return EXIT_COMPLETED


def cmd_recover(args: argparse.Namespace) -> int:
    if args.watch:
        return watch_orphans(args)
    from sagagraph.errors import SagaBusyError
    from sagagraph.graph.recover import is_unfinished, open_sagas, recover_saga

    base = settings_from(args)
    views: list[dict[str, Any]] = recover_choreography(args)
    pending: list[str] = []
    waiting: list[dict[str, Any]] = []
    if checkpoints_may_exist(base.db):  # no empty database created to find nothing
        with inspection_app(base) as app:
            # Only sagas not finished at their latest checkpoint are read in full.
            opened = open_sagas(app)
            pending = [v["saga_id"] for v in opened if is_unfinished(v)]
            waiting = [v for v in opened if v["waiting_for_operator"]]
    pending = sorted(set(pending) | set(blackboard_unfinished(base)))
    for saga_id in pending:
        try:
            view = load_view(args, saga_id)
            foreign = foreign_reason(view, "recover")
            if foreign is not None:
                # Its steps are not the paper saga's: recovering it here would corrupt it.
                print(f"skipped {saga_id}: {foreign}", file=sys.stderr)
                views.append({"saga_id": saga_id, "recover_skipped": foreign})
                continue
            settings, router = recorded_settings(view, args)
            # Rolling back needs no model key: only compensations run.
            back = only_compensates(view, compensate=args.compensate)
            with paper_app(
                settings, router, password=pdf_password(args), announce=True, compensating=back
            ) as app:
                print(f"recovering {saga_id} ({view['status']})", file=sys.stderr, flush=True)
                recover_one = partial(
                    recover_saga,
                    app,
                    saga_id,
                    compensate=args.compensate,
                    hooks=progress_printer(),
                )
                final = interruptible(recover_one, saga_id)
        except SagaBusyError as busy:
            # A live process is running it (it holds the saga's lease): not ours to touch.
            print(f"skipped {saga_id}: {busy}", file=sys.stderr)
            views.append({"saga_id": saga_id, "recover_skipped": str(busy)})
            continue
        except SagaGraphError as error:
            # One saga that cannot be recovered never stops the others: one line each.
            problem = redact(str(error))
            print(f"sagagraph: error: saga {saga_id}: {problem}", file=sys.stderr)
            views.append({"saga_id": saga_id, "recover_error": problem})
            continue
        show_recovered(final, args.json)
        views.append(final)
    for view in waiting:
        how = foreign_reason(view, "resolve") or (
            f"sagagraph resolve {view['saga_id']} --retry | --skip --note TEXT"
        )
        print(f"waiting for an operator: {view['saga_id']} ({how})", file=sys.stderr)
    if not pending and not waiting and not views:
        print("nothing to recover", file=sys.stderr)
    return recover_exit_code(views + waiting)


def show_recovered(view: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(view, default=str), flush=True)
    else:
        print_view(view, sys.stdout)


def cmd_resolve(args: argparse.Namespace) -> int:
    from sagagraph.graph.runner import resolve_saga

    view = load_view(args, args.saga_id)
    refuse_foreign(view, "resolve")  # before anything is recorded: the saga stays as it is
    settings, router = recorded_settings(view, args)
    # Retrying or skipping a compensation runs no step forward: no model key needed.
    with paper_app(settings, router, compensating=only_compensates(view)) as app:
        view = resolve_saga(
            app,
            args.saga_id,
            "retry" if args.retry else "skip",
            note=args.note or "",
            hooks=progress_printer(),
        )
        return emit(view, args.json)
