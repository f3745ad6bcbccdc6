"""A saga graph drawn for a reader: LangGraph's Mermaid text of what a person needs to see.

LangGraph draws every node's metadata under its name (``sagagraph_routes_itself = True``,
which only the builder reads, see :mod:`sagagraph.graph.nodes`) and every edge a node may
take, self-loops included (``compensate`` runs one compensation a superstep and goes back to
itself; ``escalate`` waits on itself). A reader needs the nodes by name and the edges between
them: the metadata is left out and so are the self-loops.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables.graph import Graph


def reader_graph(compiled: Any) -> Graph:
    """The drawable graph of ``compiled`` (a compiled LangGraph) without node metadata and
    without edges from a node to itself."""
    full = compiled.get_graph()
    nodes = {key: node._replace(metadata=None) for key, node in full.nodes.items()}
    edges = [edge for edge in full.edges if edge.source != edge.target]
    return Graph(nodes=nodes, edges=edges)


def reader_mermaid(compiled: Any) -> str:
    """:func:`reader_graph` as LangGraph's Mermaid text."""
    return str(reader_graph(compiled).draw_mermaid())
