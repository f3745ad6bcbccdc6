"""The saga graph LangGraph Server serves: ``langgraph.json`` points ``langgraph dev`` here.

``graph`` is the paper saga (validator, then reviewer, then summarizer) as an *uncompiled*
``StateGraph``: the server compiles it with its own checkpointer, and refuses a graph that
brings one. From the repository root::

    langgraph dev --no-browser                  # serves http://127.0.0.1:2024

then, with ``langgraph-sdk``::

    client = get_sync_client(url="http://127.0.0.1:2024")
    thread = client.threads.create()
    state = client.runs.wait(thread["thread_id"], "saga", input={"input": {"paper": "p.pdf"}})
    saga_view(state)["status"]                  # "completed"

A run's input is ``{"input": {"paper": PATH}}``, optionally with ``"fail_at": STEP`` (inject a
failure, like ``--fail-at``) and ``"saga_id"`` (default: the thread id the server assigned).
The run's output is the saga's state; :func:`sagagraph.saga_view` turns it into the JSON view.
Relative paths are relative to the server's working directory.

Settings come from the environment when the server imports this module: ``SAGAGRAPH_OUTPUTS``
(where each saga writes ``<saga_id>/...``, default ``outputs``), and the engine's
``SAGAGRAPH_LLM``, ``SAGAGRAPH_MODEL``, ``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` (see
:mod:`sagagraph.agents.models`; offline without a key). Checkpoints belong to the server, not
to ``SAGAGRAPH_DB``: ``langgraph dev`` keeps them in memory and in ``.langgraph_api/``.
"""

from __future__ import annotations

import os

from langgraph.graph import StateGraph

from sagagraph.agents.engine import PaperEngine
from sagagraph.agents.models import make_engine
from sagagraph.agents.paper_saga import paper_saga_definition
from sagagraph.config import DEFAULT_OUTPUTS
from sagagraph.graph.builder import build_saga_graph
from sagagraph.graph.state import SagaState

SagaGraph = StateGraph[SagaState, None, SagaState, SagaState]


def build_server_graph(
    *, outputs_dir: str | None = None, engine: PaperEngine | None = None
) -> SagaGraph:
    """The paper saga graph, uncompiled; settings not given are read from the environment.

    Raises ConfigurationError when the environment asks for an engine it does not configure
    (``SAGAGRAPH_LLM=openai`` without ``OPENAI_API_KEY``), so the server fails at start-up
    rather than on its first run.
    """
    outputs = outputs_dir or os.environ.get("SAGAGRAPH_OUTPUTS") or DEFAULT_OUTPUTS
    definition = paper_saga_definition(
        engine=engine if engine is not None else make_engine(), outputs_dir=outputs
    )
    return build_saga_graph(definition)


graph: SagaGraph = build_server_graph()
"""The paper saga, configured from the environment: the graph ``langgraph.json`` names."""
