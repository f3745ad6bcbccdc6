"""A blackboard saga's board history: who wrote what, when, and what became of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sagagraph.plotting.style import EDGE_COLOURS, TIMELINE_COLOURS, pyplot

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

BOARD_COLOURS: dict[str, str] = {
    "posted": EDGE_COLOURS["forward"],
    "refined": TIMELINE_COLOURS["resolve"],
    "withdrawn": EDGE_COLOURS["compensation"],
}
"""Colours of :func:`plot_board`'s entries, by status."""


def _entries_of(saga: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    if isinstance(saga, Mapping):
        return list(saga.get("board") or [])
    return list(saga)


def plot_board(
    saga: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    *,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """Draw a board's history; return the figure.

    ``saga`` is a blackboard saga's JSON view (its ``board``) or the list of entries. One row
    per topic, top to bottom in the order topics first appeared; one box per entry, left to
    right in the order entries were posted, labelled with its version and author and coloured
    by status: blue posted, green refined, orange withdrawn. A line joins the versions of one
    topic. The title defaults to the saga id and status.
    """
    plt = pyplot()
    entries = _entries_of(saga)
    topics: list[str] = []
    for e in entries:
        if e["topic"] not in topics:
            topics.append(str(e["topic"]))
    if ax is None:
        _, ax = plt.subplots(figsize=(max(5.0, 1.4 * len(entries) + 2), 0.8 * len(topics) + 1.6))
    fig: Figure = ax.get_figure()  # type: ignore[assignment]
    row = {t: len(topics) - 1 - i for i, t in enumerate(topics)}
    last: dict[str, int] = {}
    for slot, e in enumerate(entries):
        y = row[str(e["topic"])]
        if e["topic"] in last:
            ax.plot([last[e["topic"]], slot], [y, y], color="#999999", lw=1, ls="--", zorder=1)
        last[str(e["topic"])] = slot
        colour = BOARD_COLOURS.get(str(e["status"]), "#cccccc")
        ax.text(
            slot,
            y,
            f"v{e['version']} {e['status']}\nby {e['author']}",
            ha="center",
            va="center",
            fontsize=8,
            color="white",
            zorder=3,
            bbox={"boxstyle": "round,pad=0.4", "facecolor": colour, "edgecolor": "#444444"},
        )
    ax.set_yticks(list(row.values()), list(row))
    ax.set_xticks(range(len(entries)), [str(i + 1) for i in range(len(entries))])
    ax.set_xlim(-0.7, max(len(entries) - 0.3, 0.7))
    ax.set_ylim(-0.7, max(len(topics) - 0.3, 0.7))
    ax.set_xlabel("entries, in the order they were posted")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if title is None and isinstance(saga, Mapping):
        title = f"board of {saga.get('saga_id')}: {saga.get('status')}"
    if title:
        ax.set_title(title)
    if not entries:
        ax.text(0, 0, "nothing was posted", ha="center", va="center", color="#666666")
    fig.tight_layout()
    return fig
