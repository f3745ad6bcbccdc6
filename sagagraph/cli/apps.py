"""Building the paper saga from flags and environment: settings, engine, graph, compiled app."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sagagraph.config import Settings, load_alert_hook
from sagagraph.errors import ConfigurationError

PAPER_STEPS = ("validator", "reviewer", "summarizer")


def settings_from(args: argparse.Namespace) -> Settings:
    return Settings.resolve(
        db=getattr(args, "db", None),
        outputs=getattr(args, "outputs", None),
        llm=getattr(args, "llm", None),
        model=getattr(args, "model", None),
        bus=getattr(args, "bus", None),
        parallel=getattr(args, "parallel", None),
        mode=getattr(args, "mode", None),
    )


def paper_definition(settings: Settings, *, password: str | None = None, loader: Any = None) -> Any:
    from sagagraph.agents.models import make_engine
    from sagagraph.agents.paper_loader import PaperLoader
    from sagagraph.agents.paper_saga import paper_saga_definition

    engine = make_engine(settings.llm, settings.model)
    return paper_saga_definition(
        engine=engine,
        outputs_dir=settings.outputs,
        loader=loader if loader is not None else PaperLoader(password),
        parallel=settings.parallel,
    )


def router_options(args: argparse.Namespace | None) -> Any:
    """LLM-router options: flags first, then ``SAGAGRAPH_STRUCTURED_OUTPUT``."""
    from sagagraph.graph.llm_router import RouterOptions

    overrides: dict[str, Any] = {}
    if args is not None and getattr(args, "router_attempts", None):
        overrides["max_attempts"] = args.router_attempts
    if args is not None and getattr(args, "router_fallback", None):
        overrides["fallback"] = args.router_fallback
    return RouterOptions.from_env(**overrides)


def paper_graph(
    settings: Settings,
    router: str,
    *,
    password: str | None = None,
    loader: Any = None,
    args: argparse.Namespace | None = None,
) -> Any:
    from sagagraph.graph.builder import build_saga_graph

    definition = paper_definition(settings, password=password, loader=loader)
    from sagagraph.blackboard.board import MODE as BLACKBOARD

    if settings.mode == BLACKBOARD:
        from sagagraph.cli.blackboard import blackboard_graph

        return blackboard_graph(definition, router, args, settings.model)
    if router == "llm":
        from sagagraph.agents.models import make_chat_model

        try:
            model = make_chat_model(settings.model)
        except ConfigurationError as error:
            raise ConfigurationError(
                f"--router llm needs a chat model: {error} (or use --router deterministic)"
            ) from None
        return build_saga_graph(
            definition,
            router="llm",
            router_model=model,
            router_options=router_options(args),
            on_escalation=load_alert_hook(),
        )
    return build_saga_graph(definition, on_escalation=load_alert_hook())


@contextmanager
def paper_app(
    settings: Settings,
    router: str,
    *,
    password: str | None = None,
    loader: Any = None,
    args: argparse.Namespace | None = None,
) -> Iterator[Any]:
    """The compiled paper saga on the configured checkpointer."""
    from sagagraph.checkpoints.factory import open_checkpointer

    graph = paper_graph(settings, router, password=password, loader=loader, args=args)
    with open_checkpointer(settings.db) as checkpointer:
        yield graph.compile(checkpointer=checkpointer)


def recorded_settings(view: dict[str, Any], args: argparse.Namespace) -> tuple[Settings, str]:
    """Settings a saga was started with (flags given now win), and its router."""
    recorded = ((view.get("input") or {}).get("settings")) or {}
    settings = Settings.resolve(
        db=getattr(args, "db", None),
        outputs=getattr(args, "outputs", None) or recorded.get("outputs"),
        llm=getattr(args, "llm", None) or recorded.get("llm"),
        model=getattr(args, "model", None) or recorded.get("model"),
        parallel=bool(recorded.get("parallel")),
        mode=recorded.get("mode"),
    )
    return settings, str(recorded.get("router") or view.get("router") or "deterministic")


def load_view(args: argparse.Namespace, saga_id: str) -> dict[str, Any]:
    from sagagraph.graph.runner import saga_config, saga_status

    with paper_app(settings_from(args), "deterministic") as app:
        view = saga_status(app, saga_id)
        view["input"] = app.get_state(saga_config(saga_id)).values.get("input") or {}
        return view


def saga_status_or_none(app: Any, saga_id: str) -> dict[str, Any] | None:
    from sagagraph.errors import SagaNotFoundError
    from sagagraph.graph.runner import saga_status

    try:
        return saga_status(app, saga_id)
    except SagaNotFoundError:
        return None


def checkpoints_may_exist(db_url: str) -> bool:
    """False only for a SQLite checkpointer whose file does not exist yet."""
    from sagagraph.checkpoints.factory import sqlite_path

    return not db_url.startswith("sqlite:///") or sqlite_path(db_url).exists()
