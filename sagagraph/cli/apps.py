"""Building the paper saga from flags and environment: settings, engine, graph, compiled app."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, TypedDict, Unpack

from sagagraph.config import Settings, load_alert_hook
from sagagraph.errors import ConfigurationError
from sagagraph.saga.escalation import alert_hooks


def settings_from(args: argparse.Namespace) -> Settings:
    return Settings.resolve(
        db=getattr(args, "db", None),
        outputs=getattr(args, "outputs", None),
        llm=getattr(args, "llm", None),
        model=getattr(args, "model", None),
        bus=getattr(args, "bus", None),
        parallel=getattr(args, "parallel", None),
        step_timeout=getattr(args, "step_timeout", None),
        mode=getattr(args, "mode", None),
        pipeline=getattr(args, "pipeline", None),
    )


def pdf_password(args: argparse.Namespace) -> str | None:
    """``--password``, ``--password-file`` or ``$SAGAGRAPH_PDF_PASSWORD`` (hidden from output)."""
    from sagagraph.agents.pdf.loader import resolve_pdf_password

    return resolve_pdf_password(
        getattr(args, "password", None), getattr(args, "password_file", None)
    )


def paper_definition(
    settings: Settings,
    *,
    password: str | None = None,
    loader: Any = None,
    announce: bool = False,
    compensating: bool = False,
) -> Any:
    """The paper saga from settings; ``announce``: each step says on stderr when it starts;
    ``compensating``: the model is built only if a step runs forward (see
    :mod:`sagagraph.cli.deferred_engine`), so rolling back needs no key."""
    from sagagraph.agents.models import make_engine
    from sagagraph.agents.paper_saga import paper_saga_definition
    from sagagraph.agents.pdf.loader import PaperLoader

    if compensating:
        from sagagraph.cli.deferred_engine import DeferredEngine

        engine: Any = DeferredEngine(settings.llm, settings.model)
    else:
        engine = make_engine(settings.llm, settings.model)
    definition = paper_saga_definition(
        engine=engine,
        outputs_dir=settings.outputs,
        loader=loader if loader is not None else PaperLoader(password),
        parallel=settings.parallel,
        step_timeout=settings.step_timeout,
        pipeline=settings.pipeline,
    )
    if announce:
        from sagagraph.cli.progress import announce_steps

        return announce_steps(definition)
    return definition


def router_options(args: argparse.Namespace | None) -> Any:
    """LLM-router options: flags first, then ``SAGAGRAPH_STRUCTURED_OUTPUT``."""
    from sagagraph.graph.router_options import RouterOptions

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
    inspection: bool = False,
    password: str | None = None,
    loader: Any = None,
    args: argparse.Namespace | None = None,
    announce: bool = False,
    compensating: bool = False,
) -> Any:
    from sagagraph.blackboard.board import MODE as BLACKBOARD

    definition = paper_definition(
        settings, password=password, loader=loader, announce=announce, compensating=compensating
    )
    build: Any
    if settings.mode == BLACKBOARD:
        from sagagraph.agents.paper_blackboard import paper_blackboard_graph as build
    else:
        from sagagraph.graph.builder import build_saga_graph as build
    if router != "llm":
        return build(definition, hooks=alert_hooks(load_alert_hook()))
    from sagagraph.agents.models import make_chat_model

    try:
        # Compensating asks no router: a stand-in model, never called, needs no key.
        model = "inspection-only" if inspection or compensating else make_chat_model(settings.model)
    except ConfigurationError:
        raise ConfigurationError(
            "--router llm needs a chat model: set OPENAI_API_KEY (any value for a local "
            "server, with OPENAI_BASE_URL), or use --router deterministic"
        ) from None
    return build(
        definition,
        router="llm",
        router_model=model,
        router_options=router_options(args),
        hooks=alert_hooks(load_alert_hook()),
    )


class GraphOptions(TypedDict, total=False):
    """What :func:`paper_app` passes on to :func:`paper_graph`."""

    inspection: bool
    """Build the graph only to read checkpoints: the LLM router gets a stand-in model that is
    never called, so reading an LLM-routed saga needs no model key."""
    password: str | None
    loader: Any
    args: argparse.Namespace | None
    announce: bool
    compensating: bool
    """The command only compensates or reads the saga (:func:`only_compensates`): no model
    is built unless a step runs forward, so no key is needed to roll back."""


@contextmanager
def paper_app(settings: Settings, router: str, **options: Unpack[GraphOptions]) -> Iterator[Any]:
    """The compiled paper saga on the configured checkpointer."""
    from sagagraph.checkpoints.factory import open_checkpointer

    graph = paper_graph(settings, router, **options)
    with open_checkpointer(settings.db) as checkpointer:
        yield graph.compile(checkpointer=checkpointer)


@contextmanager
def inspection_app(settings: Settings, router: str = "deterministic") -> Iterator[Any]:
    """The paper saga for reading checkpoints only: the offline engine and, for an LLM-routed
    saga, a router model never called, so no key is needed. Read a saga with the router it
    ran with: the deterministic graph has no ``supervisor`` node to resume an LLM-routed one."""
    with paper_app(replace(settings, llm="offline"), router, inspection=True) as app:
        yield app


def only_compensates(view: Mapping[str, Any], *, compensate: bool = False) -> bool:
    """True when driving this saga on runs no step forward, only compensations: it is told to
    roll back (``recover --compensate``), it is on its way back or waiting for an operator
    (``resolve`` retries or skips a compensation), or it has finished (nothing runs)."""
    from sagagraph.saga.names import TERMINAL_STATUSES

    status = view.get("status")
    return (
        compensate
        or bool(view.get("waiting_for_operator"))
        or status in TERMINAL_STATUSES
        or status in ("compensating", "compensation_failed")
    )


def recorded_settings(view: dict[str, Any], args: argparse.Namespace) -> tuple[Settings, str]:
    """Settings a saga was started with (flags given now win), and its router."""
    from sagagraph.agents.store import same_outputs_root

    recorded = ((view.get("input") or {}).get("settings")) or {}
    outputs = getattr(args, "outputs", None)
    if recorded.get("outputs"):
        # The folder the saga started with, whatever the working directory is now.
        outputs = same_outputs_root(str(recorded["outputs"]), outputs, str(view.get("saga_id")))
    settings = Settings.resolve(
        db=getattr(args, "db", None),
        outputs=outputs,
        llm=getattr(args, "llm", None) or recorded.get("llm"),
        model=getattr(args, "model", None) or recorded.get("model"),
        parallel=bool(recorded.get("parallel")),
        step_timeout=getattr(args, "step_timeout", None) or recorded.get("step_timeout"),
        mode=recorded.get("mode"),
        pipeline=recorded.get("pipeline"),
    )
    return settings, str(recorded.get("router") or view.get("router") or "deterministic")


def load_view(args: argparse.Namespace, saga_id: str) -> dict[str, Any]:
    """An orchestrated saga's view with its recorded input; SagaNotFoundError (one line,
    saying when the saga is a choreographed one) otherwise. Creates no database."""
    from sagagraph.errors import SagaNotFoundError
    from sagagraph.graph.runner import saga_input, saga_status

    settings = settings_from(args)
    if checkpoints_may_exist(settings.db):
        with inspection_app(settings) as app:
            try:
                view = saga_status(app, saga_id)
            except SagaNotFoundError:
                view = None
            if view is not None:
                view["input"] = saga_input(app, saga_id)
                return view
    if is_choreographed(settings, saga_id):
        raise SagaNotFoundError(
            f"saga {saga_id!r} is choreographed: its agents carry it on by themselves "
            f"(sagagraph status {saga_id}, sagagraph events {saga_id}); "
            f"{args.command} applies to orchestrated sagas"
        )
    from sagagraph.checkpoints.urls import redact_url

    raise SagaNotFoundError(f"saga {saga_id!r}: not found in {redact_url(settings.db)}")


def not_found(saga_id: str, settings: Settings) -> str:
    """``saga 'X': not found in DB (checkpointer) nor on BUS (event log)``, passwords masked:
    a typo in ``--db`` or ``$SAGAGRAPH_DB`` shows at once."""
    from sagagraph.checkpoints.urls import redact_url

    return (
        f"saga {saga_id!r}: not found in {redact_url(settings.db)} (checkpointer) "
        f"nor on {redact_url(settings.bus)} (event log)"
    )


def is_choreographed(settings: Settings, saga_id: str) -> bool:
    from sagagraph.errors import SagaGraphError

    try:
        from sagagraph.choreography.runner import choreography_status

        choreography_status(settings.bus, saga_id)
    except (SagaGraphError, ImportError):
        return False
    return True


def saga_status_or_none(app: Any, saga_id: str) -> dict[str, Any] | None:
    from sagagraph.errors import SagaNotFoundError
    from sagagraph.graph.runner import saga_status

    try:
        return saga_status(app, saga_id)
    except SagaNotFoundError:
        return None


def checkpoints_may_exist(db_url: str) -> bool:
    """False only for a SQLite checkpointer whose file does not exist yet."""
    from sagagraph.checkpoints.urls import sqlite_path

    return not db_url.startswith("sqlite:///") or sqlite_path(db_url).exists()
