"""``sagagraph graph`` (Mermaid text of the saga) and ``sagagraph compare`` (both routers)."""

from __future__ import annotations

import argparse

from sagagraph.agents.paper_app import PaperSettings
from sagagraph.cli.output import EXIT_COMPLETED, emit_rows
from sagagraph.cli.wiring import pdf_password, router_options, settings_from, store_from


def cmd_graph(args: argparse.Namespace) -> int:
    """LangGraph's drawing of the paper saga (:mod:`sagagraph.cli.drawing`)."""
    from sagagraph.cli.drawing import langgraph_drawing

    PaperSettings.resolve(llm="offline")  # the environment is checked, as for every command
    if getattr(args, "app", None):
        from sagagraph.graph.sides import sides_drawing

        print(sides_drawing(args.app))
        return EXIT_COMPLETED
    print(langgraph_drawing(args.router, args.parallel, args.pipeline))
    return EXIT_COMPLETED


def cmd_compare(args: argparse.Namespace) -> int:
    from sagagraph.compare import compare_routers, render_comparison

    if args.modes:
        return cmd_compare_modes(args)
    rows = compare_routers(
        args.papers,
        settings=settings_from(args),
        db=store_from(args).db,
        router_options=router_options(args),
        password=pdf_password(args),
        fail_at=args.fail_at,
    )
    return emit_rows(rows, args.json, render_comparison)


def cmd_compare_modes(args: argparse.Namespace) -> int:
    """``sagagraph compare --modes orchestration,choreography,blackboard PAPER...``."""
    from sagagraph.compare_modes import compare_modes, parse_modes, render_mode_comparison

    store = store_from(args)
    rows = compare_modes(
        args.papers,
        settings=settings_from(args),
        modes=parse_modes(args.modes),
        db=store.db,
        bus=store.bus,
        password=args.password,
        fail_at=args.fail_at,
    )
    return emit_rows(rows, args.json, render_mode_comparison)
