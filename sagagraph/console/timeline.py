"""A saga's timeline as an SVG picture, drawn from its JSON view without matplotlib.

One row per step (the saga's end on the last row, the board's versions on a row of their
own) over a time axis: elapsed time since the saga's first recorded moment
(:mod:`sagagraph.console.time_axis`), as a waterfall chart draws it. Bars are attempts from
when they began to when they ended (execute blue, compensate orange, pale when failed) and an
agent step's tool calls; marks stand where their event was recorded (docs/console.md names
each), each with its event and duration as a tooltip (``<title>``), secrets hidden. The
colours are those of :func:`sagagraph.plotting.plot_saga_timeline`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from sagagraph.console.time_axis import TimeAxis, moments
from sagagraph.plotting.style import TIMELINE_COLOURS
from sagagraph.redaction import redact
from sagagraph.saga.view import format_duration, stamp_ms

PER_EVENT = 28
"""Pixels of time axis per event, between :data:`PLOT_MIN` and :data:`PLOT_MAX`."""
PLOT_MIN = 480
PLOT_MAX = 1400
MIN_BAR = 4
"""The narrowest an attempt's bar is drawn, in pixels (a millisecond's attempt stays visible)."""
TOOL_BAR = 8
ROW = 40
"""Height of one row."""
LABELS = 130
"""Width of the step names' column."""
TOP = 12
FAILED = ("error", "retry", "timeout", "rejected")
"""Outcomes drawn with a red cross."""
SAGA_ROW = "saga"
BOARD_ROW = "board"


def text(value: Any) -> str:
    """``value`` as SVG text: secrets hidden, markup escaped."""
    return escape(redact(str(value)))


def row_of(event: Mapping[str, Any]) -> str:
    """The row of an event: its step; the saga's end (and the router's ``finish``) on ``saga``."""
    step = str(event.get("step"))
    return SAGA_ROW if step in (SAGA_ROW, "finish") else step


def rows_of(events: Sequence[Mapping[str, Any]], board: Sequence[Mapping[str, Any]]) -> list[str]:
    """Rows top to bottom: steps by first appearance, then ``board``, then ``saga``."""
    rows: list[str] = []
    for event in events:
        name = row_of(event)
        if name not in rows and name != SAGA_ROW:
            rows.append(name)
    if board:
        rows.append(BOARD_ROW)
    if any(row_of(e) == SAGA_ROW for e in events):
        rows.append(SAGA_ROW)
    return rows


def tooltip(index: int, event: Mapping[str, Any], elapsed_ms: int) -> str:
    parts = [
        f"#{index + 1}",
        str(event.get("ts", "")),
        f"+{format_duration(elapsed_ms)}",
        str(event.get("step")),
        str(event["action"]),
    ]
    parts.append(f"{event['outcome']} (attempt {event.get('attempt', 1)})")
    if event.get("duration_ms") is not None:
        parts.append(f"took {format_duration(int(event['duration_ms']))}")
    if event.get("tool"):
        parts.append(f"tool {event['tool']}")
    if event.get("detail"):
        parts.append(str(event["detail"]))
    return f"<title>{text(' · '.join(parts))}</title>"


def cross(x: float, y: float, size: float = 6) -> str:
    colour = TIMELINE_COLOURS["failed"]
    return (
        f'<path d="M{x - size},{y - size}L{x + size},{y + size}M{x - size},{y + size}'
        f'L{x + size},{y - size}" stroke="{colour}" stroke-width="3" class="mark-failed"/>'
    )


def star(x: float, y: float, size: float = 8) -> str:
    import math

    points = []
    for i in range(10):
        radius = size if i % 2 == 0 else size * 0.45
        angle = math.pi / 2 + i * math.pi / 5
        points.append(f"{x + radius * math.cos(angle):.1f},{y - radius * math.sin(angle):.1f}")
    return f'<polygon points="{" ".join(points)}" fill="{TIMELINE_COLOURS["resolve"]}"/>'


