"""``sagagraph graph`` prints LangGraph's own drawing of the paper saga, for every
combination of flags the command accepts."""

from __future__ import annotations

import argparse

import pytest

from sagagraph.cli import drawing, main
from sagagraph.cli.parser import build_parser


def graph_parser() -> argparse.ArgumentParser:
    verbs = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert isinstance(verbs, dict)
    parser: argparse.ArgumentParser = verbs["graph"]
    return parser


def test_the_combinations_are_every_flag_the_command_accepts() -> None:
    """A new flag of ``graph`` must be drawn for too: this test names them all."""
    # --help and --debug (tracebacks) never change what is drawn.
    options = {a.dest: a for a in graph_parser()._actions if a.dest not in ("help", "debug")}
    # --app draws another saga's definition live, not the paper saga's kept drawings
    # (tests/cli/test_pivot_cli.py).
    assert sorted(options) == ["app", "parallel", "pipeline", "router"]
    assert tuple(options["router"].choices or ()) == drawing.ROUTERS
    assert tuple(options["pipeline"].choices or ()) == drawing.PIPELINES
    assert options["parallel"].const is True  # store_true: False or True
    assert len(drawing.COMBINATIONS) == len(drawing.ROUTERS) * 2 * len(drawing.PIPELINES)


@pytest.mark.parametrize(
    "flags",
    [
        (),
        ("--parallel",),
        ("--router", "llm"),
        ("--router", "deterministic"),
        ("--pipeline", "adaptive"),
        ("--pipeline", "adaptive", "--router", "llm"),
    ],
)
def test_graph_prints_langgraphs_drawing(
    flags: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", *flags]) == 0
    args = graph_parser().parse_args(list(flags))
    out = capsys.readouterr().out
    assert out == drawing.langgraph_drawing(args.router, args.parallel, args.pipeline) + "\n"
    # What a reader needs: the nodes by name and the edges between them; no metadata the
    # builder keeps for itself, no self-loops (compensate's one compensation a superstep).
    assert "sagagraph_routes_itself" not in out and "<hr/>" not in out
    edges = [line.strip().rstrip(";") for line in out.splitlines() if "->" in line]
    assert edges and all(e.split()[0] != e.split()[-1] for e in edges), edges
    assert "\tvalidator(validator)" in out and "compensate -.-> __end__;" in out


def test_a_refused_combination_is_refused_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", "--router", "llm", "--parallel"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "sagagraph: error: saga 'paper_review': parallel steps (Step.after) need "
        "router='deterministic'"
    )


def test_the_adaptive_pipeline_draws_each_choice(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", "--pipeline", "adaptive"]) == 0
    out = capsys.readouterr().out
    for edge in (
        "validator -.-> reviewer;",
        "validator -.-> survey_reviewer;",
        "reviewer -.-> reproducibility;",
        "reviewer -.-> summarizer;",
        "reproducibility -.-> summarizer;",
    ):
        assert edge in out
    assert main(["graph", "--pipeline", "adaptive", "--parallel"]) == 2
    assert "chain" in capsys.readouterr().err
