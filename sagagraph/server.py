"""The saga graph LangGraph Server serves: ``langgraph.json`` points ``langgraph dev`` here.

``graph`` is the paper saga as an *uncompiled* ``StateGraph``: the server compiles it with its
own checkpointer (``langgraph dev`` keeps them in memory and in ``.langgraph_api/``, not in
``SAGAGRAPH_DB``), and refuses a graph that brings one. The README shows a client.

A run's input is ``{"input": {"paper": PATH}}``, optionally with ``"fail_at": STEP`` (a
failure injected into that step; also taken from inside ``input``) and ``"saga_id"`` (default:
the thread id the server assigned). A run whose paper
cannot be read, whose ``fail_at`` names no step, or whose input holds any other key (a state
field such as ``status`` would steer the saga) ends in error with a one-line reason before
any step runs. Its output is the saga's JSON view, as ``status --json`` prints it. Relative
paths are relative to the server's working directory.

Settings come from the environment at import: ``SAGAGRAPH_OUTPUTS`` (default ``outputs``,
made absolute) and the engine's (:mod:`sagagraph.agents.models`; offline without a key).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any

from langgraph.channels import EphemeralValue
from langgraph.graph import START, StateGraph

from sagagraph.agents.engine import PaperEngine
from sagagraph.agents.models import make_engine
from sagagraph.agents.paper_app import DEFAULT_OUTPUTS
from sagagraph.agents.paper_saga import paper_saga_definition
from sagagraph.agents.pdf.loader import PaperLoader, check_paper
from sagagraph.errors import ConfigurationError, InputError, SagaGraphError
from sagagraph.graph.builder import build_saga_graph
from sagagraph.graph.state import SagaState
from sagagraph.saga.names import validate_saga_id
from sagagraph.saga.protocol import SagaDefinition


class RunRefused(ValueError):
    """A run's input the saga refuses. A ValueError on purpose: LangGraph Server reports its
    message to the client, while other exception types become "An internal error occurred"."""


ADMIT = "admit"
"""The node that checks a run's input before the saga's first step (not a step: no events)."""

MAX_PATH = 4096
"""The longest paper path a run may give (Linux's PATH_MAX); a longer one is refused, not
echoed back in full."""

RUN_INPUT_FIELDS = ("input", "fail_at", "saga_id")
"""The keys a run's input may hold; the admit node writes them to the saga's state."""

RunInput = Annotated[dict[str, Any], EphemeralValue]
"""A run's input, whole, in one channel that lasts a single step: the START node writes no
state field, so only the admit node's checked fields reach the saga's state, and a later run
on the same thread (resuming, with no input) finds nothing left of this one."""

SagaGraph = StateGraph[SagaState, None, SagaState, Any]


def build_server_graph(
    *, outputs_dir: str | None = None, engine: PaperEngine | None = None
) -> SagaGraph:
    """The paper saga graph, uncompiled; settings not given are read from the environment.

    Raises ConfigurationError when the environment asks for an engine it does not configure
    (``SAGAGRAPH_LLM=openai`` without ``OPENAI_API_KEY``), so the server fails at start-up
    rather than on its first run.
    """
    # Resolved here, when the server imports this module: a relative folder resolved later,
    # inside the server's event loop, calls os.getcwd, which LangGraph Server refuses as a
    # blocking call ("BlockingError: An internal error occurred").
    outputs = os.path.abspath(outputs_dir or os.environ.get("SAGAGRAPH_OUTPUTS") or DEFAULT_OUTPUTS)
    definition = paper_saga_definition(
        engine=engine if engine is not None else make_engine(), outputs_dir=outputs
    )
    graph = build_saga_graph(definition, output="view", input_schema=RunInput)
    first = definition.step_names[0]
    # Bad input is refused, as the CLI refuses it before a saga starts: the admit node raises,
    # which ends the run in error (it has no error handler routing to compensation).
    graph.add_node(ADMIT, admission(definition), input_schema=RunInput)
    graph.edges.discard((START, first))
    graph.add_edge(START, ADMIT)
    graph.add_edge(ADMIT, first)
    return graph


def admission(definition: SagaDefinition) -> Any:
    """The admit node: refuse a run whose paper cannot be read or whose fail_at is no step;
    else write the run's input fields to the saga's state.

    It reads the run's input whole (:data:`RunInput`). A hostile client's input is refused the
    same way, with a one-line reason: a run input or ``input`` that is not an object, a key
    that is not one of :data:`RUN_INPUT_FIELDS` (a state field would steer the saga), a
    ``saga_id`` that is not a valid saga id, a paper path longer than :data:`MAX_PATH` or
    holding a NUL.
    """
    steps = definition.step_names
    loader: PaperLoader = definition.deps.loader

    def admit(run: Any) -> dict[str, Any]:
        try:
            state = fields(run)
            fail_at = check(state)
        except SagaGraphError as error:
            raise RunRefused(str(error)) from None
        update = {"input": state["input"]}
        if state.get("saga_id") is not None:
            update["saga_id"] = state["saga_id"]
        return update if fail_at is None else {**update, "fail_at": fail_at}

    def fields(run: Any) -> Mapping[str, Any]:
        """The run's input, once it is known to hold only input fields."""
        if not isinstance(run, Mapping):
            raise InputError(
                f'run input: expected an object {{"input": {{"paper": PATH}}}}, '
                f"not {type(run).__name__}"
            )
        unknown = sorted(str(key)[:40] for key in run if key not in RUN_INPUT_FIELDS)
        if unknown:
            named = ", ".join(unknown[:6]) + (
                f" and {len(unknown) - 6} more" if unknown[6:] else ""
            )
            raise InputError(
                f"run input: not run input fields: {named} "
                f"(a run's input holds only {', '.join(RUN_INPUT_FIELDS)})"
            )
        return run

    def check(state: Mapping[str, Any]) -> str | None:
        """The run's ``fail_at`` (top level, or inside ``input``), once its input is checked."""
        given = state.get("input")
        if given is not None and not isinstance(given, Mapping):
            raise InputError(
                f'input: expected an object {{"paper": PATH}}, not {type(given).__name__}'
            )
        if state.get("saga_id") is not None:
            validate_saga_id(state["saga_id"])
        fail_at = state.get("fail_at")
        inner = (given or {}).get("fail_at")
        if fail_at is not None and inner is not None and fail_at != inner:
            raise ConfigurationError(
                f"fail_at: given twice, as {fail_at!r} and input.fail_at {inner!r}"
            )
        fail_at = fail_at if fail_at is not None else inner
        if fail_at is not None and fail_at not in steps:
            raise ConfigurationError(
                f"fail_at: unknown step {fail_at!r} (steps: {', '.join(steps)})"
            )
        paper = (state.get("input") or {}).get("paper")
        if not isinstance(paper, str) or not paper.strip():
            raise InputError('input.paper: missing (expected {"input": {"paper": PATH}})')
        if len(paper) > MAX_PATH or "\x00" in paper:
            raise InputError(
                f"input.paper: not a usable path ({len(paper)} characters"
                f"{', holding a NUL' if chr(0) in paper else ''}; at most {MAX_PATH})"
            )
        # Parsed once: the loader caches the paper for the steps that follow.
        check_paper(paper, loader=loader)
        return None if fail_at is None else str(fail_at)

    return admit


graph: SagaGraph = build_server_graph()
"""The paper saga, configured from the environment: the graph ``langgraph.json`` names."""
