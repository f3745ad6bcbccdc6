"""``sagagraph graph``'s Mermaid text: LangGraph's own drawing of the paper saga, kept.

The drawing is a function of the code alone (the paper saga's steps, the builder, LangGraph's
renderer) and of the command's two flags, ``--router`` and ``--parallel``; never of the
machine, the environment or the checkpointer. So it is drawn once by LangGraph, kept in
:mod:`sagagraph.cli.saga_drawings`, and ``graph`` prints it without importing LangGraph. A
combination not kept (``--router llm --parallel``, which the builder refuses) goes to
LangGraph as before, which draws it or says why not.

``tests/test_cli_graph_drawing.py`` compares every kept drawing with LangGraph's, byte for
byte, for every combination the command accepts: a change to the graph fails that test until
``python -m sagagraph.cli.drawing`` writes the drawings again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROUTERS = ("deterministic", "llm")
"""``--router``'s choices (the parser's ``router_flag``)."""
COMBINATIONS = tuple((router, parallel) for router in ROUTERS for parallel in (False, True))
"""Every (``--router``, ``--parallel``) the command accepts."""
DRAWINGS_FILE = Path(__file__).with_name("saga_drawings.py")


def langgraph_drawing(router: str, parallel: bool) -> str:
    """The paper saga's graph, compiled and drawn by LangGraph (ConfigurationError when the
    builder refuses the combination)."""
    from sagagraph.agents.paper_saga import paper_saga_definition
    from sagagraph.config import Settings
    from sagagraph.graph.builder import build_saga_graph

    settings = Settings.resolve(llm="offline")
    definition = paper_saga_definition(outputs_dir=settings.outputs, parallel=parallel)
    # Drawing never calls the model; a named stand-in keeps `graph` free of API keys.
    router_model = "drawing-only" if router == "llm" else None
    graph = build_saga_graph(definition, router=router, router_model=router_model)  # type: ignore[arg-type]
    return str(graph.compile().get_graph().draw_mermaid())


def kept_drawing(router: str, parallel: bool) -> str | None:
    """The drawing kept for this combination, None when there is none."""
    from sagagraph.cli.saga_drawings import DRAWINGS

    return DRAWINGS.get((router, parallel))


def drawings_source() -> str:
    """The text of :mod:`sagagraph.cli.saga_drawings`, drawn now by LangGraph."""
    from sagagraph.errors import ConfigurationError

    lines = [
        '"""LangGraph\'s drawings of the paper saga, by (router, parallel): written by',
        "``python -m sagagraph.cli.drawing``, checked by tests/test_cli_graph_drawing.py.",
        "",
        "Do not edit: write them again after a change to the graph.",
        '"""',
        "",
        "DRAWINGS: dict[tuple[str, bool], str] = {",
    ]
    for router, parallel in COMBINATIONS:
        try:
            text = langgraph_drawing(router, parallel)
        except ConfigurationError:
            continue  # refused by the builder: the command says why, through LangGraph
        lines.append(f"    ({json.dumps(router)}, {parallel}): (")
        lines += [f"        {json.dumps(line)}" for line in text.splitlines(keepends=True)]
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    source = drawings_source()
    DRAWINGS_FILE.write_text(source)
    print(f"wrote {DRAWINGS_FILE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
