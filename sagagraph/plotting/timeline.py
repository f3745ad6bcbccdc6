"""A saga's timeline: one row per step, one bar per execute (blue) or compensate (orange)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sagagraph.errors import ConfigurationError
from sagagraph.plotting.style import TIMELINE_COLOURS, TimelineAxis, pyplot

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


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


_TOOL_OF = {"execute": "tool_call", "compensate": "tool_undo"}
"""The tool events an execute or compensate bar encloses (an agent step's calls, undos)."""


def _step_extent(events: Sequence[Mapping[str, Any]], i: int) -> int:
    """Index of the first event of step ``i``'s execute or compensate: its tool events (they
    are recorded just before it, on its row) are drawn inside its bar."""
    tool = _TOOL_OF.get(str(events[i]["action"]))
    first = i
    while (
        first > 0
        and events[first - 1]["action"] == tool
        and _row_of(events[first - 1]) == _row_of(events[i])
    ):
        first -= 1
    return first


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
    a black bar where the saga ended. An agent step's tool calls (dark blue) and undos (dark
    orange) are thin bars inside its execute or compensate bar, each named by its tool.
    ``x="order"`` gives each event one slot in recorded
    order; ``x="time"`` places it on the clock (seconds since the first event; a bar then
    spans from the previous event to its own). The title defaults to the saga id and status.
    """
    plt = pyplot()
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

    for index, (event, (start, width)) in enumerate(zip(events, spans, strict=True)):
        row = _row_of(event)
        action, outcome = str(event["action"]), str(event["outcome"])
        middle = start + width / 2
        if action in ("execute", "compensate"):
            first = _step_extent(events, index)
            encloses = first < index
            if encloses:  # the bar spans the step's tool events, drawn over it
                width = start + width - spans[first][0]
                start = spans[first][0]
                middle = spans[index][0] + spans[index][1] / 2
            ax.broken_barh(
                [(start, width)],
                (level[row] - 0.32, 0.64),
                facecolors=TIMELINE_COLOURS[action],
                alpha=(1.0 if outcome in ("ok", "halted") else 0.45) * (0.4 if encloses else 1),
                zorder=3,
            )
            if outcome in ("error", "retry", "timeout"):
                mark(middle, row, "X", TIMELINE_COLOURS["failed"])
            elif outcome == "halted":
                mark(middle, row, "D", TIMELINE_COLOURS["halted"], 7)
        elif action in ("tool_call", "tool_undo"):
            ax.broken_barh(
                [(start + width * 0.1, width * 0.8)],
                (level[row] - 0.14, 0.28),
                facecolors=TIMELINE_COLOURS[action],
                zorder=4,
            )
            label = str(event.get("tool") or "tool")
            ax.text(middle, level[row] + 0.2, label, ha="center", va="bottom", fontsize=6, zorder=5)
            if outcome not in ("ok",):
                mark(middle, row, "X", TIMELINE_COLOURS["failed"], 7)
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
    for action, label in (("tool_call", "tool call"), ("tool_undo", "tool undo")):
        if any(a == action for a, _ in seen):
            handles.append(Patch(color=TIMELINE_COLOURS[action], label=label))
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
    plt = pyplot()
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
