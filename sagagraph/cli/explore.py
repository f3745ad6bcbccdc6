"""``sagagraph graph`` (Mermaid text of the saga) and ``sagagraph compare`` (both routers)."""

from __future__ import annotations

import argparse

from sagagraph.cli.apps import pdf_password, router_options, settings_from
from sagagraph.cli.output import EXIT_COMPLETED, emit_rows
from sagagraph.config import Settings


def cmd_graph(args: argparse.Namespace) -> int:
    settings = Settings.resolve(llm="offline")
    from sagagraph.agents.paper_saga import paper_saga_definition
    from sagagraph.graph.builder import build_saga_graph

    definition = paper_saga_definition(outputs_dir=settings.outputs, parallel=args.parallel)
    router_model = None
    if args.router == "llm":
        # Drawing never calls the model; a named stand-in keeps `graph` free of API keys.
        router_model = "drawing-only"
    graph = build_saga_graph(definition, router=args.router, router_model=router_model)
    print(graph.compile().get_graph().draw_mermaid())
    return EXIT_COMPLETED


def cmd_compare(args: argparse.Namespace) -> int:
    from sagagraph.compare import compare_routers, render_comparison

    if args.modes:
        from sagagraph.cli.blackboard import cmd_compare_modes

        return cmd_compare_modes(args)
    rows = compare_routers(
        args.papers,
        settings=settings_from(args),
        router_options=router_options(args),
        password=pdf_password(args),
        fail_at=args.fail_at,
    )
    return emit_rows(rows, args.json, render_comparison)
