"""Sagas across machines on Celery: ``submit`` sagas, run a ``worker``, see ``workers``,
``cancel`` or ``requeue`` one.

Their flags are declared in :mod:`sagagraph.cli.parser`, with every other verb's.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from sagagraph.agents.paper_app import PAPER_APP
from sagagraph.cli.flags import NO_REASON_GIVEN, PAPER_STEPS
from sagagraph.cli.lifecycle import operator_name
from sagagraph.cli.output import EXIT_COMPLETED, say
from sagagraph.cli.wiring import service_from, settings_from, store_from
from sagagraph.errors import ConfigurationError, InputError


def _eta(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"--eta: {text!r} is not an ISO 8601 time") from None


def _inputs(args: argparse.Namespace) -> list[tuple[dict[str, Any], str | None]]:
    """Each saga's input and its label: papers (checked, all of them, before anything is
    written) or ``--input`` JSON objects for ``--app``."""
    if args.input:
        if args.papers:
            raise InputError("submit: give papers or --input, not both")
        found: list[tuple[dict[str, Any], str | None]] = []
        for text in args.input:
            try:
                value = json.loads(text)
            except ValueError as error:
                raise InputError(f"--input: not JSON: {error}") from None
            if not isinstance(value, dict):
                raise InputError("--input: expected a JSON object")
            found.append((value, None))
        return found
    if not args.papers:
        raise InputError("submit: give at least one paper (or --input with --app)")
    if args.app:
        raise InputError("submit --app: give each saga's input with --input JSON")
    from sagagraph.agents.pdf.loader import PaperLoader, check_paper

    if args.fail_at and args.fail_at not in PAPER_STEPS:
        raise ConfigurationError(
            f"--fail-at: unknown step {args.fail_at!r} (steps: {', '.join(PAPER_STEPS)})"
        )
    recorded = settings_from(args).recorded()
    loader = PaperLoader()
    papers: list[tuple[dict[str, Any], str | None]] = []
    for paper in args.papers:
        check_paper(paper, loader=loader)
        # Absolute, so that a worker started in another folder finds it.
        path = str(Path(paper).resolve())
        papers.append(({"paper": path, "settings": recorded}, path))
    return papers


def cmd_submit(args: argparse.Namespace) -> int:
    from sagagraph.workers.control import SagaRequest, Schedule

    inputs = _inputs(args)
    if args.saga_id and len(inputs) != 1:
        raise InputError("--saga-id: names one saga; submit one paper (or one --input)")
    requests = [SagaRequest(i, args.saga_id, args.fail_at) for i, _ in inputs]
    schedule = Schedule(args.priority, args.countdown, _eta(args.eta))
    done = service_from(args).submit(
        args.app or PAPER_APP, requests, queue=args.queue, schedule=schedule
    )
    if args.json:
        rows = [
            {"saga_id": d.saga_id, "paper": label, "created": d.created, "status": d.status}
            for d, (_, label) in zip(done, inputs, strict=True)
        ]
        json.dump(rows, sys.stdout)
        sys.stdout.write("\n")
    else:
        for d, (_, label) in zip(done, inputs, strict=True):
            print(f"{d.saga_id}  {label or ''}".rstrip())
    for d in done:
        if not d.created:
            say(f"saga {d.saga_id}: already exists ({d.status}); not submitted again")
    created = sum(1 for d in done if d.created)
    say(f"submitted {created} saga(s); status: queued")
    return EXIT_COMPLETED


def cmd_worker(args: argparse.Namespace) -> int:
    import uuid

    from celery.signals import worker_ready

    from sagagraph.workers.celery_app import make_celery_app

    if args.concurrency < 1:
        raise InputError(f"--concurrency: expected 1 or more, got {args.concurrency}")
    apps = args.app or [PAPER_APP]
    db = store_from(args).db
    # A reference that cannot be imported fails here, in one line.
    celery = make_celery_app(
        args.queue, db, apps=apps, time_limit=args.time_limit, rate_limit=args.rate_limit, say=say
    )
    address = celery.conf.sagagraph["address"]

    @worker_ready.connect  # type: ignore[untyped-decorator]
    def consuming(**_: Any) -> None:
        say(
            f"worker: consuming queue {address.name} at {address.shown} "
            f"({args.concurrency} at once, pool {args.pool})"
        )

    argv = ["worker", "-Q", address.name, "-c", str(args.concurrency), "-P", args.pool]
    argv += ["-n", f"sagagraph-{uuid.uuid4().hex[:8]}@%h", "--loglevel", "WARNING"]
    argv += ["--without-mingle", "--without-gossip"]
    # SIGTERM: Celery's warm shutdown, which finishes the sagas in flight.
    celery.worker_main(argv)
    say("worker: stopped")
    return EXIT_COMPLETED


def queue_summary(views: list[dict[str, Any]], queue_name: str) -> dict[str, Any]:
    """Counts of the sagas submitted to ``queue_name``, from their views."""
    from sagagraph.graph.definitions import WORKER_KEY

    def queue_of(view: Mapping[str, Any]) -> Any:
        return ((view.get("input") or {}).get(WORKER_KEY) or {}).get("queue")

    mine = [v for v in views if queue_of(v) == queue_name]
    operator = [v for v in mine if v.get("waiting_for_operator") or v.get("dead_letter")]
    finished = Counter(
        v["status"]
        for v in mine
        if v["status"] in ("completed", "rolled_back", "resolved_by_operator")
    )
    queued = sum(1 for v in mine if v["status"] == "queued" and v not in operator)
    running = len(mine) - queued - sum(finished.values()) - len(operator)
    return {
        "queued": queued,
        "running": running,
        "finished": sum(finished.values()),
        "finished_by_status": dict(finished),
        "needs_operator": [
            {
                "saga_id": v["saga_id"],
                "status": v["status"],
                "why": (v.get("dead_letter") or {}).get("detail")
                or "a compensation failed: sagagraph resolve",
            }
            for v in operator
        ],
    }


def cmd_workers(args: argparse.Namespace) -> int:
    from sagagraph.workers.address import queue_address
    from sagagraph.workers.broker import queue_counts

    address = queue_address(args.queue)
    counts = queue_counts(address)
    views = service_from(args).views()
    summary = queue_summary(views, address.name) | {
        "queue": address.name,
        "url": address.shown,
        "workers": counts.consumers,
        "messages_waiting": counts.ready,
    }
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_COMPLETED
    by_status = ", ".join(f"{n} {s}" for s, n in sorted(summary["finished_by_status"].items()))
    print(f"queue {address.name} at {address.shown}: {counts.consumers} worker(s) consuming")
    print(f"  queued    {summary['queued']}  ({counts.ready} messages waiting)")
    print(f"  running   {summary['running']}")
    print(f"  finished  {summary['finished']}" + (f"  ({by_status})" if by_status else ""))
    print(f"  needs an operator  {len(summary['needs_operator'])}")
    for item in summary["needs_operator"]:
        print(f"    {item['saga_id']}  {item['status']}: {item['why']}")
    return EXIT_COMPLETED


def _show(view: Mapping[str, Any], line: str, as_json: bool) -> None:
    if as_json:
        json.dump(dict(view), sys.stdout, default=str)
        sys.stdout.write("\n")
    print(line, file=sys.stderr if as_json else sys.stdout)


def cmd_cancel(args: argparse.Namespace) -> int:
    by = args.by or operator_name()
    why = args.reason or NO_REASON_GIVEN
    view = service_from(args).cancel(args.saga_id, by=by, why=why, queue=args.queue)
    _show(view, f"saga {args.saga_id}: {view['status']}; cancel {view['cancel']}", args.json)
    return EXIT_COMPLETED


def cmd_requeue(args: argparse.Namespace) -> int:
    from sagagraph.workers.control import Schedule

    view = service_from(args).requeue(
        args.saga_id, queue=args.queue, schedule=Schedule(args.priority), note=args.note or ""
    )
    _show(view, f"saga {args.saga_id}: back on the queue ({view['status']})", args.json)
    return EXIT_COMPLETED
