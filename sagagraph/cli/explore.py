"""``sagagraph graph`` (Mermaid text of the saga) and ``sagagraph compare`` (both routers)."""

from __future__ import annotations

import argparse

from sagagraph.cli.apps import pdf_password, router_options, settings_from
from sagagraph.cli.output import EXIT_COMPLETED, emit_rows
from sagagraph.config import Settings


def cmd_graph(args: argparse.Namespace) -> int:
    """LangGraph's drawing of the paper saga (:mod:`sagagraph.cli.drawing`)."""
    from sagagraph.cli.drawing import langgraph_drawing

    Settings.resolve(llm="offline")  # the environment is checked, as for every command
    print(langgraph_drawing(args.router, args.parallel, args.pipeline))
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
