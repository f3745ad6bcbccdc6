"""Choreography from the command line: ``sagagraph agent NAME``, ``sagagraph events ID``, and
the choreographed side of ``run``, ``resume`` and ``recover``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sagagraph.cli.flags import PAPER_STEPS
from sagagraph.cli.output import (
    EXIT_COMPLETED,
    duration_text,
    emit,
    format_event,
    print_view,
    trail_lines,
)
from sagagraph.cli.wiring import (
    paper_definition,
    reader_from,
    settings_from,
    store_from,
)
from sagagraph.errors import ConfigurationError
from sagagraph.saga.records import alerts_from_env

if TYPE_CHECKING:
    from sagagraph.agents.paper_app import PaperSettings
    from sagagraph.choreography.bus import EventBus


@contextmanager
def cli_bus(
    args: argparse.Namespace, *, runs_agents: bool, create: bool = True
) -> Iterator[EventBus]:
    """The bus of ``--bus``, signing and checking with ``--bus-key-file`` or the environment's
    key. Agents are not run on an unauthenticated RabbitMQ bus unless ``--insecure-bus``:
    anyone who can publish on the broker could drive the sagas."""
    from sagagraph.choreography.buses import open_bus
    from sagagraph.choreography.signing import load_bus_key

    key = load_bus_key(getattr(args, "bus_key_file", None))
    bus = open_bus(store_from(args).bus, create=create, key=key)
    try:
        if runs_agents and key is None and not getattr(args, "insecure_bus", False):
            refuse_insecure(bus)
        yield bus
    finally:
        bus.close()


def refuse_insecure(bus: EventBus) -> None:
    """ConfigurationError on RabbitMQ: its events would be obeyed from whoever published them."""
    if bus.url.split(":", 1)[0].lower() in ("amqp", "amqps"):
        raise ConfigurationError(
            f"bus {bus.url!r}: no bus key, so anyone who can publish on this broker could "
            "forge events the agents obey; set $SAGAGRAPH_BUS_KEY (or --bus-key-file FILE) "
            "to the same key for every agent and run, or accept the risk with --insecure-bus"
        )


def recorded_outputs(saga_input: Mapping[str, Any]) -> str | None:
    """The absolute outputs folder a choreographed saga was started with (None: not recorded)."""
    outputs = ((saga_input.get("settings") or {}).get("outputs")) if saga_input else None
    return str(outputs) if outputs else None


def definitions_for(
    settings: PaperSettings, loader: Any = None
) -> Callable[[Mapping[str, Any]], Any]:
    """The paper saga's definition for each saga's input: its files go where its ``run``
    said (the recorded outputs folder), wherever this agent process was started. Its model
    is built on the first forward step (compensating needs no key)."""
    cache: dict[str, Any] = {}

    def definition_for(saga_input: Mapping[str, Any]) -> Any:
        outputs = recorded_outputs(saga_input) or str(Path(settings.outputs).resolve())
        if outputs not in cache:
            cache[outputs] = paper_definition(
                dataclasses.replace(settings, outputs=outputs), loader
            )
        return cache[outputs]

    return definition_for


def choreographed_input(paper: str, settings: PaperSettings) -> dict[str, Any]:
    """A choreographed saga's input: the paper and the settings, outputs as an absolute path."""
    outputs = str(Path(settings.outputs).resolve())
    return {"paper": paper, "settings": settings.recorded() | {"outputs": outputs}}


def cmd_agent(args: argparse.Namespace) -> int:
    from sagagraph.choreography.runner import run_step_service

    settings = settings_from(args)
    if args.name not in PAPER_STEPS:
        raise ConfigurationError(f"agent: unknown agent {args.name!r} ({', '.join(PAPER_STEPS)})")
    with cli_bus(args, runs_agents=True) as bus:
        run_step_service(
            paper_definition(settings, forward=True),
            args.name,
            bus,
            definition_for=definitions_for(settings),
            hooks=alerts_from_env(),
            announce=lambda line: print(f"sagagraph: {line}", file=sys.stderr, flush=True),
        )
    return EXIT_COMPLETED


