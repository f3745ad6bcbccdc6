"""``sagagraph graph``'s Mermaid text: LangGraph's own drawing of the paper saga, as a reader
needs it (names and edges; no node metadata, no self-loops: :mod:`sagagraph.graph.drawn`).

The paper saga is built for the command's flags, ``--router``, ``--parallel`` and
``--pipeline``, and
LangGraph draws it (``get_graph().draw_mermaid()``); a combination the builder refuses
(``--router llm --parallel``) fails with the builder's one-line reason.
"""

from __future__ import annotations

ROUTERS = ("deterministic", "llm")
"""``--router``'s choices (the parser's ``router_flag``)."""
PIPELINES = ("default", "adaptive")
"""``--pipeline``'s choices (the parser's ``pipeline_flag``)."""
COMBINATIONS = tuple(
    (router, parallel, pipeline)
    for router in ROUTERS
    for parallel in (False, True)
    for pipeline in PIPELINES
)
"""Every (``--router``, ``--parallel``, ``--pipeline``) the command accepts."""


def langgraph_drawing(router: str, parallel: bool, pipeline: str = "default") -> str:
    """The paper saga's graph, compiled and drawn by LangGraph for a reader
    (ConfigurationError when the builder refuses the combination)."""
    from sagagraph.agents.paper_app import PaperSettings
    from sagagraph.agents.paper_saga import paper_saga_definition
    from sagagraph.graph.builder import build_saga_graph
    from sagagraph.graph.drawn import reader_mermaid

    settings = PaperSettings.resolve(llm="offline")
    definition = paper_saga_definition(
        outputs_dir=settings.outputs, parallel=parallel, pipeline=pipeline
    )
    # Drawing never calls the model; a named stand-in keeps `graph` free of API keys.
    router_model = "drawing-only" if router == "llm" else None
    graph = build_saga_graph(definition, router=router, router_model=router_model)  # type: ignore[arg-type]
    return reader_mermaid(graph.compile())
