"""The coordination styles side by side: ``sagagraph compare --modes MODE,... PAPER...``.

:func:`compare_modes` runs each paper as the same paper saga under orchestration, choreography
and the blackboard, and returns one row per paper and mode: outcome, steps run, events,
tokens, wall time and output digests (as :mod:`sagagraph.compare` does for the two routers,
whose helpers it uses). :func:`render_mode_comparison` prints the rows as a table.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from sagagraph.blackboard.board import MODE as BLACKBOARD
from sagagraph.checkpoints.urls import default_bus_url, default_db_url
from sagagraph.compare import _paper_definition, _steps_run, _tokens, aligned, output_digest
from sagagraph.errors import ConfigurationError, InputError
from sagagraph.graph.builder import build_saga_graph
from sagagraph.graph.runner import run_saga
from sagagraph.saga.names import new_saga_id
from sagagraph.saga.protocol import SagaDefinition, Usage

if TYPE_CHECKING:
    from sagagraph.agents.paper_app import PaperSettings as Settings


MODES = ("orchestration", "choreography", BLACKBOARD)
"""The coordination styles ``compare_modes`` can run."""


class ModeRun(TypedDict):
    """One paper under one coordination style."""

    paper: str
    mode: str
    """``orchestration``, ``choreography`` or ``blackboard``."""
    saga_id: str
    status: str
    """Final status, or ``error`` when the saga could not start (bad input)."""
    reason: str | None
    route: list[str]
    """Steps (knowledge sources and refinements too) whose execute ran, in order."""
    steps_run: int
    """Distinct steps (knowledge sources and refinements too) whose execute ran."""
    events: int
    """Entries of the audit trail."""
    tokens: Usage
    """Every token the saga spent (steps and any routing)."""
    wall_seconds: float
    outputs: dict[str, str]
    """Step -> SHA-256 (first 16 hex digits) of its output file, saga id normalised."""


def parse_modes(text: str) -> tuple[str, ...]:
    """``"orchestration,blackboard"`` -> the modes; one-line error naming an unknown one."""
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ConfigurationError(
            f"--modes {text!r}: expected a comma-separated list of {', '.join(MODES)}"
        )
    return modes


def _run_mode(
    mode: str, definition: SagaDefinition, checkpointer: Any, paper: str, saga_id: str, **kw: Any
) -> dict[str, Any]:
    """Run one saga under ``mode``; its JSON view."""
    if mode == "choreography":
        from sagagraph.choreography.runner import run_choreographed_saga

        return run_choreographed_saga(
            definition, {"paper": paper}, saga_id, kw["bus"], fail_at=kw["fail_at"]
        )
    app: Any
    if mode == BLACKBOARD:
        from sagagraph.agents.paper_blackboard import paper_blackboard_graph

        app = paper_blackboard_graph(definition).compile(checkpointer=checkpointer)
    else:
        app = build_saga_graph(definition).compile(checkpointer=checkpointer)
    return run_saga(app, {"paper": paper}, saga_id=saga_id, fail_at=kw["fail_at"])


def compare_modes(
    papers: Sequence[str | Path],
    *,
    settings: Settings | None = None,
    modes: Sequence[str] = MODES,
    db: str | None = None,
    bus: str | None = None,
    password: str | None = None,
    fail_at: str | None = None,
) -> list[ModeRun]:
    """Run every paper under every coordination style; one row per paper and mode.

    Every mode runs the paper saga built from ``settings`` (same engine, same outputs folder),
    each with its own definition, so no mode reuses a paper another parsed. Orchestration and
    blackboard sagas are kept in ``db`` (default: the settings' checkpointer), choreographed
    ones on ``bus`` (default: the settings' bus).
    """
    from sagagraph.checkpoints.factory import open_checkpointer

    if settings is None:
        from sagagraph.agents.paper_app import PaperSettings as Settings

        settings = Settings.resolve()
    for mode in modes:
        parse_modes(mode)
    zero: Usage = {"input_tokens": 0, "output_tokens": 0}
    rows: list[ModeRun] = []
    with open_checkpointer(db or default_db_url()) as checkpointer:
        definitions = {mode: _paper_definition(settings, password) for mode in modes}
        for paper in papers:
            for mode in modes:
                saga_id = new_saga_id(f"compare-{mode[:5]}")
                started = time.perf_counter()
                try:
                    view = _run_mode(
                        mode,
                        definitions[mode],
                        checkpointer,
                        str(paper),
                        saga_id,
                        bus=bus or default_bus_url(),
                        fail_at=fail_at,
                    )
                except InputError as error:
                    view = {"status": "error", "reason": str(error), "events": [], "usage": zero}
                    view["outputs"] = {}
                wall = time.perf_counter() - started
                rows.append(
                    ModeRun(
                        paper=str(paper),
                        mode=mode,
                        saga_id=saga_id,
                        status=str(view["status"]),
                        reason=view.get("reason"),
                        route=_steps_run(view["events"]),
                        steps_run=len(_steps_run(view["events"])),
                        events=len(view["events"]),
                        tokens=dict(view["usage"]),  # type: ignore[typeddict-item]
                        wall_seconds=round(wall, 3),
                        outputs={s: output_digest(p, saga_id) for s, p in view["outputs"].items()},
                    )
                )
    return rows


def route_differences(rows: Sequence[ModeRun]) -> list[str]:
    """One line per paper whose modes ran different steps (a refinement, another alternative)."""
    lines: list[str] = []
    for paper in dict.fromkeys(r["paper"] for r in rows):
        routes = {r["mode"]: r["route"] for r in rows if r["paper"] == paper}
        if len({tuple(route) for route in routes.values()}) > 1:
            shown = "; ".join(f"{m}: {' > '.join(r) or '-'}" for m, r in routes.items())
            lines.append(f"{Path(paper).name}: {shown}")
    return lines


def render_mode_comparison(rows: Sequence[ModeRun]) -> str:
    """The rows as a text table: outcome, route, steps run, events, tokens and wall time per
    mode; then the papers whose modes took different routes."""
    header = ("paper", "mode", "outcome", "route", "steps", "events", "tokens in/out", "seconds")
    table = [header] + [
        (
            Path(r["paper"]).name,
            r["mode"],
            r["status"],
            " > ".join(r["route"]) or "-",
            str(r["steps_run"]),
            str(r["events"]),
            _tokens(r["tokens"]),
            f"{r['wall_seconds']:.2f}",
        )
        for r in rows
    ]
    lines = aligned(table)
    differences = route_differences(rows)
    lines.append("")
    if differences:
        lines.append(f"{len(differences)} paper(s) took different routes:")
        lines += [f"  {d}" for d in differences]
    else:
        lines.append("every mode took the same route on every paper")
    return "\n".join(lines)
