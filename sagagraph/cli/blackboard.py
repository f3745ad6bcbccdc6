"""The CLI's blackboard hooks: the paper blackboard graph, and finding blackboard sagas.

``run``, ``resume`` and ``recover`` build the paper saga's graph from its recorded settings
(``mode`` included), so a blackboard saga is always driven by the blackboard graph. ``status``
and ``recover`` first look at sagas through the orchestration graph, which reads the common
fields of any saga but not the board, nor which of a blackboard graph's nodes is due next:
these helpers read blackboard sagas through their own graph.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from sagagraph.config import Settings


def blackboard_status(
    settings: Settings, saga_id: str, view: dict[str, Any] | None
) -> dict[str, Any] | None:
    """``view`` (read through the orchestration graph), or, for a blackboard saga, its view
    read through the blackboard graph: board included, and the right ``next``."""
    from sagagraph.blackboard.board import MODE as BLACKBOARD
    from sagagraph.cli.apps import inspection_app
    from sagagraph.graph.runner import saga_status

    if view is None or view.get("mode") != BLACKBOARD:
        return view
    with inspection_app(replace(settings, mode=BLACKBOARD)) as app:  # reads: no model key
        return saga_status(app, saga_id)


def blackboard_unfinished(settings: Settings) -> list[str]:
    """Blackboard sagas left unfinished (what ``recover`` must resume)."""
    from sagagraph.blackboard.board import MODE as BLACKBOARD
    from sagagraph.cli.apps import checkpoints_may_exist, inspection_app
    from sagagraph.graph.recover import unfinished_sagas

    if not checkpoints_may_exist(settings.db):
        return []
    with inspection_app(replace(settings, mode=BLACKBOARD)) as app:  # reads: no model key
        return unfinished_sagas(app, mode=BLACKBOARD)


def cmd_compare_modes(args: argparse.Namespace) -> int:
    """``sagagraph compare --modes orchestration,choreography,blackboard PAPER...``."""
    from sagagraph.cli.apps import settings_from
    from sagagraph.cli.output import emit_rows
    from sagagraph.compare_modes import compare_modes, parse_modes, render_mode_comparison

    rows = compare_modes(
        args.papers,
        settings=settings_from(args),
        modes=parse_modes(args.modes),
        password=args.password,
        fail_at=args.fail_at,
    )
    return emit_rows(rows, args.json, render_mode_comparison)
