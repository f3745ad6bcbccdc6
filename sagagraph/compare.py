"""Deterministic vs LLM routing, side by side: ``sagagraph compare PAPER...``.

:func:`compare_routers` runs each paper as a saga under each router and returns one row per
paper and router (JSON-ready dicts); :func:`render_comparison` prints them as a text table,
followed by where the two routers disagreed. Both routers run the same saga definition (the
paper saga by default) with the same engine, on the same checkpointer, so the only difference
is who decides the next step.

The ``route`` of a row is the steps that ran, in order, then how the saga ended: ``finish``
(completed), ``compensate`` (rolled back) or ``escalate`` (waiting for an operator). Outputs
are compared by content: each output file's SHA-256, computed with the saga id replaced by
``<saga_id>``, since the two runs necessarily have different ids.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from sagagraph.checkpoints.urls import default_db_url
from sagagraph.errors import ConfigurationError, InputError
from sagagraph.graph.builder import RouterKind, build_saga_graph
from sagagraph.graph.nodes import SUPERVISOR
from sagagraph.graph.routing import RouterOptions
from sagagraph.graph.runner import run_saga, saga_config
from sagagraph.saga.names import new_saga_id
from sagagraph.saga.protocol import SagaDefinition, Usage

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from sagagraph.agents.paper_app import PaperSettings as Settings

ROUTERS: tuple[RouterKind, ...] = ("deterministic", "llm")
_ENDINGS = {"completed": "finish", "compensation_failed": "escalate", "running": "(stopped)"}


class RouterRun(TypedDict):
    """One paper under one router."""

    paper: str
    """The paper (or input label) as given."""
    router: str
    """``deterministic`` or ``llm``."""
    saga_id: str
    status: str
    """Final status, or ``error`` when the saga could not start (bad input)."""
    reason: str | None
    route: list[str]
    """Steps that ran, in order, then ``finish``, ``compensate`` or ``escalate``."""
    steps_run: int
    """Distinct steps whose execute ran (whatever its outcome)."""
    compensated: list[str]
    rejections: int
    """Router proposals the guard (or the parser) rejected."""
    fallbacks: int
    """Routing decisions the fallback took after the model's proposals were all rejected."""
    router_calls: int
    """Chat-model calls made to route (0 under the deterministic router)."""
    tokens: Usage
    """Tokens the steps spent (routing excluded)."""
    routing_tokens: Usage
    """Tokens the router spent."""
    wall_seconds: float
    outputs: dict[str, str]
    """Step -> SHA-256 (first 16 hex digits) of its output file, saga id normalised."""


