"""``sagagraph graph`` prints LangGraph's own drawing, byte for byte, without LangGraph.

The drawings kept in ``sagagraph/cli/saga_drawings.py`` are compared here with the ones
LangGraph draws now, for every combination of flags the command accepts. When this fails
after a change to the graph, write them again: ``python -m sagagraph.cli.drawing``.
"""

from __future__ import annotations

import argparse

import pytest

from sagagraph.cli import drawing, main
from sagagraph.cli.parser import build_parser
from sagagraph.errors import ConfigurationError

REWRITE = "the graph changed: run `python -m sagagraph.cli.drawing` to keep its new drawing"


def graph_parser() -> argparse.ArgumentParser:
    verbs = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert isinstance(verbs, dict)
    parser: argparse.ArgumentParser = verbs["graph"]
    return parser


def test_the_combinations_are_every_flag_the_command_accepts() -> None:
    """A new flag of ``graph`` must be drawn for too: this test names them all."""
    # --help and --debug (tracebacks) never change what is drawn.
    options = {a.dest: a for a in graph_parser()._actions if a.dest not in ("help", "debug")}
    assert sorted(options) == ["parallel", "router"]
    assert tuple(options["router"].choices or ()) == drawing.ROUTERS
    assert options["parallel"].const is True  # store_true: False or True
    assert len(drawing.COMBINATIONS) == len(drawing.ROUTERS) * 2


@pytest.mark.parametrize(("router", "parallel"), drawing.COMBINATIONS)
def test_each_kept_drawing_is_langgraphs_own(router: str, parallel: bool) -> None:
    kept = drawing.kept_drawing(router, parallel)
    try:
        drawn = drawing.langgraph_drawing(router, parallel)
    except ConfigurationError:
        assert kept is None, "kept a drawing of a graph the builder refuses"
        return
    assert kept == drawn, REWRITE


def test_the_kept_file_is_exactly_what_the_writer_writes() -> None:
    assert drawing.DRAWINGS_FILE.read_text() == drawing.drawings_source(), REWRITE


@pytest.mark.parametrize(
    "flags", [(), ("--parallel",), ("--router", "llm"), ("--router", "deterministic")]
)
def test_graph_prints_the_kept_drawing(
    flags: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", *flags]) == 0
    args = graph_parser().parse_args(list(flags))
    assert capsys.readouterr().out == drawing.langgraph_drawing(args.router, args.parallel) + "\n"


def test_a_refused_combination_is_refused_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", "--router", "llm", "--parallel"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "sagagraph: error: saga 'paper_review': parallel steps (Step.after) need "
        "router='deterministic'"
    )