def event_shape(event: Mapping[str, Any], begin: float, x: float, y: float) -> str:
    """The bar or mark of one event recorded at ``x`` on row ``y``; an attempt's bar runs
    from ``begin`` (when it began) to ``x``."""
    action, outcome = str(event["action"]), str(event["outcome"])
    if action in ("execute", "compensate"):
        opacity = 1.0 if outcome in ("ok", "halted") else 0.45
        left = min(begin, x - MIN_BAR)
        shape = (
            f'<rect x="{left:.1f}" y="{y - 11}" width="{x - left:.1f}" height="22" rx="2" '
            f'fill="{TIMELINE_COLOURS[action]}" fill-opacity="{opacity}" class="bar-{action}"/>'
        )
        if outcome in FAILED:
            shape += cross(x, y)
        elif outcome == "halted":
            shape += (
                f'<polygon points="{x},{y - 6} {x + 6},{y} {x},{y + 6} {x - 6},{y}" '
                f'fill="{TIMELINE_COLOURS["halted"]}" stroke="white"/>'
            )
        return shape
    if action in ("tool_call", "tool_undo"):
        shape = (
            f'<rect x="{x - TOOL_BAR / 2}" y="{y - 5}" width="{TOOL_BAR}" height="10" '
            f'fill="{TIMELINE_COLOURS[action]}" class="bar-{action}"/>'
            f'<text x="{x}" y="{y - 8}" font-size="8" text-anchor="middle">'
            f"{text(event.get('tool') or 'tool')}</text>"
        )
        return shape + (cross(x, y, 4) if outcome != "ok" else "")
    if action == "route":
        if outcome == "ok":
            return f'<circle cx="{x}" cy="{y}" r="4" fill="{TIMELINE_COLOURS["route"]}"/>'
        return cross(x, y)
    if action == "escalate":
        return (
            f'<polygon points="{x},{y - 8} {x + 8},{y + 6} {x - 8},{y + 6}" '
            f'fill="{TIMELINE_COLOURS["escalate"]}" class="mark-escalate"/>'
        )
    if action == "resolve":
        return star(x, y)
    if action == "finish":
        return (
            f'<rect x="{x - 2}" y="{y - 13}" width="4" height="26" '
            f'fill="{TIMELINE_COLOURS["finish"]}"/>'
        )
    return f'<circle cx="{x}" cy="{y}" r="3" fill="#999"/>'


def board_ms(entry: Mapping[str, Any]) -> int | None:
    """When a board version was written (epoch milliseconds); None when it has no time."""
    ts = str(entry.get("ts") or "")
    try:
        return stamp_ms(ts) if ts else None
    except ValueError:
        return None


LEGEND: tuple[tuple[str, str, str], ...] = (
    ("execute", "rect", "execute"),
    ("compensate", "rect", "compensate"),
    ("tool_call", "rect", "tool call"),
    ("tool_undo", "rect", "tool undo"),
    ("failed", "cross", "failed / retried / rejected"),
    ("route", "dot", "route accepted"),
    ("escalate", "triangle", "needs an operator"),
    ("resolve", "star", "operator decision"),
    ("board", "ring", "board version"),
)


def legend(events: Sequence[Mapping[str, Any]], y: float, board: bool) -> tuple[str, float]:
    """The legend of what the picture shows, on one line, and where it ends."""
    seen = {str(e["action"]) for e in events} | {
        "failed" for e in events if str(e["outcome"]) in FAILED
    }
    if board:
        seen.add("board")
    parts, x = [], float(LABELS)
    for key, kind, label in LEGEND:
        if key not in seen and key not in ("execute", "compensate"):
            continue
        colour = TIMELINE_COLOURS.get(key, "#555")
        if kind == "ring":
            parts.append(f'<circle cx="{x + 5}" cy="{y}" r="6" fill="#fff" stroke="#555"/>')
        elif kind == "cross":
            parts.append(cross(x + 5, y, 4))
        elif kind == "triangle":
            parts.append(
                f'<polygon points="{x + 5},{y - 6} {x + 11},{y + 5} {x - 1},{y + 5}" '
                f'fill="{colour}"/>'
            )
        elif kind == "star":
            parts.append(star(x + 5, y, 6))
        elif kind == "dot":
            parts.append(f'<circle cx="{x + 5}" cy="{y}" r="5" fill="{colour}"/>')
        else:
            parts.append(f'<rect x="{x}" y="{y - 5}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{x + 14}" y="{y + 4}" font-size="11">{escape(label)}</text>')
        x += 28 + 6.2 * len(label)
    return "".join(parts), x


