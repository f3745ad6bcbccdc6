"""Choreography from the command line: ``sagagraph agent NAME``, ``sagagraph events ID``, and
the choreographed side of ``run``, ``resume`` and ``recover``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sagagraph.cli.apps import paper_definition, settings_from
from sagagraph.cli.flags import PAPER_STEPS
from sagagraph.cli.output import EXIT_COMPLETED, emit, format_event, print_view
from sagagraph.config import Settings, load_alert_hook
from sagagraph.errors import ConfigurationError, InputError


def recorded_outputs(saga_input: Mapping[str, Any]) -> str | None:
    """The absolute outputs folder a choreographed saga was started with (None: not recorded)."""
    outputs = ((saga_input.get("settings") or {}).get("outputs")) if saga_input else None
    return str(outputs) if outputs else None


def definitions_for(settings: Settings, loader: Any = None) -> Callable[[Mapping[str, Any]], Any]:
    """The paper saga's definition for each saga's input: its files go where its ``run``
    said (the recorded outputs folder), wherever this agent process was started."""
    cache: dict[str, Any] = {}

    def definition_for(saga_input: Mapping[str, Any]) -> Any:
        outputs = recorded_outputs(saga_input) or str(Path(settings.outputs).resolve())
        if outputs not in cache:
            cache[outputs] = paper_definition(
                dataclasses.replace(settings, outputs=outputs), loader=loader
            )
        return cache[outputs]

    return definition_for


def choreographed_input(paper: str, settings: Settings) -> dict[str, Any]:
    """A choreographed saga's input: the paper and the settings, outputs as an absolute path."""
    outputs = str(Path(settings.outputs).resolve())
    return {"paper": paper, "settings": settings.recorded() | {"outputs": outputs}}


def cmd_agent(args: argparse.Namespace) -> int:
    from sagagraph.choreography.runner import run_agent

    settings = settings_from(args)
    if args.name not in PAPER_STEPS:
        raise ConfigurationError(f"agent: unknown agent {args.name!r} ({', '.join(PAPER_STEPS)})")
    run_agent(
        paper_definition(settings),
        args.name,
        settings.bus,
        definition_for=definitions_for(settings),
        on_escalation=load_alert_hook(),
        announce=lambda line: print(f"sagagraph: {line}", file=sys.stderr, flush=True),
    )
    return EXIT_COMPLETED


def cmd_events(args: argparse.Namespace) -> int:
    from sagagraph.choreography.runner import saga_events

    events = saga_events(settings_from(args).bus, args.saga_id)
    if not events:
        raise InputError(f"saga {args.saga_id!r}: no events on {settings_from(args).bus!r}")
    if args.json:
        json.dump(events, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        for message in events:
            step = message.get("step") or "-"
            details = [e["detail"] for e in message.get("events") or [] if e.get("detail")]
            detail = f"  {details[-1]}" if details else ""
            print(f"{message['ts']}  {message['type']:<24} {step:<12}{detail}")
    return EXIT_COMPLETED


def show_trail(view: dict[str, Any]) -> None:
    """Agents ran elsewhere or in threads: show the trail they left, in log order (stderr,
    also under ``--json``)."""
    for event in view.get("events") or []:
        print(format_event(event), file=sys.stderr)


def resume_choreography(args: argparse.Namespace) -> int:
    """``resume ID`` of a choreographed saga: its agents finish it (SagaNotFoundError: none)."""
    from sagagraph.choreography.recovery import resume_choreographed

    settings = settings_from(args)
    view = resume_choreographed(
        paper_definition(settings),
        args.saga_id,
        settings.bus,
        agents=getattr(args, "agents", None),
        definition_for=definitions_for(settings),
        on_escalation=load_alert_hook(),
    )
    show_trail(view)
    return emit(view, args.json)


def recover_choreography(args: argparse.Namespace) -> list[dict[str, Any]]:
    """``recover`` for choreographed sagas: the final view of each saga it recovered."""
    from sagagraph.choreography.recovery import recover_choreographed

    settings = settings_from(args)
    views = recover_choreographed(
        paper_definition(settings),
        settings.bus,
        compensate=args.compensate,
        agents=getattr(args, "agents", None),
        definition_for=definitions_for(settings),
        on_escalation=load_alert_hook(),
    )
    for view in views:
        print(f"recovered {view['saga_id']} (choreography)", file=sys.stderr)
        if args.json:
            print(json.dumps(view, default=str))
        else:
            print_view(view, sys.stdout)
    return list(views)
