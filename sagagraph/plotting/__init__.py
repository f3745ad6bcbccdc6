"""Pictures of sagas, drawn locally with matplotlib: the graph, and a timeline of what ran.

- :func:`draw_saga_graph`: the saga graph (steps left to right in definition order, the
  ``compensate`` loop and ``escalate`` below, the LLM router's ``supervisor`` above), from
  LangGraph's own node and edge lists. Nothing is sent anywhere: LangGraph's
  ``draw_mermaid_png`` calls a web service, this does not.
- :func:`plot_saga_timeline` / :func:`plot_saga_timelines`: one row per step, one bar per
  execute (blue) or compensate (orange) in the order the events were recorded (or on a clock),
  with marks for failures, halts, rejected routes, escalations and the operator's answers.
- :func:`plot_board`: a blackboard saga's board, one row per topic, one box per version
  (posted, refined, withdrawn) in the order they were posted.
- :func:`records_table`: a list of records (events, bus messages, saga views) as a table that
  notebooks show as HTML and ``print`` shows as text.

matplotlib is an optional dependency (``make extra EXTRA=notebooks`` in the checkout): it is
imported only when a picture is drawn, and its absence is a ConfigurationError saying so.
"""

from sagagraph.plotting.board import BOARD_COLOURS, plot_board
from sagagraph.plotting.choreography import draw_choreography
from sagagraph.plotting.saga_graph import DrawableEdge, DrawableGraph, draw_saga_graph, graph_layout
from sagagraph.plotting.style import (
    EDGE_COLOURS,
    TIMELINE_COLOURS,
    EdgeKind,
    NodeKind,
    TimelineAxis,
    edge_kind,
    node_kind,
)
from sagagraph.plotting.tables import Table, records_table
from sagagraph.plotting.timeline import plot_saga_timeline, plot_saga_timelines

__all__ = [
    "BOARD_COLOURS",
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
    "plot_board",
    "plot_saga_timeline",
    "plot_saga_timelines",
    "records_table",
]