def axis_markup(axis: TimeAxis, y: float, top: float) -> str:
    """The time axis along ``y``: a tick and its elapsed time every step, a faint grid line
    up to ``top``, and its name in the labels' column."""
    parts = [
        f'<g class="axis"><line x1="{axis.left}" y1="{y}" x2="{axis.left + axis.width}" '
        f'y2="{y}" stroke="#999"/>'
        f'<text x="{LABELS - 8}" y="{y + 14}" font-size="11" text-anchor="end" '
        'fill="#666">elapsed</text>'
    ]
    for elapsed, x, label in axis.ticks():
        parts.append(
            f'<g class="tick" data-ms="{elapsed}"><line x1="{x}" y1="{top}" x2="{x}" '
            f'y2="{y}" stroke="#f0f0f0"/><line x1="{x}" y1="{y}" x2="{x}" y2="{y + 4}" '
            f'stroke="#999"/><text x="{x}" y="{y + 14}" font-size="9" text-anchor="middle" '
            f'fill="#666">{escape(label)}</text></g>'
        )
    parts.append("</g>")
    return "".join(parts)


def timeline_svg(view: Mapping[str, Any]) -> str:
    """The SVG markup of ``view``'s timeline (its events, and its board if it has one)."""
    events: list[Mapping[str, Any]] = list(view.get("events") or [])
    board: list[Mapping[str, Any]] = list(view.get("board") or [])
    rows = rows_of(events, board)
    spans = [moments(event) for event in events]
    written = [board_ms(entry) for entry in board]
    stamps = [ms for span in spans for ms in span] + [ms for ms in written if ms is not None]
    plot = min(max(PER_EVENT * len(events), PLOT_MIN), PLOT_MAX)
    axis = TimeAxis.over(stamps, LABELS + 10, plot)
    width = LABELS + 10 + plot + 30
    bottom = TOP + ROW * max(len(rows), 1)
    height = bottom + 70
    key, key_end = legend(events, height - 14, bool(board))
    full = max(width, key_end)
    level = {name: TOP + ROW * i + ROW / 2 for i, name in enumerate(rows)}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{full}" '
        f'height="{height}" viewBox="0 0 {full} {height}" role="img" '
        f'aria-label="timeline of saga {text(view.get("saga_id"))}" font-family="sans-serif">',
        axis_markup(axis, bottom + 8, TOP),
    ]
    for name, y in level.items():
        parts.append(
            f'<line x1="{LABELS}" y1="{y}" x2="{width - 10}" y2="{y}" stroke="#e4e4e4"/>'
            f'<text x="{LABELS - 8}" y="{y + 4}" font-size="12" text-anchor="end">'
            f"{text(name)}</text>"
        )
    for index, (event, (began, ended)) in enumerate(zip(events, spans, strict=True)):
        took = event.get("duration_ms")
        timing = f' data-duration-ms="{int(took)}"' if took is not None else ""
        parts.append(
            f'<g class="event" data-action="{text(event["action"])}" '
            f'data-outcome="{text(event["outcome"])}"{timing}>'
            f"{tooltip(index, event, ended - axis.start)}"
            f"{event_shape(event, axis.x(began), axis.x(ended), level[row_of(event)])}</g>"
        )
    for entry, ms in zip(board, written, strict=True):
        x = axis.x(ms if ms is not None else axis.start + axis.span)
        y = level[BOARD_ROW]
        about = f"{entry.get('topic')} v{entry.get('version')} {entry.get('status')}: "
        parts.append(
            f'<g class="board-version"><title>{text(about + str(entry.get("note") or ""))}'
            f'</title><circle cx="{x}" cy="{y}" r="9" fill="#fff" stroke="#555"/>'
            f'<text x="{x}" y="{y + 4}" font-size="9" text-anchor="middle">'
            f"v{text(entry.get('version'))}</text></g>"
        )
    parts.append(key)
    parts.append("</svg>")
    return "".join(parts)
