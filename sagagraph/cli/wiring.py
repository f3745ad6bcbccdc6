"""From flags to the application core: the store, the paper app and the service a command
acts through. Flags first, then the environment (``SAGAGRAPH_DB``, ``SAGAGRAPH_BUS``,
``SAGAGRAPH_QUEUE``, ``SAGAGRAPH_APP``, ``SAGAGRAPH_ALERT_HOOK``...).

The paper app and LangGraph are loaded by the commands that build or act on a saga; a
reading command (:func:`reader_from`) loads neither.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from sagagraph.saga.records import alerts_from_env
from sagagraph.service import SagaService, SagaStore

if TYPE_CHECKING:
    from sagagraph.agents.paper_app import PaperApp, PaperSettings


def store_from(args: argparse.Namespace) -> SagaStore:
    return SagaStore.from_env(
        getattr(args, "db", None), getattr(args, "bus", None), getattr(args, "queue", None)
    )


def settings_from(args: argparse.Namespace) -> PaperSettings:
    """A new paper saga's settings from its flags."""
    from sagagraph.agents.paper_app import PaperSettings

    return PaperSettings.resolve(
        outputs=getattr(args, "outputs", None),
        llm=getattr(args, "llm", None),
        model=getattr(args, "model", None),
        parallel=getattr(args, "parallel", None),
        step_timeout=getattr(args, "step_timeout", None),
        mode=getattr(args, "mode", None),
        pipeline=getattr(args, "pipeline", None),
        router=getattr(args, "router", None),
    )


def pdf_password(args: argparse.Namespace) -> str | None:
    """``--password``, ``--password-file`` or ``$SAGAGRAPH_PDF_PASSWORD`` (hidden from output)."""
    from sagagraph.agents.pdf.loader import resolve_pdf_password

    return resolve_pdf_password(
        getattr(args, "password", None), getattr(args, "password_file", None)
    )


def router_options(args: argparse.Namespace | None) -> Any:
    """LLM-router options: flags first, then ``SAGAGRAPH_STRUCTURED_OUTPUT``."""
    from sagagraph.graph.routing import RouterOptions

    overrides: dict[str, Any] = {}
    if args is not None and getattr(args, "router_attempts", None):
        overrides["max_attempts"] = args.router_attempts
    if args is not None and getattr(args, "router_fallback", None):
        overrides["fallback"] = args.router_fallback
    return RouterOptions.from_env(**overrides)


def paper_app_from(args: argparse.Namespace, loader: Any = None) -> PaperApp:
    """The paper saga's factory, with the flags that may change a saga's recorded settings."""
    from sagagraph.agents.paper_app import Overrides, PaperApp

    wants_password = (
        getattr(args, "password", None) is not None
        or getattr(args, "password_file", None) is not None
        or os.environ.get("SAGAGRAPH_PDF_PASSWORD")
    )
    if loader is None and wants_password:
        from sagagraph.agents.pdf.loader import PaperLoader

        loader = PaperLoader(pdf_password(args))
    overrides = Overrides(
        outputs=getattr(args, "outputs", None),
        llm=getattr(args, "llm", None),
        model=getattr(args, "model", None),
        step_timeout=getattr(args, "step_timeout", None),
    )
    return PaperApp(overrides=overrides, loader=loader, router_options=router_options(args))


def app_references(args: argparse.Namespace) -> list[str]:
    """``--app`` (once or repeated), else ``$SAGAGRAPH_APP``: the definitions besides the paper."""
    given = getattr(args, "app", None)
    if isinstance(given, str):
        given = [given]
    if not given:
        given = [os.environ.get("SAGAGRAPH_APP", "")]
    return [g.strip() for g in given if g and g.strip()]


def service_from(args: argparse.Namespace, loader: Any = None) -> SagaService:
    """The service a command acts through: the paper saga and the ``--app`` definitions."""
    from sagagraph.agents.paper_app import PAPER_APP
    from sagagraph.graph.definitions import Definitions

    own = {PAPER_APP: paper_app_from(args, loader)}
    definitions = Definitions.load(app_references(args), own=own, default=PAPER_APP)
    return SagaService(store_from(args), definitions, alerts_from_env())


def reader_from(args: argparse.Namespace) -> SagaService:
    """The service a reading command (``status``, ``list``, ``events``) reads through:
    reading a saga needs no definition, so neither the paper app nor an ``--app`` module is
    loaded (a finished saga is read without LangGraph)."""
    return SagaService(store_from(args))


def paper_definition(settings: PaperSettings, loader: Any = None, *, forward: bool = False) -> Any:
    """The paper saga's definition for ``settings``; ``forward``: its steps will run forward,
    so a model that cannot be built is refused now (a missing key), not by the first step."""
    from sagagraph.agents.paper_app import PaperApp

    app = PaperApp(loader=loader)
    if forward:
        app.check_forward({"settings": settings.recorded()})
    return app.definition(settings)
