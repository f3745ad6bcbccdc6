"""Sagas across machines: ``submit`` papers to the work queue, run a ``worker``, see ``workers``.

Their flags are declared in :mod:`sagagraph.cli.parser`, with every other verb's.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sagagraph.cli.apps import (
    inspection_app,
    paper_app,
    paper_graph,
    recorded_settings,
    settings_from,
)
from sagagraph.cli.flags import PAPER_STEPS
from sagagraph.cli.output import EXIT_COMPLETED
from sagagraph.errors import ConfigurationError


def cmd_submit(args: argparse.Namespace) -> int:
    from sagagraph.agents.pdf.loader import PaperLoader, check_paper
    from sagagraph.graph.submit import SagaRequest, submit_sagas

    if args.fail_at and args.fail_at not in PAPER_STEPS:
        raise ConfigurationError(
            f"--fail-at: unknown step {args.fail_at!r} (steps: {', '.join(PAPER_STEPS)})"
        )
    settings = settings_from(args)
    loader = PaperLoader()
    # Every paper is read before anything is written: one unreadable paper, nothing submitted.
    papers = []
    for paper in args.papers:
        check_paper(paper, loader=loader)
        # Absolute, so that a worker started in another folder finds it.
        papers.append(str(Path(paper).resolve()))
    recorded = settings.recorded() | {"router": args.router}
    requests = [
        SagaRequest({"paper": paper, "settings": recorded}, fail_at=args.fail_at)
        for paper in papers
    ]
    with paper_app(settings, args.router, args=args) as app:
        ids = submit_sagas(app, requests, queue=args.queue)
    if args.json:
        json.dump(
            [{"saga_id": i, "paper": p} for i, p in zip(ids, papers, strict=True)], sys.stdout
        )
        sys.stdout.write("\n")
    else:
        for saga_id, paper in zip(ids, papers, strict=True):
            print(f"{saga_id}  {paper}")
    print(f"submitted {len(ids)} saga(s); status: queued", file=sys.stderr)
    return EXIT_COMPLETED


def paper_graph_for(args: argparse.Namespace) -> Any:
    """The worker's ``graph_for``: the paper saga each saga was submitted with, built once per
    set of recorded settings (outputs, engine, model, router, parallel, pipeline)."""
    built: dict[tuple[Any, ...], Any] = {}
    # A saga writes where it was submitted to write (recorded absolute): the worker's own
    # --outputs is only the default of sagas that recorded none.
    recorded_only = argparse.Namespace(**{**vars(args), "outputs": None})

    def graph_for(saga_input: Mapping[str, Any]) -> Any:
        settings, router = recorded_settings({"input": saga_input}, recorded_only)
        if not (saga_input.get("settings") or {}).get("outputs"):
            settings, router = recorded_settings({"input": saga_input}, args)
        key = (
            settings.outputs,
            settings.llm,
            settings.model,
            settings.parallel,
            settings.pipeline,
            router,
        )
        if key not in built:
            built[key] = paper_graph(settings, router, args=args)
        return built[key]

    return graph_for


def cmd_worker(args: argparse.Namespace) -> int:
    import signal

    # Stopped while it starts: it has taken nothing yet, so it can just leave (exit 0). Once
    # it consumes, run_worker's own handlers take over (finish what is in flight).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(EXIT_COMPLETED))

    from sagagraph.graph.worker import run_worker

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    run_worker(
        paper_graph_for(args),
        queue=args.queue,
        db=settings_from(args).db,
        concurrency=args.concurrency,
        say=say,
    )
    return EXIT_COMPLETED


def queue_summary(views: list[dict[str, Any]], queue_name: str) -> dict[str, Any]:
    """Counts of the sagas submitted to ``queue_name``, from their views."""
    mine = [v for v in views if (v.get("input") or {}).get("queue") == queue_name]
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
    import asyncio

    from sagagraph.graph.runner import list_sagas, saga_config
    from sagagraph.graph.work_queue import queue_address, queue_counts

    address = queue_address(args.queue)
    counts = asyncio.run(queue_counts(address))
    with inspection_app(settings_from(args)) as app:  # reads only: no model key
        views = list_sagas(app)
        for view in views:
            view["input"] = app.get_state(saga_config(view["saga_id"])).values.get("input")
    summary = queue_summary(views, address.name) | {
        "queue": address.name,
        "url": address.shown,
        "workers": counts.consumers,
        "messages_waiting": counts.ready,
        "dead_letters_unrecorded": counts.dead,
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
