"""The saga graph as a picture, from LangGraph's own node and edge lists; nothing is sent out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from sagagraph.errors import ConfigurationError
from sagagraph.graph.nodes import SUPERVISOR
from sagagraph.plotting.style import (
    EDGE_COLOURS,
    NODE_COLOURS,
    draw_box,
    edge_kind,
    node_kind,
    pyplot,
)
from sagagraph.saga.names import COMPENSATE, ESCALATE

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


class DrawableEdge(Protocol):
    """An edge of LangGraph's drawable graph (``compiled.get_graph().edges``)."""

    @property
    def source(self) -> str: ...

    @property
    def target(self) -> str: ...

    @property
    def conditional(self) -> bool: ...


class DrawableGraph(Protocol):
    """What :func:`draw_saga_graph` reads: LangGraph's ``compiled.get_graph()``."""

    @property
    def nodes(self) -> Mapping[str, Any]: ...

    @property
    def edges(self) -> Sequence[DrawableEdge]: ...


def _drawable(graph: Any) -> DrawableGraph:
    """LangGraph's drawable graph from a compiled graph, an uncompiled one, or itself."""
    if hasattr(graph, "get_graph"):
        drawable: DrawableGraph = graph.get_graph()
        return drawable
    if hasattr(graph, "compile"):  # an uncompiled StateGraph: compiling it runs nothing
        compiled_graph: DrawableGraph = graph.compile().get_graph()
        return compiled_graph
    if hasattr(graph, "nodes") and hasattr(graph, "edges"):
        itself: DrawableGraph = graph
        return itself
    raise ConfigurationError(
        f"draw_saga_graph: expected a LangGraph graph, got {type(graph).__name__}"
    )


_STEP_SPACING = 1.6
"""Horizontal distance between two neighbouring nodes of the step row, in data units."""
_CLEARANCE = (0.55, 0.28)
"""Half the width and height around a node centre that an edge must not cross."""


def graph_layout(nodes: Iterable[str]) -> dict[str, tuple[float, float]]:
    """Where each node goes: steps on one row in the given order, between start and end.

    ``compensate`` sits below the middle of the row and ``escalate`` below it; the LLM
    router's ``supervisor`` sits above. Other reserved names are placed like steps.
    """
    names = list(nodes)
    row = [n for n in names if node_kind(n) == "step"]
    middle = _STEP_SPACING * (len(row) + 1) / 2
    pos: dict[str, tuple[float, float]] = {"__start__": (0.0, 0.0)}
    for i, name in enumerate(row, start=1):
        pos[name] = (_STEP_SPACING * i, 0.0)
    pos["__end__"] = (_STEP_SPACING * (len(row) + 1), 0.0)
    pos[SUPERVISOR] = (middle, 1.5)
    pos[COMPENSATE] = (middle, -1.5)
    pos[ESCALATE] = (middle, -2.9)
    return {n: pos[n] for n in names}


def _arc_points(
    a: tuple[float, float], b: tuple[float, float], rad: float, samples: int = 24
) -> list[tuple[float, float]]:
    """Points of matplotlib's ``arc3`` curve from ``a`` to ``b`` (a quadratic Bezier)."""
    (x0, y0), (x1, y1) = a, b
    cx = (x0 + x1) / 2 + rad * (y1 - y0)
    cy = (y0 + y1) / 2 - rad * (x1 - x0)
    points = []
    for i in range(1, samples):
        t = i / samples
        u = 1 - t
        points.append(
            (u * u * x0 + 2 * u * t * cx + t * t * x1, u * u * y0 + 2 * u * t * cy + t * t * y1)
        )
    return points


