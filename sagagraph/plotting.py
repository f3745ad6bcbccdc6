"""Pictures of sagas, drawn locally with matplotlib: the graph, and a timeline of what ran.

- :func:`draw_saga_graph`: the saga graph (steps left to right in definition order, the
  ``compensate`` loop and ``escalate`` below, the LLM router's ``supervisor`` above), from
  LangGraph's own node and edge lists. Nothing is sent anywhere: LangGraph's
  ``draw_mermaid_png`` calls a web service, this does not.
- :func:`plot_saga_timeline` / :func:`plot_saga_timelines`: one row per step, one bar per
  execute (blue) or compensate (orange) in the order the events were recorded (or on a clock),
  with marks for failures, halts, rejected routes, escalations and the operator's answers.
- :func:`records_table`: a list of records (events, bus messages, saga views) as a table that
  notebooks show as HTML and ``print`` shows as text.

matplotlib is an optional dependency (``pip install 'sagagraph[notebooks]'``): it is imported
only when a picture is drawn, and its absence is a ConfigurationError saying so.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

from sagagraph.errors import ConfigurationError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    from sagagraph.agents.protocol import SagaDefinition
    from sagagraph.choreography.topology import Choreography

__all__ = [
    "EDGE_COLOURS",
    "TIMELINE_COLOURS",
    "DrawableEdge",
    "DrawableGraph",
    "EdgeKind",
    "NodeKind",
    "Table",
    "TimelineAxis",
    "draw_choreography",
    "draw_saga_graph",
    "edge_kind",
    "graph_layout",
    "node_kind",
    "plot_saga_timeline",
    "plot_saga_timelines",
    "records_table",
]

NodeKind = Literal["start", "end", "step", "supervisor", "compensate", "escalate"]
"""What a node of the saga graph is; it decides where the node is drawn and its colour."""
EdgeKind = Literal["forward", "compensation"]
"""Forward edges move the saga on; compensation edges lead into, within or out of undoing."""
TimelineAxis = Literal["order", "time"]
"""``order``: one slot per event, as recorded; ``time``: seconds since the first event."""

_SPECIAL: dict[str, NodeKind] = {
    "__start__": "start",
    "__end__": "end",
    "supervisor": "supervisor",
    "compensate": "compensate",
    "escalate": "escalate",
}
_NODE_COLOURS: dict[NodeKind, str] = {
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
}
"""Colours of :func:`plot_saga_timeline`: bars by action, marks by what they flag."""


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


def _matplotlib() -> Any:
    """pyplot, imported on first use; ConfigurationError naming the extra when missing."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigurationError(
            "drawing needs matplotlib: pip install 'sagagraph[notebooks]'"
        ) from None
    return plt


def node_kind(name: str) -> NodeKind:
    """``step`` for a saga step, else what the reserved node is (``compensate``...)."""
    return _SPECIAL.get(name, "step")


def edge_kind(source: str, target: str) -> EdgeKind:
    """``compensation`` when either end is ``compensate`` or ``escalate``, else ``forward``."""
    undoing = {"compensate", "escalate"}
    return "compensation" if source in undoing or target in undoing else "forward"


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
    pos["supervisor"] = (middle, 1.5)
    pos["compensate"] = (middle, -1.5)
    pos["escalate"] = (middle, -2.9)
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


def _box(ax: Axes, at: tuple[float, float], label: str, colour: str, rounded: bool) -> Text:
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


def draw_saga_graph(graph: Any, *, ax: Axes | None = None, title: str | None = None) -> Figure:
    """Draw a saga graph; return the figure.

    ``graph`` is a compiled saga graph (``build_saga_graph(...).compile(...)``), the
    uncompiled ``StateGraph``, or its ``get_graph()``. Forward edges are blue, edges into and
    out of compensation orange; dashed edges are conditional (taken or not at run time).
    Drawn on ``ax`` when given, else on a new figure.
    """
    plt = _matplotlib()
    from matplotlib.lines import Line2D

    drawable = _drawable(graph)
    names = list(drawable.nodes)
    pos = graph_layout(names)
    steps = sum(node_kind(n) == "step" for n in names)
    if ax is None:
        height = 5.0 if "supervisor" in pos else 4.0
        _fig, ax = plt.subplots(figsize=(max(7.0, 1.9 * (steps + 2)), height))
    assert ax is not None
    figure: Figure = ax.get_figure()  # type: ignore[assignment]

    boxes = {}
    for name in names:
        kind = node_kind(name)
        label = {"start": "START", "end": "END"}.get(kind, name)
        boxes[name] = _box(ax, pos[name], label, _NODE_COLOURS[kind], kind in ("start", "end"))

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


