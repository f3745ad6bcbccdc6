"""Sagas of a definition the ``sagagraph`` command cannot build, and the Python call instead.

The command builds one definition, the paper saga. A saga started from Python with another
definition (the travel booking example, an application's own) records its definition's name
in its state (``saga``); the command still reads it (``status``, ``list``), but answering or
finishing it needs that definition's steps. ``resolve``, ``recover`` and ``status`` ask here
first, so they refuse such a saga up front, leaving it as it is, and name the Python call
that works.
"""

from __future__ import annotations

from typing import Any

from sagagraph.errors import InputError


def cli_definition() -> str:
    """Name of the one definition the command builds."""
    from sagagraph.agents.paper_saga import PAPER_SAGA

    return PAPER_SAGA


def foreign_definition(view: dict[str, Any]) -> str | None:
    """The definition ``view``'s saga belongs to, when the command cannot build it; else None.

    A view without a recorded name (an older saga) is taken as the command's own.
    """
    name = view.get("saga")
    return str(name) if name and name != cli_definition() else None


def python_call(view: dict[str, Any], command: str) -> str:
    """The Python call that does what ``command`` would do to ``view``'s saga."""
    saga_id = view["saga_id"]
    if command in ("approve", "reject") or view.get("approvals"):
        return (
            f'approve_tool_call(app, "{saga_id}") or reject_tool_call(app, "{saga_id}", why) '
            "from sagagraph.graph, or the command with --app MODULE:FUNCTION"
        )
    if command == "resolve" or view.get("waiting_for_operator"):
        return f'resolve_saga(app, "{saga_id}", "retry") (or "skip", note=...)'
    if command == "resume":
        return f'resume_saga(app, "{saga_id}")'
    if command == "rollback":
        return f'rollback_saga(app, "{saga_id}", reason=..., by=...)'
    return f'recover_sagas(app) or resume_saga(app, "{saga_id}")'


def foreign_reason(view: dict[str, Any], command: str) -> str | None:
    """One line saying why ``command`` cannot act on ``view``'s saga, or None when it can."""
    name = foreign_definition(view)
    if name is None:
        return None
    return (
        f"saga {view['saga_id']!r} belongs to definition {name!r}, which the sagagraph "
        f"command cannot build (it builds {cli_definition()!r}): from Python, on an app "
        f"compiled from {name!r}, call {python_call(view, command)}"
    )


def refuse_foreign(view: dict[str, Any], command: str) -> None:
    """InputError (exit 2, one line) when ``command`` cannot act on ``view``'s saga."""
    reason = foreign_reason(view, command)
    if reason is not None:
        raise InputError(reason)
