"""A choreographed saga as a picture: who reacts to which event."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sagagraph.plotting.style import EDGE_COLOURS, NODE_COLOURS, EdgeKind, draw_box, pyplot

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from sagagraph.choreography.topology import Choreography
    from sagagraph.saga.protocol import SagaDefinition


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
    plt = pyplot()
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
        "start": draw_box(ax, pos["start"], "submit", NODE_COLOURS["start"], True),
        "completed": draw_box(ax, pos["completed"], "completed", NODE_COLOURS["end"], True),
        "rolled_back": draw_box(ax, pos["rolled_back"], "rolled back", "#fbe0cc", True),
    }
    boxes |= {r.name: draw_box(ax, pos[r.name], r.name, NODE_COLOURS["step"], False) for r in roles}

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
