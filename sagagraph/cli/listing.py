"""``sagagraph list``: every saga of both coordination styles, one row each.

The rows come from the application core's one query (:meth:`SagaService.list`): orchestrated
sagas from the checkpointer's stamped index, choreographed ones from the event log. A
``running`` or ``compensating`` saga whose lease is free has no live process behind it: it is
shown as orphaned (``sagagraph recover`` finishes it), unless the work queue dead-lettered it
(shown so: ``sagagraph requeue`` puts it back).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sagagraph.cli.flags import short_name
from sagagraph.cli.output import EXIT_COMPLETED
from sagagraph.cli.times import since_flag
from sagagraph.cli.wiring import reader_from

COLUMNS = ("saga_id", "status", "mode", "paper", "updated", "completed", "reason")
"""What each row (and each JSON object) carries."""


def shown_status(r: dict[str, Any]) -> str:
    if r["dead_lettered"]:
        return f"{r['status']} (dead-lettered)"
    if r["orphaned"]:
        return f"{r['status']} (orphaned)"
    if r["waiting_for_operator"]:
        return f"{r['status']} (operator)"
    return str(r["status"])


def cmd_list(args: argparse.Namespace) -> int:
    start = since_flag(args.since, datetime.now(UTC)) if args.since else None

    def warn(line: str) -> None:
        # The orchestrated sagas are still worth listing when the event log cannot be read.
        print(f"sagagraph: warning: {line}", file=sys.stderr)

    rows = reader_from(args).list(status=args.status, since=start, limit=args.limit, warn=warn)
    for r in rows:
        r.pop("text", None)
    if args.json:
        json.dump(rows, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return EXIT_COMPLETED
    if not rows:
        print("no sagas" + (f" with status {args.status}" if args.status else ""))
        return EXIT_COMPLETED
    table = [("SAGA", "STATUS", "MODE", "PAPER", "UPDATED", "COMPLETED", "REASON")]
    for r in rows:
        table.append(
            (
                str(r["saga_id"]),
                shown_status(r),
                short_name(r["mode"]),
                short_paper(r["paper"]),
                str(r["updated"] or "-"),
                ",".join(r["completed"]) or "-",
                one_line(r["reason"]),
            )
        )
    # A file name may hold terminal escapes: shown escaped, as `run` announces such a name.
    shown = [[c if c.isprintable() else repr(c)[1:-1] for c in line] for line in table]
    widths = [max(len(line[i]) for line in shown) for i in range(len(shown[0]) - 1)]
    for line in shown:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        print("  ".join([*cells, line[-1]]).rstrip())
    if any(r["orphaned"] for r in rows):
        print("orphaned: no live process runs it; `sagagraph recover` finishes it")
    if any(r.get("dead_lettered") for r in rows):
        print("dead-lettered: it stopped its workers; `sagagraph requeue ID` after a fix")
    return EXIT_COMPLETED


def short_paper(paper: str | None) -> str:
    return Path(paper).name if paper else "-"


def one_line(reason: str | None, width: int = 60) -> str:
    if not reason:
        return "-"
    text = " ".join(str(reason).split())
    return text if len(text) <= width else text[: width - 3] + "..."