def draw_choreography(
    saga: Choreography | SagaDefinition, *, ax: Axes | None = None, title: str | None = None
) -> Figure:
    """Draw who reacts to which event in a choreographed saga; return the figure.

    ``saga`` is a :class:`~sagagraph.choreography.topology.Choreography` or the saga
    definition it is derived from. The agents stand in step order; above, blue arrows carry
    each success event to the agent that reacts to it; below, orange arrows carry each
    compensation event back to the agent that undoes its own step next. No coordinator
    appears, because there is none.
    """
    plt = _matplotlib()
    from sagagraph.choreography.topology import Choreography, derive_choreography

    choreography = saga if isinstance(saga, Choreography) else derive_choreography(saga)
    roles = choreography.roles
    if ax is None:
        _fig, ax = plt.subplots(figsize=(max(8.0, 2.6 * (len(roles) + 2)), 3.0))
    assert ax is not None
    figure: Figure = ax.get_figure()  # type: ignore[assignment]
    spacing = 2.4
    pos = {"start": (0.0, 0.0), "completed": (spacing * (len(roles) + 1), 0.0)}
    pos |= {r.name: (spacing * (i + 1), 0.0) for i, r in enumerate(roles)}
    pos["rolled_back"] = (0.0, -1.6)
    boxes = {
        "start": _box(ax, pos["start"], "submit", _NODE_COLOURS["start"], True),
        "completed": _box(ax, pos["completed"], "completed", _NODE_COLOURS["end"], True),
        "rolled_back": _box(ax, pos["rolled_back"], "rolled back", "#fbe0cc", True),
    }
    boxes |= {r.name: _box(ax, pos[r.name], r.name, _NODE_COLOURS["step"], False) for r in roles}

    def arrow(source: str, target: str, event: str, kind: EdgeKind, rad: float) -> None:
        ax.annotate(
            "",
            xy=pos[target],
            xytext=pos[source],
            arrowprops={
                "arrowstyle": "-|>",
                "mutation_scale": 14,
                "color": EDGE_COLOURS[kind],
                "connectionstyle": f"arc3,rad={rad}",
                "patchA": boxes[source].get_bbox_patch(),
                "patchB": boxes[target].get_bbox_patch(),
            },
        )
        # The label sits on the curve's middle, nudged to the outside of the bend.
        (x0, y0), (x1, y1) = pos[source], pos[target]
        mx = (x0 + x1) / 2 + rad * (y1 - y0) / 2
        my = (y0 + y1) / 2 - rad * (x1 - x0) / 2
        ax.text(
            mx,
            my + (0.16 if kind == "forward" else -0.16),
            event,
            ha="center",
            va="bottom" if kind == "forward" else "top",
            fontsize=8.5,
            color=EDGE_COLOURS[kind],
            zorder=4,
        )

    arrow("start", roles[0].name, choreography.start_event, "forward", 0.0)
    for role in roles:
        arrow(role.name, role.next_step or "completed", role.success_event, "forward", 0.0)
        # A step that fails cleans up after itself and says so; its predecessor reacts.
        arrow(
            role.name,
            role.previous_step or "rolled_back",
            role.compensation_event,
            "compensation",
            -0.45 if role.previous_step else 0.0,
        )

    xs = [p[0] for p in pos.values()]
    ax.set_xlim(min(xs) - 0.9, max(xs) + 0.9)
    ax.set_ylim(-2.0, 0.7)
    ax.set_axis_off()
    ax.set_title(title or f"{choreography.saga}: who reacts to which event", fontsize=11)
    return figure