def edge_bend(
    source: str, target: str, pos: Mapping[str, tuple[float, float]], *, paired: bool = False
) -> float:
    """The ``arc3`` bend of an edge: straight unless it would cross another node.

    ``paired`` edges (the reverse edge exists too) bend a little, so the two stay apart.
    """
    others = [p for n, p in pos.items() if n not in (source, target)]
    first = 0.18 if paired else 0.0
    for rad in (first, 0.3, -0.3, 0.45, -0.45, 0.6, -0.6):
        if paired and rad <= 0:
            continue  # both edges of a pair bend to their own left: they never overlap
        clear = all(
            abs(x - ox) > _CLEARANCE[0] or abs(y - oy) > _CLEARANCE[1]
            for x, y in _arc_points(pos[source], pos[target], rad)
            for ox, oy in others
        )
        if clear:
            return rad
    return first


def draw_saga_graph(graph: Any, *, ax: Axes | None = None, title: str | None = None) -> Figure:
    """Draw a saga graph; return the figure.

    ``graph`` is a compiled saga graph (``build_saga_graph(...).compile(...)``), the
    uncompiled ``StateGraph``, or its ``get_graph()``. Forward edges are blue, edges into and
    out of compensation orange; dashed edges are conditional (taken or not at run time).
    Drawn on ``ax`` when given, else on a new figure.
    """
    plt = pyplot()
    from matplotlib.lines import Line2D

    drawable = _drawable(graph)
    names = list(drawable.nodes)
    pos = graph_layout(names)
    steps = sum(node_kind(n) == "step" for n in names)
    if ax is None:
        height = 5.0 if SUPERVISOR in pos else 4.0
        _fig, ax = plt.subplots(figsize=(max(7.0, 1.9 * (steps + 2)), height))
    assert ax is not None
    figure: Figure = ax.get_figure()  # type: ignore[assignment]

    boxes = {}
    for name in names:
        kind = node_kind(name)
        label = {"start": "START", "end": "END"}.get(kind, name)
        boxes[name] = draw_box(ax, pos[name], label, NODE_COLOURS[kind], kind in ("start", "end"))

    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    ax.set_xlim(min(xs) - 0.8, max(xs) + 1.1)
    ax.set_ylim(min(ys) - 0.7, max(ys) + 0.7)
    renderer = getattr(figure.canvas, "get_renderer", lambda: None)()

    pairs = {(e.source, e.target) for e in drawable.edges}
    for edge in drawable.edges:
        arrow: dict[str, Any] = {
            "arrowstyle": "-|>",
            "mutation_scale": 14,
            "color": EDGE_COLOURS[edge_kind(edge.source, edge.target)],
            "linestyle": (0, (4, 2)) if edge.conditional else "-",
            "patchA": boxes[edge.source].get_bbox_patch(),
            "patchB": boxes[edge.target].get_bbox_patch(),
            "shrinkA": 1,
            "shrinkB": 1,
        }
        if edge.source == edge.target:
            # A node that routes to itself (compensate undoes one step per pass): a loop
            # leaving and re-entering its box on the right; the arms must outreach the box.
            box = boxes[edge.source]
            half = box.get_window_extent(renderer).width / 2 * 72 / figure.dpi if renderer else 40
            arm = half + 30
            arrow["connectionstyle"] = f"arc,angleA=28,angleB=-28,armA={arm},armB={arm},rad=10"
            ax.annotate("", xy=pos[edge.source], xytext=pos[edge.source], arrowprops=arrow)
            continue
        paired = (edge.target, edge.source) in pairs
        rad = edge_bend(edge.source, edge.target, pos, paired=paired)
        arrow["connectionstyle"] = f"arc3,rad={rad}"
        ax.annotate("", xy=pos[edge.target], xytext=pos[edge.source], arrowprops=arrow)

    ax.set_axis_off()
    ax.legend(
        handles=[
            Line2D([], [], color=EDGE_COLOURS["forward"], label="forward"),
            Line2D([], [], color=EDGE_COLOURS["compensation"], label="compensation"),
            Line2D([], [], color="#444444", linestyle="--", label="conditional"),
        ],
        loc="lower left",
        fontsize=8,
        frameon=False,
    )
    if title:
        ax.set_title(title)
    return figure
