"""``compare_modes``: the same papers under orchestration, choreography and the blackboard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sagagraph.agents.paper_app import PaperSettings as Settings
from sagagraph.compare_modes import MODES, compare_modes, parse_modes, render_mode_comparison
from sagagraph.errors import ConfigurationError
from tests.cli.test_recovery_cli import PAPER, sagagraph

TWO_PAPERS = ("papers/attention_1706.03762v7.pdf", "papers/dpr_2004.04906.pdf")


def settings_in(tmp_path: Path) -> dict[str, Any]:
    """compare_modes' settings and stores, kept under ``tmp_path``."""
    settings = Settings.resolve(outputs=str(tmp_path / "outputs"), llm="offline")
    return {
        "settings": settings,
        "db": f"sqlite:///{tmp_path / 'sagas.sqlite'}",
        "bus": "memory://",
    }


def test_two_corpus_papers_end_alike_under_the_three_styles(corpus: Path, tmp_path: Path) -> None:
    papers = [corpus / name for name in TWO_PAPERS]
    rows = compare_modes(papers, **settings_in(tmp_path))

    assert [(Path(r["paper"]).name, r["mode"]) for r in rows] == [
        (Path(p).name, mode) for p in TWO_PAPERS for mode in MODES
    ]
    for paper in papers:
        by_mode = {r["mode"]: r for r in rows if r["paper"] == str(paper)}
        assert {m: r["status"] for m, r in by_mode.items()} == dict.fromkeys(MODES, "completed")
        assert {m: r["steps_run"] for m, r in by_mode.items()} == {
            "orchestration": 3,
            "choreography": 3,
            "blackboard": 4,  # the three knowledge sources and the reviewer's refinement
        }
        # Same agents, same outputs; only the blackboard's review carries its refined section.
        outputs = {m: r["outputs"] for m, r in by_mode.items()}
        assert outputs["orchestration"] == outputs["choreography"]
        for step in ("validator", "summarizer"):
            assert outputs["blackboard"][step] == outputs["orchestration"][step]
        assert outputs["blackboard"]["reviewer"] != outputs["orchestration"]["reviewer"]
        assert by_mode["blackboard"]["events"] > by_mode["orchestration"]["events"]
    table = render_mode_comparison(rows)
    assert table.splitlines()[0].split() == [
        "paper",
        "mode",
        "outcome",
        "route",
        "steps",
        "events",
        "tokens",
        "in/out",
        "seconds",
    ]
    lines = table.splitlines()
    assert lines[2 + len(rows)] == ""
    # The blackboard's route has the reviewer's refinement: a route the other modes lack.
    assert lines[3 + len(rows)] == "2 paper(s) took different routes:"


def test_a_failure_injected_into_every_mode_rolls_each_back(tmp_path: Path) -> None:
    rows = compare_modes([PAPER], **settings_in(tmp_path), fail_at="summarizer")
    assert [(r["mode"], r["status"], r["outputs"]) for r in rows] == [
        (mode, "rolled_back", {}) for mode in MODES
    ]


def test_an_unknown_mode_is_a_one_line_error() -> None:
    assert parse_modes("orchestration, blackboard") == ("orchestration", "blackboard")
    with pytest.raises(ConfigurationError, match="--modes 'orchestration,swarm'"):
        parse_modes("orchestration,swarm")


@pytest.mark.slow
def test_sagagraph_compare_modes_prints_the_table_and_json(tmp_path: Path) -> None:
    args = ["--db", f"sqlite:///{tmp_path / 's.sqlite'}", "--bus", "memory://"]
    args += ["--outputs", str(tmp_path / "out"), "--llm", "offline"]
    modes = "orchestration,choreography,blackboard"
    shown = sagagraph(tmp_path, "compare", "--modes", modes, str(PAPER), *args)
    assert shown.returncode == 0, shown.stderr
    rows = shown.stdout.splitlines()[2 : 2 + len(MODES)]
    assert [line.split()[1] for line in rows] == list(MODES)
    assert "took different routes" in shown.stdout  # the blackboard's refinement
    as_json = sagagraph(tmp_path, "compare", "--modes", "blackboard", str(PAPER), *args, "--json")
    (row,) = json.loads(as_json.stdout)
    assert (row["mode"], row["status"], row["steps_run"]) == ("blackboard", "completed", 4)
    bad = sagagraph(tmp_path, "compare", "--modes", "swarm", str(PAPER), *args)
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("sagagraph: error: --modes 'swarm'")
