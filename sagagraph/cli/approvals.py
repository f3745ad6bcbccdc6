"""``sagagraph approve`` and ``reject``: answer tool calls waiting for an operator's approval.

A gated tool call (:mod:`sagagraph.tools.approval`) pauses its saga; ``status`` lists it under
``approvals``. Answering it resumes the saga, so the command needs the saga's graph: the
paper saga's by default, or the one ``--app package.module:function`` (``$SAGAGRAPH_APP``)
returns, a ``StateGraph`` (``build_saga_graph(...)``) or a ``SagaDefinition``, compiled here
on the ``--db`` checkpointer.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sagagraph.cli.apps import (
    load_view,
    only_compensates,
    paper_app,
    recorded_settings,
    settings_from,
)
from sagagraph.cli.foreign import refuse_foreign
from sagagraph.cli.output import emit, progress_printer
from sagagraph.errors import ConfigurationError, InputError

__all__ = ["cmd_approve", "cmd_reject"]


def load_app_graph(spec: str) -> Any:
    """The uncompiled graph ``spec`` (``package.module:function``) names: the function's
    ``StateGraph``, or the saga graph of the ``SagaDefinition`` it returns."""
    module_name, _, attr = spec.strip().partition(":")
    if not module_name or not attr:
        raise ConfigurationError(f"--app {spec!r}: expected package.module:function")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as error:
        raise ConfigurationError(f"--app {spec!r}: {error}") from None
    if not callable(factory):
        raise ConfigurationError(f"--app {spec!r}: {attr} is not callable")
    built = factory()
    from sagagraph.saga.protocol import SagaDefinition

    if isinstance(built, SagaDefinition):
        from sagagraph.graph.builder import build_saga_graph

        return build_saga_graph(built)
    if not hasattr(built, "compile"):
        raise ConfigurationError(
            f"--app {spec!r}: returned {type(built).__name__}, not a StateGraph or SagaDefinition"
        )
    return built


@contextmanager
def saga_app(args: argparse.Namespace) -> Iterator[Any]:
    """The compiled graph that can resume ``args.saga_id``: ``--app``'s, else the paper saga's."""
    spec = getattr(args, "app", None) or os.environ.get("SAGAGRAPH_APP", "")
    if spec.strip():
        from sagagraph.checkpoints.factory import open_checkpointer

        graph = load_app_graph(spec)
        with open_checkpointer(settings_from(args).db) as checkpointer:
            yield graph.compile(checkpointer=checkpointer)
        return
    view = load_view(args, args.saga_id)
    refuse_foreign(view, args.command)
    settings, router = recorded_settings(view, args)
    with paper_app(settings, router, compensating=only_compensates(view)) as app:
        yield app


def edited_args(text: str | None) -> dict[str, Any] | None:
    """``--edit``'s JSON object; InputError (one line) when it is not one."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"--edit: not JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(value, dict):
        raise InputError(f"--edit: expected a JSON object of arguments, got {type(value).__name__}")
    return value


def answer(args: argparse.Namespace, run: Callable[[Any], dict[str, Any]]) -> int:
    with saga_app(args) as app:
        return emit(run(app), args.json)


def cmd_approve(args: argparse.Namespace) -> int:
    from sagagraph.graph.approvals import approve_tool_call

    edit = edited_args(args.edit)
    return answer(
        args,
        lambda app: approve_tool_call(
            app, args.saga_id, call=args.call, edit=edit, hooks=progress_printer()
        ),
    )


def cmd_reject(args: argparse.Namespace) -> int:
    from sagagraph.graph.approvals import reject_tool_call

    return answer(
        args,
        lambda app: reject_tool_call(
            app, args.saga_id, args.why, call=args.call, hooks=progress_printer()
        ),
    )
