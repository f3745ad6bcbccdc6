"""Start-up: each command imports only what it needs.

Each probe runs the command in a fresh interpreter, as the ``sagagraph`` script does, then
records which modules were imported. ``--help`` needs neither LangGraph nor any agent;
``list``, ``status`` and ``events`` of finished sagas read what was kept when they ended with
the database driver alone: none of them loads LangGraph (``graph`` asks LangGraph to draw).
Sagas that have not finished are read through LangGraph's saver, never with the model
client, the PDF reader or the plotting stack.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from sagagraph.cli import main
from sagagraph.cli.parser import Handler, build_parser
from tests.support.command_probe import REPO, imported, probe

PAPER = REPO / "examples" / "papers" / "complete_paper.md"

HEAVY = ("langchain_openai", "openai", "pypdf", "matplotlib")
"""Never needed to list, show or draw sagas: the model client, the PDF reader, the plots."""


@pytest.fixture
def one_saga(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """``tmp_path`` holding ``sagagraph.sqlite`` with one completed saga, ``s1``."""
    for name in ("SAGAGRAPH_DB", "SAGAGRAPH_BUS", "SAGAGRAPH_AMQP_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SAGAGRAPH_LLM", "offline")
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(PAPER), "--saga-id", "s1"]) == 0
    return tmp_path


def test_help_loads_neither_langgraph_nor_any_command_module(tmp_path: Path) -> None:
    result = probe(tmp_path, "--help")
    assert result["code"] == 0
    modules = result["modules"]
    for package in (*HEAVY, "langgraph", "langchain_core", "pydantic"):
        assert not imported(modules, package), package
    commands = [
        m for m in modules if m.startswith("sagagraph.") and not m.startswith("sagagraph.cli")
    ]
    assert not [m for m in commands if m.startswith(("sagagraph.agents", "sagagraph.graph"))]
    assert "sagagraph.cli.run" not in modules


@pytest.mark.parametrize(
    "args",
    [("list",), ("list", "--json"), ("status", "s1"), ("graph",), ("graph", "--router", "llm")],
)
def test_list_status_and_graph_load_no_model_client_pdf_reader_or_plots(
    one_saga: Path, args: tuple[str, ...]
) -> None:
    result = probe(one_saga, *args)
    assert result["code"] == 0
    assert [p for p in HEAVY if imported(result["modules"], p)] == []


LANGGRAPH = ("langgraph.graph", "langgraph.checkpoint", "langgraph.types", "langchain_core")
"""What building or reading a saga's graph loads (``import langgraph.graph``: 0.6-1.4 s)."""


def test_status_of_an_unfinished_saga_reads_it_through_the_saver(one_saga: Path) -> None:
    """The probe sees LangGraph when it is loaded: a saga with writes after its last
    checkpoint is read through LangGraph's saver (tests/cli/test_cli_fast_reads.py checks
    that a finished one is not)."""
    from sagagraph import open_checkpointer, saga_config

    with open_checkpointer("sqlite:///sagagraph.sqlite") as checkpointer:
        latest = checkpointer.get_tuple(saga_config("s1"))
        assert latest is not None
        # Writes after the last checkpoint: only a full read applies them.
        checkpointer.put_writes(latest.config, [("status", "running")], "a-task")
    result = probe(one_saga, "status", "s1")
    assert imported(result["modules"], "langgraph.checkpoint")


def test_import_sagagraph_alone_loads_nothing_heavy(tmp_path: Path) -> None:
    code = "import json, sys, sagagraph; print(json.dumps(sorted(sys.modules)))"
    env = os.environ | {"PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    modules = json.loads(out.stdout)
    for package in (*HEAVY, "langgraph", "langchain_core", "pydantic"):
        assert not imported(modules, package), package


PACKAGES = [
    "sagagraph",
    "sagagraph.agents",
    "sagagraph.tools",
    "sagagraph.choreography",
    "sagagraph.graph",
]


def lazy_table(package: ModuleType) -> dict[str, str]:
    """Each public name of ``package`` and the module that defines it (its ``_EXPORTS``)."""
    exports: dict[str, str] = package._EXPORTS
    return {name: module for module, names in exports.items() for name in names.split()}


@pytest.mark.parametrize("name", PACKAGES)
def test_every_public_name_resolves_from_the_module_that_defines_it(name: str) -> None:
    package = importlib.import_module(name)
    table = lazy_table(package)
    names = set(package.__all__) - {"__version__"}
    assert set(table) == names
    for public in sorted(names):
        value = getattr(package, public)
        assert value is getattr(sys.modules[table[public]], public), public
    assert set(package.__all__) <= set(dir(package))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        package.nope  # noqa: B018


@pytest.mark.parametrize("name", PACKAGES)
def test_the_type_checking_imports_name_the_same_modules_as_the_lazy_table(name: str) -> None:
    """What mypy sees (``if TYPE_CHECKING:`` imports) is what runs (``_EXPORTS``)."""
    package = importlib.import_module(name)
    tree = ast.parse(Path(str(package.__file__)).read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If))
    typed = {
        alias.name: node.module
        for node in ast.walk(block)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert typed == lazy_table(package)


def test_every_verb_names_a_handler_that_exists() -> None:
    parser = build_parser()
    verbs = next(a for a in parser._actions if a.dest == "command").choices
    assert isinstance(verbs, dict)
    for name, sub in verbs.items():
        handler = sub.get_default("func")
        assert isinstance(handler, Handler), name
        module = __import__(handler.module_name, fromlist=[handler.function])
        assert callable(getattr(module, handler.function)), name
