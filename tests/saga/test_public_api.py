"""The public API: the engine's names in ``sagagraph``, the paper app's in ``sagagraph.agents``."""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sagagraph
import sagagraph.agents

REPO = Path(__file__).resolve().parents[2]


def test_the_engine_exports_at_most_60_names() -> None:
    assert len(sagagraph.__all__) <= 60
    assert len(set(sagagraph.__all__)) == len(sagagraph.__all__)


@pytest.mark.parametrize("package", [sagagraph, sagagraph.agents], ids=lambda p: p.__name__)
def test_every_exported_name_imports(package: object) -> None:
    module = importlib.import_module(package.__name__)  # type: ignore[attr-defined]
    for name in module.__all__:
        assert getattr(module, name) is not None, name
        exec(f"from {module.__name__} import {name}", {})


def _defining_module(package: object) -> dict[str, str]:
    """Each public name of ``package`` and the module its lazy table imports it from."""
    exports: dict[str, str] = package._EXPORTS  # type: ignore[attr-defined]
    return {name: module for module, names in exports.items() for name in names.split()}


def test_no_name_of_the_paper_app_is_in_the_engines_api() -> None:
    engine = set(sagagraph.__all__)
    lazy = _defining_module(sagagraph)
    assert not engine & set(sagagraph.agents.__all__)
    for name in engine - {"__version__"}:
        value = getattr(sagagraph, name)
        defined_in = getattr(value, "__module__", lazy[name])
        assert not str(defined_in).startswith("sagagraph.agents"), name
        assert not lazy[name].startswith("sagagraph.agents"), name
    assert not {n for n in engine if "paper" in n.lower()}


def test_the_paper_app_lives_under_agents() -> None:
    lazy = _defining_module(sagagraph.agents)
    for name in sagagraph.agents.__all__:
        module = lazy[name]
        assert module.startswith(("sagagraph.agents", "sagagraph.errors")), name


def test_import_sagagraph_agents_alone_loads_no_model_client() -> None:
    code = "import json, sys, sagagraph.agents; print(json.dumps(sorted(sys.modules)))"
    env = os.environ | {"PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    modules = set(json.loads(out.stdout))
    for heavy in ("langgraph", "langchain_openai", "openai", "pypdf"):
        assert heavy not in modules, heavy


def test_every_view_has_the_keys_each_part_adds_whatever_a_process_loaded() -> None:
    """The kernel's view has every key, whichever modules a process loaded: no registry."""
    code = (
        "import json, sys; from sagagraph.saga.view import saga_view; "
        "view = saga_view({'events': []}); "
        "print(json.dumps([sorted(view), 'langchain_core' in sys.modules]))"
    )
    env = os.environ | {"PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    keys, langchain = json.loads(out.stdout)
    assert {"tools", "dead_letter", "completed", "compensated", "outputs"} <= set(keys)
    assert "board" not in keys  # only a saga whose state has a board shows one
    assert not langchain


def test_a_builder_refuses_a_step_named_as_a_node_reserved_after_its_definition() -> None:
    from sagagraph import SagaDefinition, Step, StepResult, build_saga_graph, participant
    from sagagraph.errors import ConfigurationError
    from sagagraph.saga.names import RESERVED_NAMES, reserve_names

    style_node = participant("style_node", lambda ctx: StepResult())
    definition = SagaDefinition("early", [Step(style_node)])
    reserve_names("style_node")
    try:
        with pytest.raises(ConfigurationError, match="'style_node' is reserved"):
            build_saga_graph(definition)
        with pytest.raises(ConfigurationError, match="reserved"):
            SagaDefinition("late", [Step(style_node)])
    finally:
        RESERVED_NAMES.discard("style_node")


def test_loading_a_paper_never_imports_the_agents_that_judge_it() -> None:
    """``agents/pdf`` builds a Paper from its headings: nothing else of the app, not even for
    types (the validator's rules, the reviewer and the summarizer import it, never the other
    way round)."""
    imported = set()
    for path in (REPO / "sagagraph" / "agents" / "pdf").glob("*.py"):
        tree = ast.parse(path.read_text())
        imported |= {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sagagraph.")
        }
    app = {m for m in imported if m.startswith("sagagraph.agents.")}
    assert "sagagraph.agents.pdf.files" in app  # the walk sees the modules' imports
    assert app - {m for m in app if m.startswith("sagagraph.agents.pdf.")} == {
        "sagagraph.agents.headings",
        "sagagraph.agents.paper",
    }
