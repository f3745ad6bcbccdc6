"""What every picture shares: node and edge kinds, colours, boxes, and matplotlib on demand."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from sagagraph.errors import ConfigurationError
from sagagraph.graph.nodes import SUPERVISOR
from sagagraph.saga.names import COMPENSATE, ESCALATE

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.text import Text

NodeKind = Literal["start", "end", "step", "supervisor", "compensate", "escalate"]
"""What a node of the saga graph is; it decides where the node is drawn and its colour."""
EdgeKind = Literal["forward", "compensation"]
"""Forward edges move the saga on; compensation edges lead into, within or out of undoing."""
TimelineAxis = Literal["order", "time"]
"""``order``: one slot per event, as recorded; ``time``: seconds since the first event."""

_SPECIAL: dict[str, NodeKind] = {
    "__start__": "start",
    "__end__": "end",
    SUPERVISOR: "supervisor",
    COMPENSATE: "compensate",
    ESCALATE: "escalate",
}
NODE_COLOURS: dict[NodeKind, str] = {
    "start": "#ffffff",
    "end": "#bfb6fc",
    "step": "#dbe7f5",
    "supervisor": "#e8e8e8",
    "compensate": "#fbe0cc",
    "escalate": "#f5c6cb",
}
EDGE_COLOURS: dict[EdgeKind, str] = {"forward": "#4c72b0", "compensation": "#dd8452"}
"""Edge colours of :func:`draw_saga_graph`; the timeline uses the same two for its bars."""
TIMELINE_COLOURS: dict[str, str] = {
    "execute": EDGE_COLOURS["forward"],
    "compensate": EDGE_COLOURS["compensation"],
    "failed": "#c44e52",
    "halted": "#222222",
    "route": "#8c8c8c",
    "escalate": "#8172b3",
    "resolve": "#55a868",
    "finish": "#222222",
    "tool_call": "#1f3f66",
    "tool_undo": "#8a4a0c",
}
"""Colours of :func:`plot_saga_timeline`: bars by action, marks by what they flag."""


def pyplot() -> Any:
    """pyplot, imported on first use; ConfigurationError naming the extra when missing."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigurationError(
            "drawing needs matplotlib: make extra EXTRA=notebooks, in the checkout"
        ) from None
    return plt


def node_kind(name: str) -> NodeKind:
    """``step`` for a saga step, else what the reserved node is (``compensate``...)."""
    return _SPECIAL.get(name, "step")


def edge_kind(source: str, target: str) -> EdgeKind:
    """``compensation`` when either end is ``compensate`` or ``escalate``, else ``forward``."""
    undoing = {"compensate", "escalate"}
    return "compensation" if source in undoing or target in undoing else "forward"


def draw_box(ax: Axes, at: tuple[float, float], label: str, colour: str, rounded: bool) -> Text:
    return ax.text(
        at[0],
        at[1],
        label,
        ha="center",
        va="center",
        fontsize=10,
        zorder=3,
        bbox={
            "boxstyle": "round,pad=0.45" if rounded else "round4,pad=0.5",
            "facecolor": colour,
            "edgecolor": "#444444",
        },
    )
