"""A saga definition drawn by the sides of its pivot (``sagagraph graph --app``).

LangGraph's own Mermaid drawing of the definition's graph (as a reader needs it,
:mod:`sagagraph.graph.drawn`), with each step classed
``compensatable``, ``pivot`` or ``retriable`` (:mod:`sagagraph.graph.pivot`), so the reader
sees where the saga stops being able to roll back.
"""

from __future__ import annotations

from sagagraph.errors import ConfigurationError
from sagagraph.graph.builder import build_saga_graph
from sagagraph.graph.definitions import load_factory, make
from sagagraph.graph.drawn import reader_mermaid
from sagagraph.saga.protocol import SagaDefinition

_SIDES = {
    "compensatable": "fill:#e8eefc,stroke:#6b7fd7",
    "pivot": "fill:#ffd9a8,stroke:#c65f00,stroke-width:3px",
    "retriable": "fill:#dcf5dc,stroke:#3f9a3f",
}


def sides_drawing(reference: str) -> str:
    """LangGraph's Mermaid drawing of the saga ``module:factory`` names, each step classed by
    the side of the pivot it stands on (``compensatable``, ``pivot``, ``retriable``)."""
    made = make(load_factory(reference), {}, reference)
    if not isinstance(made, SagaDefinition):
        raise ConfigurationError(f"--app {reference!r}: expected a SagaDefinition to draw")
    drawing = reader_mermaid(build_saga_graph(made).compile()).rstrip("\n")
    lines = [drawing, *(f"\tclassDef {kind} {style}" for kind, style in _SIDES.items())]
    for kind in _SIDES:
        steps = [s.name for s in made.steps if s.kind == kind]
        if steps:
            lines.append(f"\tclass {','.join(steps)} {kind}")
    return "\n".join(lines) + "\n"
