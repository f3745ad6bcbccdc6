"""``sagagraph rollback ID``: compensate one unfinished saga, recording who asked and why.

``recover --compensate`` rolls back every unfinished saga; this rolls back one, an orchestrated
or blackboard saga of the checkpointer. Only compensations run, so no model key is needed.
A saga a live process is running is refused (its lease is taken), as are finished sagas,
sagas waiting for an operator (``resolve`` answers those) and sagas still queued on the work
queue (``cancel`` takes them off it); a dead-lettered saga is rolled back.
"""

from __future__ import annotations

import argparse
import getpass
from functools import partial

from sagagraph.cli.apps import load_view, paper_app, recorded_settings
from sagagraph.cli.foreign import refuse_foreign
from sagagraph.cli.interrupt import interruptible
from sagagraph.cli.output import emit, progress_printer, recover_exit_code
from sagagraph.errors import InputError
from sagagraph.saga.view import QUEUED


def operator_name() -> str:
    """Who runs the command, for ``--by`` left out: the login name, else ``operator``."""
    try:
        return getpass.getuser() or "operator"
    except (KeyError, OSError):  # no user name in the environment or the password database
        return "operator"


def cmd_rollback(args: argparse.Namespace) -> int:
    """Exit 0 once the saga is rolled back, 4 when a compensation needs an operator, 75 when
    it stopped unfinished; 2 when the saga cannot be rolled back (unknown, finished...)."""
    from sagagraph.graph.recover import DEFAULT_ROLLBACK_REASON, rollback_saga

    view = load_view(args, args.saga_id)
    refuse_foreign(view, "rollback")  # before anything is recorded: the saga stays as it is
    if view["status"] == QUEUED and not view.get("dead_letter"):
        # Its message is still on the work queue: a worker would take it after the rollback.
        raise InputError(
            f"saga {args.saga_id!r}: queued on the work queue and not started; "
            f"take it off the queue with `sagagraph cancel {args.saga_id}`"
        )
    settings, router = recorded_settings(view, args)
    # Only compensations run: no paper is read, no model is asked.
    with paper_app(settings, router, compensating=True) as app:
        roll_back = partial(
            rollback_saga,
            app,
            args.saga_id,
            reason=args.reason or DEFAULT_ROLLBACK_REASON,
            by=args.by or operator_name(),
            hooks=progress_printer(),
        )
        final = interruptible(roll_back, args.saga_id)
    emit(final, args.json)
    return recover_exit_code([final])
