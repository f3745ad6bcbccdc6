"""``sagagraph prune``: retention, from the command line (:meth:`SagaService.prune`).

Parses the flags, asks the application core, prints what it did: a line of counts, or one
JSON object under ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime

from sagagraph.cli.output import EXIT_COMPLETED
from sagagraph.cli.times import since_flag
from sagagraph.cli.wiring import store_from
from sagagraph.service import SagaService


def cmd_prune(args: argparse.Namespace) -> int:
    cutoff = (
        since_flag(args.finished_before, datetime.now(UTC), "--finished-before")
        if args.finished_before
        else None
    )
    pruned = SagaService(store_from(args)).prune(
        finished_before=cutoff, keep_last=not args.keep_all, dry_run=args.dry_run
    )
    counts = pruned.counts()
    if args.json:
        json.dump({**counts, "finished_before": cutoff.isoformat() if cutoff else None}, sys.stdout)
        sys.stdout.write("\n")
        return EXIT_COMPLETED
    verb = "would delete" if args.dry_run else "deleted"
    print(
        f"{verb} {counts['deleted']} saga(s) finished before "
        f"{cutoff.isoformat() if cutoff else '(no cut-off)'}; "
        f"{'would cut' if args.dry_run else 'cut'} {counts['compacted']} finished saga(s) to "
        f"their last checkpoint ({counts['checkpoints_removed']} checkpoint(s) removed)"
    )
    if counts["log_deleted"]:
        print(
            f"{verb} the events of {counts['log_deleted']} choreographed saga(s) finished "
            "before the cut-off from the event log"
        )
    if counts["busy"]:
        print(f"{counts['busy']} saga(s) busy in another process: left for the next prune")
    if pruned.not_compacted:
        print(f"finished sagas not compacted: {pruned.not_compacted}", file=sys.stderr)
    if pruned.log_not_pruned:
        print(f"event log not pruned: {pruned.log_not_pruned}", file=sys.stderr)
    return EXIT_COMPLETED
