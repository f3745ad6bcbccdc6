"""A saga's life after ``run``: ``status``, ``resume``, ``recover``, ``resolve``, ``rollback``.

Each verb parses its flags, calls one operation of the application core
(:class:`~sagagraph.service.SagaService`) and prints what it returns.
"""

from __future__ import annotations

import argparse
import getpass
import json
import signal
import sys
import threading
from functools import partial
from typing import Any

from sagagraph.cli.events import recover_choreography, resume_choreography
from sagagraph.cli.interrupt import interruptible
from sagagraph.cli.output import (
    EXIT_COMPLETED,
    emit,
    print_view,
    progress_printer,
    recover_exit_code,
    say,
)
from sagagraph.cli.wiring import reader_from, service_from
from sagagraph.errors import InputError, SagaGraphError
from sagagraph.redaction import redact

__all__ = ["cmd_recover", "cmd_resolve", "cmd_resume", "cmd_rollback", "cmd_status"]


def cmd_status(args: argparse.Namespace) -> int:
    """The saga's view; its exit code is the one ``run`` gave (a script need not parse JSON)."""
    view = reader_from(args).require(args.saga_id)
    foreign = None
    if view.get("mode") != "choreography" and view.get("waiting_for_operator"):
        foreign = service_from(args).definitions.cannot_act(view, "resolve")
    return emit(view, args.json, foreign=foreign)


def cmd_resume(args: argparse.Namespace) -> int:
    service = service_from(args)
    view = service.require(args.saga_id)
    if view.get("mode") == "choreography":
        return resume_choreography(args)
    resume = partial(service.resume, args.saga_id, hooks=progress_printer())
    return emit(interruptible(resume, args.saga_id), args.json)


def cmd_resolve(args: argparse.Namespace) -> int:
    service = service_from(args)
    view = service.resolve(
        args.saga_id,
        "retry" if args.retry else "skip",
        note=args.note or "",
        hooks=progress_printer(),
    )
    return emit(view, args.json)


def operator_name() -> str:
    """Who runs the command, for ``--by`` left out: the login name, else ``operator``."""
    try:
        return getpass.getuser() or "operator"
    except (KeyError, OSError):  # no user name in the environment or the password database
        return "operator"


def cmd_rollback(args: argparse.Namespace) -> int:
    """Exit 0 once the saga is rolled back, 4 when a compensation needs an operator, 75 when
    it stopped unfinished; 2 when the saga cannot be rolled back (unknown, finished...)."""
    from sagagraph.saga.names import DEFAULT_ROLLBACK_REASON

    service = service_from(args)
    roll_back = partial(
        service.rollback,
        args.saga_id,
        reason=args.reason or DEFAULT_ROLLBACK_REASON,
        by=args.by or operator_name(),
        hooks=progress_printer(),
    )
    final = interruptible(roll_back, args.saga_id)
    emit(final, args.json)
    return recover_exit_code([final])


def watch_orphans(args: argparse.Namespace) -> int:
    """``recover --watch``: take over orphaned sagas every ``--every`` seconds until SIGTERM."""
    from sagagraph.workers.watch import take_over_orphans

    if args.every <= 0:
        raise InputError(f"--every: expected a number of seconds > 0, got {args.every}")
    from sagagraph.workers.address import DEFAULT_MAX_DELIVERIES, queue_address

    service = service_from(args)
    # The queue URL's delivery limit (``?max_deliveries=N``) for sagas that recorded none.
    limit = (
        queue_address(service.store.queue).max_deliveries
        if service.store.queue
        else DEFAULT_MAX_DELIVERIES
    )
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    say(f"recover: watching for orphaned sagas every {args.every:g} s")
    taken = 0
    while not stop.is_set():
        try:
            taken += len(
                take_over_orphans(
                    service.store.db, service.definitions, max_deliveries=limit, say=say
                )
            )
        except SagaGraphError as error:  # the database is down: try again next round
            say(f"recover: {redact(str(error))}")
        stop.wait(args.every)
    say(f"recover: stopped after taking over {taken} saga(s)")
    return EXIT_COMPLETED


def cmd_recover(args: argparse.Namespace) -> int:
    if args.watch:
        return watch_orphans(args)
    views: list[dict[str, Any]] = recover_choreography(args)

    def taking(view: dict[str, Any]) -> None:
        say(f"recovering {view['saga_id']} ({view['status']})")

    service = service_from(args)
    done = service.recover(compensate=args.compensate, hooks=progress_printer(), on_saga=taking)
    for view in done.views:
        if view.get("recover_skipped"):
            say(f"skipped {view['saga_id']}: {view['recover_skipped']}")
        elif view.get("recover_error"):
            say(f"sagagraph: error: saga {view['saga_id']}: {redact(view['recover_error'])}")
        elif args.json:
            print(json.dumps(view, default=str), flush=True)
        else:
            print_view(view, sys.stdout)
    views += done.views
    for view in done.waiting:
        if view.get("dead_letter"):
            saga_id = view["saga_id"]
            say(
                f"dead-lettered by the work queue: {saga_id} "
                f"(sagagraph requeue {saga_id} | cancel {saga_id} | rollback {saga_id})"
            )
            continue
        how = service.definitions.cannot_act(view, "resolve") or (
            f"sagagraph resolve {view['saga_id']} --retry | --skip --note TEXT"
        )
        say(f"waiting for an operator: {view['saga_id']} ({how})")
    if not views and not done.waiting:
        say("nothing to recover")
    return recover_exit_code(views + done.waiting)
