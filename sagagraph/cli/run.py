"""``sagagraph run``: one paper through the saga, orchestrated or choreographed.

The saga id is announced once the saga can start: its input was read and its model (and
router) were set up, so a refused paper or a missing key never names a saga that ``status``
cannot find. Every long phase shows progress on stderr, also under ``--json``.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from sagagraph.agents.paper_app import PAPER_APP, PaperSettings
from sagagraph.agents.paper_saga import ADAPTIVE_STEPS
from sagagraph.agents.store import usable_outputs_root
from sagagraph.cli.flags import CHOREOGRAPHY, ORCHESTRATION, run_label
from sagagraph.cli.interrupt import during, interruptible
from sagagraph.cli.output import emit, page_printer, progress_printer, say
from sagagraph.cli.wiring import paper_definition, pdf_password, service_from, settings_from
from sagagraph.errors import ConfigurationError, InputError
from sagagraph.saga.records import alerts_from_env


def check_flags(args: argparse.Namespace) -> None:
    """Refuse flag combinations that cannot run, in the CLI's words."""
    if args.parallel and args.mode != ORCHESTRATION:
        raise ConfigurationError("--parallel needs --mode orchestration")
    if args.parallel and args.router != "deterministic":
        raise ConfigurationError("--parallel needs --router deterministic")
    if args.pipeline == "adaptive" and args.mode == CHOREOGRAPHY:
        raise ConfigurationError("--pipeline adaptive needs --mode orchestration or blackboard")
    if args.pipeline == "adaptive" and args.parallel:
        raise ConfigurationError("--pipeline adaptive runs as a chain: not with --parallel")
    if args.fail_at in ("survey_reviewer", "reproducibility") and args.pipeline != "adaptive":
        raise ConfigurationError(f"--fail-at {args.fail_at} needs --pipeline adaptive")
    if args.router != "deterministic" and args.mode == CHOREOGRAPHY:
        raise ConfigurationError("--router llm needs --mode orchestration or --mode blackboard")


def cmd_run(args: argparse.Namespace) -> int:
    from sagagraph.agents.pdf.loader import PaperLoader
    from sagagraph.saga.names import new_saga_id, validate_saga_id

    check_flags(args)
    settings = settings_from(args)
    # An explicit --saga-id '' is refused, not replaced by a new id.
    saga_id = validate_saga_id(new_saga_id() if args.saga_id is None else args.saga_id)
    if args.mode != CHOREOGRAPHY:  # choreography's records are JSON, which keeps any name
        from sagagraph.graph.runner import check_storable_input

        check_storable_input({"paper": str(Path(args.paper).resolve())})
    # An outputs folder that cannot hold files is refused before anything is written; it is
    # recorded absolute, so resume and recover write to it from any working directory.
    settings = replace(settings, outputs=str(usable_outputs_root(settings.outputs)))
    loader = PaperLoader(pdf_password(args))
    saga_input = {"paper": str(Path(args.paper).resolve()), "settings": settings.recorded()}
    # A model (or router) that cannot be set up is refused first: before the paper is read
    # (a long PDF takes seconds), and before the saga is announced.
    if args.mode == CHOREOGRAPHY:
        paper_definition(settings, forward=True)
    else:
        service = service_from(args, loader)
        service.definitions.check_forward({"input": saga_input}, "run", PAPER_APP)
    # Unreadable input ends here, with exit 2, before any saga or output exists. The loader
    # caches what it parsed, so the saga's steps do not read the PDF again.
    on_page = page_printer(repr(Path(args.paper).name)[1:-1])
    during(lambda: loader.load(args.paper, on_page=on_page), None)
    # Absolute, so that resume, recover and choreography agents find it from any folder.
    args.original_paper = args.paper
    args.paper = str(Path(args.paper).resolve())
    if args.mode == CHOREOGRAPHY:
        return run_choreography(args, settings, saga_id, loader)
    if service.exists(saga_id, mode="orchestration"):
        raise InputError(f"saga {saga_id!r}: already exists; use: sagagraph resume {saga_id}")
    announce_saga(args, saga_id)

    def run() -> dict[str, Any]:
        # The run holds the saga's lease while it runs: `recover` elsewhere leaves it alone.
        steps = ADAPTIVE_STEPS if settings.pipeline == "adaptive" else ()
        return service.run(
            PAPER_APP,
            saga_input,
            saga_id=saga_id,
            fail_at=args.fail_at,
            hooks=progress_printer(steps),
        )

    view = interruptible(run, saga_id)
    return emit(view, args.json)


def announce_saga(args: argparse.Namespace, saga_id: str) -> None:
    """``saga ID: PAPER (how it is coordinated)`` on stderr, the first line of a saga's run."""
    shown = args.original_paper
    shown = shown if shown.isprintable() else repr(shown)
    say(f"saga {saga_id}: {shown} ({run_label(args.mode, args.router)})")


def run_choreography(
    args: argparse.Namespace, settings: PaperSettings, saga_id: str, loader: Any
) -> int:
    from sagagraph.choreography.runner import run_choreographed_saga
    from sagagraph.cli.events import choreographed_input, cli_bus, definitions_for, show_trail

    definition = paper_definition(settings, loader, forward=True)
    with cli_bus(args, runs_agents=True) as bus:
        announce_saga(args, saga_id)

        def run() -> dict[str, Any]:
            view: dict[str, Any] = run_choreographed_saga(
                definition,
                choreographed_input(str(args.paper), settings),
                saga_id=saga_id,
                bus_url=bus,
                fail_at=args.fail_at,
                agents=getattr(args, "agents", None),
                definition_for=definitions_for(settings, loader=loader),
                hooks=alerts_from_env(),
            )
            return view

        view = interruptible(run, saga_id)
    show_trail(view)
    return emit(view, args.json)