def output_digest(path: str | Path, saga_id: str) -> str:
    """SHA-256 (16 hex digits) of a file's text with ``saga_id`` replaced; ``missing`` if gone."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "missing"
    return hashlib.sha256(text.replace(saga_id, "<saga_id>").encode()).hexdigest()[:16]


def _steps_run(events: Sequence[Mapping[str, Any]]) -> list[str]:
    order: list[str] = []
    for event in events:
        if event["action"] == "execute" and event["step"] not in order:
            order.append(event["step"])
    return order


def _minus(total: Mapping[str, int], part: Mapping[str, int]) -> Usage:
    return {
        "input_tokens": int(total.get("input_tokens", 0)) - int(part.get("input_tokens", 0)),
        "output_tokens": int(total.get("output_tokens", 0)) - int(part.get("output_tokens", 0)),
    }


def run_row(
    app: Any,
    paper: str,
    router: str,
    input: Mapping[str, Any],
    saga_id: str,
    *,
    fail_at: str | None = None,
) -> RouterRun:
    """Run one saga on a compiled graph and describe it as a comparison row."""
    zero: Usage = {"input_tokens": 0, "output_tokens": 0}
    started = time.perf_counter()
    try:
        view = run_saga(app, input, saga_id=saga_id, fail_at=fail_at)
    except InputError as error:
        return RouterRun(
            paper=paper,
            router=router,
            saga_id=saga_id,
            status="error",
            reason=str(error),
            route=[],
            steps_run=0,
            compensated=[],
            rejections=0,
            fallbacks=0,
            router_calls=0,
            tokens=zero,
            routing_tokens=zero,
            wall_seconds=round(time.perf_counter() - started, 3),
            outputs={},
        )
    wall = time.perf_counter() - started
    counters = app.get_state(saga_config(saga_id)).values.get("route") or {}
    ran = _steps_run(view["events"])
    routing = view["usage_by_step"].get(SUPERVISOR, zero)
    return RouterRun(
        paper=paper,
        router=router,
        saga_id=saga_id,
        status=view["status"],
        reason=view["reason"],
        route=[*ran, _ENDINGS.get(view["status"], "compensate")],
        steps_run=len(ran),
        compensated=list(view["compensated"]),
        rejections=int(counters.get("rejected", 0)),
        fallbacks=int(counters.get("fallbacks", 0)),
        router_calls=int(counters.get("calls", 0)),
        tokens=_minus(view["usage"], routing),
        routing_tokens={
            "input_tokens": int(routing.get("input_tokens", 0)),
            "output_tokens": int(routing.get("output_tokens", 0)),
        },
        wall_seconds=round(wall, 3),
        outputs={s: output_digest(p, saga_id) for s, p in view["outputs"].items()},
    )


def _paper_definition(settings: Settings, password: str | None) -> SagaDefinition:
    from sagagraph.agents.models import make_engine
    from sagagraph.agents.paper_saga import paper_saga_definition

    engine = make_engine(settings.llm, settings.model)
    return paper_saga_definition(
        engine=engine, outputs_dir=settings.outputs, password=password, pipeline=settings.pipeline
    )


def _router_model(settings: Settings) -> BaseChatModel:
    from sagagraph.agents.models import make_chat_model

    try:
        return make_chat_model(settings.model)
    except ConfigurationError:
        raise ConfigurationError(
            "compare: the LLM router needs a chat model: set OPENAI_API_KEY (any value for a "
            "local server) and OPENAI_BASE_URL for a server other than OpenAI"
        ) from None


def compare_routers(
    papers: Sequence[str | Path],
    *,
    settings: Settings | None = None,
    definition: SagaDefinition | Callable[[], SagaDefinition] | None = None,
    router_model: BaseChatModel | None = None,
    router_options: RouterOptions | None = None,
    db: str | None = None,
    password: str | None = None,
    fail_at: str | None = None,
    routers: Sequence[RouterKind] = ROUTERS,
) -> list[RouterRun]:
    """Run every paper under every router; one row per paper and router, in that order.

    ``definition`` defaults to the paper saga built from ``settings`` (engine, outputs folder;
    default :meth:`Settings.resolve`), with input ``{"paper": path}``. A callable is called
    once per router, so each router gets its own services (the paper saga's loader caches
    papers: sharing it would let the second router skip the PDF parsing the first paid for).
    ``router_model`` defaults to the chat model ``settings`` names (``OPENAI_API_KEY``,
    ``OPENAI_BASE_URL``), ``router_options`` to :meth:`RouterOptions.from_env`.

    Sagas are kept in ``db`` (default: the settings' checkpointer), so each can be inspected
    afterwards with ``sagagraph status ID``. ``fail_at`` injects a failure into that step of
    every run (``--fail-at``), to compare compensation.
    """
    from sagagraph.checkpoints.factory import open_checkpointer

    if settings is None and (definition is None or ("llm" in routers and router_model is None)):
        from sagagraph.agents.paper_app import PaperSettings as Settings

        settings = Settings.resolve()
    paper_settings = settings

    def definition_for_one_router() -> SagaDefinition:
        if definition is None:
            assert paper_settings is not None
            return _paper_definition(paper_settings, password)
        return definition() if callable(definition) else definition

    if "llm" in routers and router_model is None:
        assert settings is not None
        router_model = _router_model(settings)
    url = db or (default_db_url() if settings is not None else "memory://")
    rows: list[RouterRun] = []
    with open_checkpointer(url) as checkpointer:
        apps = {
            router: build_saga_graph(
                definition_for_one_router(),
                router,
                router_model=router_model if router == "llm" else None,
                router_options=router_options or RouterOptions.from_env(),
            ).compile(checkpointer=checkpointer)
            for router in routers
        }
        for paper in papers:
            for router in routers:
                saga_id = new_saga_id(f"compare-{router[:3]}")
                rows.append(
                    run_row(
                        apps[router],
                        str(paper),
                        router,
                        {"paper": str(paper)},
                        saga_id,
                        fail_at=fail_at,
                    )
                )
    return rows


def disagreements(rows: Sequence[RouterRun]) -> list[str]:
    """One line per paper where the routers ended differently or wrote different outputs."""
    lines: list[str] = []
    by_paper: dict[str, list[RouterRun]] = {}
    for row in rows:
        by_paper.setdefault(row["paper"], []).append(row)
    for paper, runs in by_paper.items():
        first: Mapping[str, object] = runs[0]
        for run in runs[1:]:
            other: Mapping[str, object] = run
            for field in ("status", "route", "outputs"):
                if first[field] != other[field]:
                    lines.append(
                        f"{paper}: {field} differs: {first['router']} {first[field]} "
                        f"vs {other['router']} {other[field]}"
                    )
    return lines


def _tokens(usage: Usage) -> str:
    return f"{usage['input_tokens']}/{usage['output_tokens']}"


def render_comparison(rows: Sequence[RouterRun]) -> str:
    """The rows as a text table, then the disagreements (or that there were none)."""
    header = (
        "paper",
        "router",
        "status",
        "route",
        "steps",
        "rejected",
        "fallbacks",
        "calls",
        "step tok in/out",
        "route tok in/out",
        "seconds",
    )
    table = [header] + [
        (
            Path(r["paper"]).name,
            r["router"],
            r["status"],
            " > ".join(r["route"]) or "-",
            str(r["steps_run"]),
            str(r["rejections"]),
            str(r["fallbacks"]),
            str(r["router_calls"]),
            _tokens(r["tokens"]),
            _tokens(r["routing_tokens"]),
            f"{r['wall_seconds']:.2f}",
        )
        for r in rows
    ]
    lines = aligned(table)
    differences = disagreements(rows)
    lines.append("")
    if differences:
        lines.append(f"{len(differences)} disagreement(s):")
        lines += [f"  {d}" for d in differences]
    else:
        lines.append("the routers agree on every paper (status, route, outputs)")
    return "\n".join(lines)


def aligned(table: Sequence[Sequence[str]]) -> list[str]:
    """Lines of a text table: the header row, a rule, then each row, columns left-aligned."""
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in table
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines
