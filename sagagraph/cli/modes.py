"""The coordination styles as the CLI names them: the ``--mode`` choices, the label ``run``
announces, and the short name ``list`` shows. One table, so no command calls a style by
another's name."""

from __future__ import annotations

from typing import NamedTuple


class Mode(NamedTuple):
    """How the CLI names one coordination style."""

    name: str
    """The ``--mode`` value and the view's ``mode`` field."""
    short: str
    """The ``MODE`` column of ``list``."""
    decides: str
    """What picks the next step, as ``run`` announces it (``{router}`` is filled in)."""


ORCHESTRATION = "orchestration"
CHOREOGRAPHY = "choreography"
BLACKBOARD = "blackboard"

_MODES = {
    ORCHESTRATION: Mode(ORCHESTRATION, "orch", "{router} routing"),
    CHOREOGRAPHY: Mode(CHOREOGRAPHY, "choreo", "choreography"),
    BLACKBOARD: Mode(BLACKBOARD, "board", "blackboard, {router} controller"),
}

MODES = tuple(_MODES)
"""The ``--mode`` choices, the default first."""


def run_label(mode: str, router: str) -> str:
    """What ``run`` says coordinates the saga: ``deterministic routing``, ``choreography``,
    ``blackboard, llm controller``."""
    return _MODES[mode].decides.format(router=router)


def short_name(mode: str | None) -> str:
    """The ``list`` column: ``orch``, ``choreo``, ``board`` (an unknown mode as it is)."""
    known = _MODES.get(mode or ORCHESTRATION)
    return known.short if known else str(mode)
