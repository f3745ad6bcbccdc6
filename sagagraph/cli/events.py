"""Choreography from the command line: ``sagagraph agent NAME`` and ``sagagraph events ID``."""

from __future__ import annotations

import argparse
import json
import sys

from sagagraph.cli.apps import PAPER_STEPS, paper_definition, settings_from
from sagagraph.cli.output import EXIT_COMPLETED
from sagagraph.errors import ConfigurationError, InputError


def cmd_agent(args: argparse.Namespace) -> int:
    from sagagraph.choreography.runner import run_agent

    settings = settings_from(args)
    if args.name not in PAPER_STEPS:
        raise ConfigurationError(f"agent: unknown agent {args.name!r} ({', '.join(PAPER_STEPS)})")
    run_agent(paper_definition(settings), args.name, settings.bus)
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