def _events_of(saga: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    if isinstance(saga, Mapping):
        return list(saga.get("events") or [])
    return list(saga)


def _seconds(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def _row_of(event: Mapping[str, Any]) -> str:
    """The timeline row of an event: its step; the saga's end (or the router's "finish")
    goes on the last row, ``saga``."""
    step = str(event["step"])
    return "saga" if step in ("saga", "finish") else step


def _rows(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """Timeline rows, top to bottom: steps by first appearance; ``saga`` (the end) last."""
    rows: list[str] = []
    for event in events:
        name = _row_of(event)
        if name not in rows and name != "saga":
            rows.append(name)
    if any(_row_of(e) == "saga" for e in events):
        rows.append("saga")
    return rows


def _spans(events: Sequence[Mapping[str, Any]], axis: TimelineAxis) -> list[tuple[float, float]]:
    """(start, width) of each event's slot on the x axis."""
    if axis == "order":
        return [(float(i), 0.86) for i in range(len(events))]
    if axis != "time":
        raise ConfigurationError(f"timeline x axis: expected 'order' or 'time', got {axis!r}")
    stamps = [_seconds(str(e["ts"])) for e in events]
    origin = stamps[0] if stamps else 0.0
    # An event is recorded when its work ends, so its bar runs from the previous event.
    spans = []
    for i, stamp in enumerate(stamps):
        start = stamps[i - 1] if i else stamp
        spans.append((start - origin, stamp - start))
    widest = max((w for _, w in spans), default=0.0)
    floor = max(widest / 150, 0.0005)  # events in the same millisecond stay visible
    return [(s, max(w, floor)) for s, w in spans]


def plot_saga_timeline(
    saga: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    *,
    ax: Axes | None = None,
    title: str | None = None,
    x: TimelineAxis = "order",
) -> Figure:
    """Draw a saga's events as a Gantt-like timeline; return the figure.

    ``saga`` is a saga's JSON view (``run_saga``, ``saga_status``, ``choreography_status``)
    or its list of events. One row per step; each execute is a blue bar, each compensate an
    orange one. Marks: a red cross for a failed or retried attempt and a rejected or failed
    route, a black diamond where a step halted the saga, a purple triangle where it waits for
    an operator, a green star for the operator's answer, a grey dot for an accepted route,
    a black bar where the saga ended. ``x="order"`` gives each event one slot in recorded
    order; ``x="time"`` places it on the clock (seconds since the first event; a bar then
    spans from the previous event to its own). The title defaults to the saga id and status.
    """
    plt = _matplotlib()
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    events = _events_of(saga)
    rows = _rows(events)
    spans = _spans(events, x)
    if ax is None:
        width = min(14.0, max(7.0, 0.42 * len(events) + 3.0)) if x == "order" else 10.0
        _fig, ax = plt.subplots(figsize=(width, 0.55 * max(len(rows), 1) + 1.5))
    assert ax is not None
    figure: Figure = ax.get_figure()  # type: ignore[assignment]
    level = {name: len(rows) - 1 - i for i, name in enumerate(rows)}

    def mark(at: float, row: str, marker: str, colour: str, size: float = 9) -> None:
        ax.plot([at], [level[row]], marker=marker, color=colour, markersize=size, zorder=4)

    for event, (start, width) in zip(events, spans, strict=True):
        row = _row_of(event)
        action, outcome = str(event["action"]), str(event["outcome"])
        middle = start + width / 2
        if action in ("execute", "compensate"):
            ax.broken_barh(
                [(start, width)],
                (level[row] - 0.32, 0.64),
                facecolors=TIMELINE_COLOURS[action],
                alpha=1.0 if outcome in ("ok", "halted") else 0.45,
                zorder=3,
            )
            if outcome in ("error", "retry", "timeout"):
                mark(middle, row, "X", TIMELINE_COLOURS["failed"])
            elif outcome == "halted":
                mark(middle, row, "D", TIMELINE_COLOURS["halted"], 7)
        elif action == "route":
            if outcome == "ok":
                mark(middle, row, "o", TIMELINE_COLOURS["route"], 5)
            else:
                mark(middle, row, "X", TIMELINE_COLOURS["failed"])
        elif action == "escalate":
            mark(middle, row, "^", TIMELINE_COLOURS["escalate"], 10)
        elif action == "resolve":
            mark(middle, row, "*", TIMELINE_COLOURS["resolve"], 13)
        elif action == "finish":
            mark(middle, row, "|", TIMELINE_COLOURS["finish"], 16)

    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(list(reversed(rows)))
    ax.set_ylim(-0.8, len(rows) - 0.2)
    if x == "order":
        ax.set_xlim(-0.4, max(len(events), 1) + 0.2)
        ax.set_xlabel("event, in the order recorded")
        ax.set_xticks([start + width / 2 for start, width in spans])
        ax.set_xticklabels([str(i + 1) for i in range(len(events))], fontsize=7)
    else:
        ax.set_xlabel("seconds since the first event")
    ax.grid(axis="x", alpha=0.25)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)

    def marker(symbol: str, colour: str, label: str) -> Line2D:
        return Line2D([], [], marker=symbol, color=colour, linestyle="", label=label)

    handles: list[Any] = [
        Patch(color=TIMELINE_COLOURS["execute"], label="execute"),
        Patch(color=TIMELINE_COLOURS["compensate"], label="compensate"),
    ]
    seen = {(str(e["action"]), str(e["outcome"])) for e in events}
    if any(o in ("error", "retry", "timeout", "rejected") for _, o in seen):
        handles.append(marker("X", TIMELINE_COLOURS["failed"], "failed / retried / rejected"))
    if any(o == "halted" for _, o in seen):
        handles.append(marker("D", TIMELINE_COLOURS["halted"], "halted"))
    if any(a == "route" and o == "ok" for a, o in seen):
        handles.append(marker("o", TIMELINE_COLOURS["route"], "route accepted"))
    if any(a == "escalate" for a, _ in seen):
        handles.append(marker("^", TIMELINE_COLOURS["escalate"], "needs an operator"))
    if any(a == "resolve" for a, _ in seen):
        handles.append(marker("*", TIMELINE_COLOURS["resolve"], "operator decision"))
    if any(_row_of(e) == "saga" and e["action"] == "finish" for e in events):
        handles.append(marker("|", TIMELINE_COLOURS["finish"], "saga ended"))
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False
    )
    if title is None and isinstance(saga, Mapping) and saga.get("saga_id"):
        title = f"{saga['saga_id']}: {saga.get('status')}"
    if title:
        ax.set_title(title, fontsize=11, loc="left")
    figure.tight_layout()
    return figure


def plot_saga_timelines(
    sagas: Sequence[Mapping[str, Any]],
    *,
    titles: Sequence[str] | None = None,
    x: TimelineAxis = "order",
) -> Figure:
    """One timeline per saga view, stacked in one figure; return it."""
    if not sagas:
        raise ConfigurationError("plot_saga_timelines: no saga to draw")
    if titles is not None and len(titles) != len(sagas):
        raise ConfigurationError(
            f"plot_saga_timelines: {len(titles)} title(s) for {len(sagas)} saga(s)"
        )
    plt = _matplotlib()
    heights = [max(len(_rows(_events_of(s))), 1) + 1.2 for s in sagas]
    longest = max(len(_events_of(s)) for s in sagas)
    width = min(14.0, max(8.0, 0.42 * longest + 3.5)) if x == "order" else 10.0
    fig, axes = plt.subplots(
        len(sagas),
        1,
        figsize=(width, 0.55 * sum(heights) + 0.4),
        gridspec_kw={"height_ratios": heights},
        squeeze=False,
    )
    for i, saga in enumerate(sagas):
        ax = axes[i][0]
        plot_saga_timeline(saga, ax=ax, title=None if titles is None else titles[i], x=x)
        if x == "order":  # one scale for all, so a slot is as wide in every saga
            ax.set_xlim(-0.4, longest + 0.2)
    figure: Figure = fig
    figure.tight_layout()
    return figure


@dataclass(frozen=True)
class Table:
    """Rows of text under named columns: HTML in a notebook, aligned text when printed."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def __str__(self) -> str:
        lines = [self.columns, *self.rows]
        widths = [max(len(line[i]) for line in lines) for i in range(len(self.columns))]
        text = [
            "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
            for line in lines
        ]
        text.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(text)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
            for row in self.rows
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def __repr__(self) -> str:
        return str(self)


def _cell(value: Any, max_width: int) -> str:
    if value is None:
        text = ""
    elif isinstance(value, list | tuple):
        text = ", ".join(str(v) for v in value)
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= max_width else text[: max_width - 1] + "…"


def records_table(
    records: Iterable[Mapping[str, Any]], columns: Sequence[str], *, max_width: int = 60
) -> Table:
    """A :class:`Table` of ``columns`` from each record (events, bus messages, saga views).

    A missing field or None is an empty cell, a list is joined with commas, and a cell
    longer than ``max_width`` characters is cut with an ellipsis.
    """
    if not columns:
        raise ConfigurationError("records_table: name at least one column")
    rows = tuple(tuple(_cell(r.get(c), max_width) for c in columns) for r in records)
    return Table(tuple(columns), rows)
