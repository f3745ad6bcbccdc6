"""``sagagraph run``: one paper through the saga, orchestrated or choreographed."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from sagagraph.agents.outputs_root import usable_outputs_root
from sagagraph.cli.apps import (
    PAPER_STEPS,
    paper_app,
    paper_definition,
    pdf_password,
    saga_status_or_none,
    settings_from,
)
from sagagraph.cli.output import emit, format_event, progress_printer
from sagagraph.config import Settings
from sagagraph.errors import ConfigurationError, InputError


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
    # An explicit --saga-id '' is refused, not replaced by a new id.
    saga_id = validate_saga_id(new_saga_id() if args.saga_id is None else args.saga_id)
    # An outputs folder that cannot hold files is refused before anything is written; it is
    # recorded absolute, so resume and recover write to it from any working directory.
    settings = replace(settings, outputs=str(usable_outputs_root(settings.outputs)))
    # Unreadable input ends here, with exit 2, before any saga or output exists. The loader
    # caches what it parsed, so the saga's steps do not read the PDF again.
    loader = PaperLoader(pdf_password(args))
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