def cmd_events(args: argparse.Namespace) -> int:
    """A choreographed saga's messages on the bus; an orchestrated saga's recorded events
    (its audit trail) when the bus has none for it; SagaNotFoundError when neither knows it."""
    from sagagraph.choreography.runner import saga_events

    with cli_bus(args, runs_agents=False, create=False) as bus:
        # The paper saga's definition tells refused events apart: built only when the log
        # has events of this saga (an orchestrated saga's are read without it).
        events = saga_events(bus, args.saga_id)
        if events:
            events = saga_events(bus, args.saga_id, paper_definition(settings_from(args)))
    if not events:
        return orchestrated_events(args)
    if args.json:
        json.dump(events, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        for message in events:
            step = message.get("step") or "-"
            refused = message.get("refused")
            if refused:
                detail = f"  REFUSED: {refused}"
            else:
                details = [e["detail"] for e in message.get("events") or [] if e.get("detail")]
                detail = f"  {details[-1]}" if details else ""
            took = [duration_text(e) for e in message.get("events") or [] if "duration_ms" in e]
            timing = f"  {', '.join(took)}" if took else ""
            print(f"{message['ts']}  {message['type']:<24} {step:<12}{timing}{detail}")
    return EXIT_COMPLETED


def orchestrated_events(args: argparse.Namespace) -> int:
    """``events ID`` of an orchestrated saga: the events its checkpoints record, one a line
    (``--json``: a JSON array), or a line that says it has recorded none yet."""
    view = reader_from(args).require(args.saga_id)
    events = list(view.get("events") or [])
    if args.json:
        json.dump(events, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    elif not events:
        print(f"saga {args.saga_id!r} ({view.get('mode') or 'orchestration'}): no events yet")
    for event in [] if args.json else events:
        print(f"{event['ts']}  {format_event(event, timed=True).strip()}")
    return EXIT_COMPLETED


def show_trail(view: dict[str, Any]) -> None:
    """Agents ran elsewhere or in threads: show the trail they left, in log order (stderr,
    also under ``--json``)."""
    for line in trail_lines(view.get("events") or []):
        print(line, file=sys.stderr)


def resume_choreography(args: argparse.Namespace) -> int:
    """``resume ID`` of a choreographed saga: its agents finish it (SagaNotFoundError: none)."""
    from sagagraph.choreography.recovery import resume_choreographed

    settings = settings_from(args)
    with cli_bus(args, runs_agents=True, create=False) as bus:
        view = resume_choreographed(
            paper_definition(settings, forward=True),
            args.saga_id,
            bus,
            agents=getattr(args, "agents", None),
            definition_for=definitions_for(settings),
            hooks=alerts_from_env(),
        )
    show_trail(view)
    return emit(view, args.json)


def recover_choreography(args: argparse.Namespace) -> list[dict[str, Any]]:
    """``recover`` for choreographed sagas: the final view of each saga it recovered."""
    from sagagraph.choreography.recovery import recover_choreographed, unfinished_choreographed

    settings = settings_from(args)
    with cli_bus(args, runs_agents=False, create=False) as bus:
        # Agents run only when a saga is unfinished: then not on an open broker.
        insecure = not bus.authenticator.signs and not getattr(args, "insecure_bus", False)
        unfinished = unfinished_choreographed(bus)
        if insecure and unfinished:
            refuse_insecure(bus)
        # Nothing to run forward (nothing unfinished, or all rolled back): no model key needed.
        back = args.compensate or not unfinished
        views = recover_choreographed(
            paper_definition(settings, forward=not back),
            bus,
            compensate=args.compensate,
            agents=getattr(args, "agents", None),
            definition_for=definitions_for(settings),
            hooks=alerts_from_env(),
        )
    for view in views:
        print(f"recovered {view['saga_id']} (choreography)", file=sys.stderr)
        if args.json:
            print(json.dumps(view, default=str))
        else:
            print_view(view, sys.stdout)
    return list(views)
