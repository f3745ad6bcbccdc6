"""``sagagraph list``: every saga of both coordination styles, one row each.

Orchestrated sagas come from the checkpointer, choreographed ones from the bus log. A saga
whose latest checkpoint says it finished is listed from that checkpoint's metadata, read by
the database driver alone; LangGraph and the paper saga's graph are loaded only when some
saga has to be read in full (unfinished, or stored before summaries). Nothing is created to
find out: a SQLite checkpointer or event log that does not exist has nothing to list. A
``running`` or ``compensating`` saga whose lease is free has no live process
behind it: it is shown as orphaned (``sagagraph recover`` finishes it), unless the work queue
dead-lettered it (shown so: ``sagagraph requeue`` puts it back).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sagagraph.cli.apps import checkpoints_may_exist, inspection_app, settings_from
from sagagraph.cli.modes import short_name
from sagagraph.cli.output import EXIT_COMPLETED
from sagagraph.cli.times import parse_time, since_flag
from sagagraph.config import Settings
from sagagraph.errors import InputError, SagaBusyError, SagaGraphError, SagaNotFoundError

UNFINISHED = ("running", "compensating")
COLUMNS = ("saga_id", "status", "mode", "paper", "updated", "completed", "reason")
"""What each row (and each JSON object) carries."""


def row(view: dict[str, Any], paper: str | None, orphaned: bool) -> dict[str, Any]:
    events = view.get("events") or []
    return {
        "saga_id": view["saga_id"],
        "status": view["status"],
        "orphaned": orphaned,
        "dead_lettered": bool(view.get("dead_letter")),
        "mode": view.get("mode") or "orchestration",
        "paper": paper,
        "updated": events[-1]["ts"] if events else None,
        "completed": list(view.get("completed") or []),
        "compensated": list(view.get("compensated") or []),
        "reason": view.get("reason"),
        "waiting_for_operator": bool(view.get("waiting_for_operator")),
    }


def lease_is_free(app: Any, saga_id: str) -> bool:
    """True when no live process holds the saga (taken and released at once, never waited)."""
    from sagagraph.graph.leases import saga_lease

    try:
        with saga_lease(app.checkpointer, saga_id):
            return True
    except SagaBusyError:
        return False


def stamped_row(summary: Any) -> dict[str, Any]:
    """The row of a finished saga, from its latest checkpoint's summary alone (no state read).

    A finished saga is never orphaned and never waits for an operator.
    """
    from sagagraph.checkpoints import saga_metadata as m

    s = summary.summary
    return {
        "saga_id": summary.saga_id,
        "status": s[m.STATUS],
        "orphaned": False,
        "dead_lettered": False,
        "mode": s.get(m.MODE) or "orchestration",
        "paper": s.get(m.LABEL),
        "updated": s.get(m.UPDATED),
        "completed": list(s.get(m.COMPLETED) or []),
        "compensated": list(s.get(m.COMPENSATED) or []),
        "reason": s.get(m.REASON),
        "waiting_for_operator": False,
    }


def orchestrated_rows(settings: Settings) -> list[dict[str, Any]]:
    """One row per saga in the checkpointer: finished sagas from their checkpoint summary
    (one query per page of sagas), the others read in full through the paper saga's graph."""
    if not checkpoints_may_exist(settings.db):
        return []
    # Sorted here: a database's collation may order ids otherwise than Python does.
    return sorted(full_rows(settings, None), key=lambda r: str(r["saga_id"]))


def full_rows(settings: Settings, saga_ids: list[str] | None) -> list[dict[str, Any]]:
    """Rows of ``saga_ids`` (None: of every saga) read through the paper saga's graph;
    finished sagas among them still come from their summary."""
    from sagagraph.checkpoints.saga_index import latest_checkpoints
    from sagagraph.graph.runner import saga_config, saga_status
    from sagagraph.saga.names import TERMINAL_STATUSES

    rows = []
    with inspection_app(settings) as app:
        if saga_ids is None:
            saga_ids = []
            for summary in latest_checkpoints(app.checkpointer):
                if summary.stamped and summary.status in TERMINAL_STATUSES:
                    rows.append(stamped_row(summary))
                else:
                    saga_ids.append(summary.saga_id)
        for saga_id in saga_ids:
            try:
                view = saga_status(app, saga_id)
            except InputError:
                continue  # not a saga (an invalid id), or no state at all
            values = app.get_state(saga_config(view["saga_id"])).values
            paper = values.get("label")
            orphaned = (
                view["status"] in UNFINISHED
                and not view["waiting_for_operator"]
                and view.get("dead_letter") is None
                and lease_is_free(app, view["saga_id"])
            )
            rows.append(row(view, paper, orphaned))
    return sorted(rows, key=lambda r: str(r["saga_id"]))


def choreographed_rows(settings: Settings) -> list[dict[str, Any]]:
    """One row per saga on the bus log: the log is read once and folded per saga."""
    # The bus opener alone: the agents' hosting (and LangGraph) are not needed to read.
    from sagagraph.choreography.buses import open_bus
    from sagagraph.choreography.messages import SagaMessage
    from sagagraph.choreography.projection import choreography_view

    try:
        bus = open_bus(settings.bus, create=False)
        try:
            messages = bus.read_log()
        finally:
            bus.close()
    except (SagaGraphError, OSError) as error:
        # The orchestrated sagas are still worth listing when the bus cannot be read.
        print(f"sagagraph: warning: event log not read: {error}", file=sys.stderr)
        return []
    by_saga: dict[str, list[SagaMessage]] = {}
    for message in messages:
        by_saga.setdefault(message["saga_id"], []).append(message)
    rows = []
    for saga_id, events in by_saga.items():
        try:
            view = choreography_view(saga_id, events)
        except SagaNotFoundError:
            continue  # only events nobody started a saga for: refused by the agents
        starts = [m for m in events if m["kind"] == "start"]
        paper = (starts[0]["input"] or {}).get("paper") if starts else None
        rows.append(row(view, paper, orphaned=False))
    return rows


def wanted(r: dict[str, Any], status: str | None) -> bool:
    if status is None:
        return True
    if status == "orphaned":
        return bool(r["orphaned"])
    if status in ("dead_letter", "dead_lettered"):
        return bool(r["dead_lettered"])
    return bool(r["status"] == status)


def shown_status(r: dict[str, Any]) -> str:
    if r["dead_lettered"]:
        return f"{r['status']} (dead-lettered)"
    if r["orphaned"]:
        return f"{r['status']} (orphaned)"
    if r["waiting_for_operator"]:
        return f"{r['status']} (operator)"
    return str(r["status"])


def updated_at(r: dict[str, Any]) -> datetime | None:
    """When the saga last changed (its last event's time), None when nothing says."""
    try:
        return parse_time(str(r["updated"])) if r.get("updated") else None
    except ValueError:
        return None


def newest_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows by update time, newest first; ties and rows without a time by id."""
    by_id = sorted(rows, key=lambda r: str(r["saga_id"]))
    oldest = datetime.min.replace(tzinfo=UTC)
    return sorted(by_id, key=lambda r: updated_at(r) or oldest, reverse=True)


def since(r: dict[str, Any], start: datetime | None) -> bool:
    if start is None:
        return True
    at = updated_at(r)
    return at is not None and at >= start


def cmd_list(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    start = since_flag(args.since, datetime.now(UTC)) if args.since else None
    everything = orchestrated_rows(settings) + choreographed_rows(settings)
    rows = [r for r in newest_first(everything) if wanted(r, args.status) and since(r, start)]
    if args.limit is not None:
        rows = rows[: args.limit]
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
