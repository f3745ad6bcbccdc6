"""``sagagraph approve`` and ``reject``: answer tool calls waiting for an operator's approval.

A gated tool call (:mod:`sagagraph.tools.approval`) pauses its saga; ``status`` lists it under
``approvals``. Answering it resumes the saga, so the command needs the saga's definition: the
paper saga's, or the one ``--app package.module:function`` (``$SAGAGRAPH_APP``) returns (a
``SagaDefinition`` or a ``StateGraph``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from sagagraph.cli.output import emit, progress_printer
from sagagraph.cli.wiring import service_from
from sagagraph.errors import InputError

__all__ = ["cmd_approve", "cmd_reject"]


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


def cmd_approve(args: argparse.Namespace) -> int:
    edit = edited_args(args.edit)
    view = service_from(args).approve(
        args.saga_id, call=args.call, edit=edit, hooks=progress_printer()
    )
    return emit(view, args.json)


def cmd_reject(args: argparse.Namespace) -> int:
    view = service_from(args).reject(
        args.saga_id, args.why, call=args.call, hooks=progress_printer()
    )
    return emit(view, args.json)
