"""``sagagraph run PAPER --pipeline adaptive``: the route depends on the paper.

The corpus's labels say only valid or invalid, so the kinds are given here, read from the
papers themselves: "Attention Is All You Need" reports experiments (section 6 Results); "Beyond
Summarization" calls itself "this position paper" and reports none. Offline, the declared rules
decide from the validator's profile of the paper.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sagagraph.agents import paper_saga_definition
from sagagraph.agents.paper_agents import profile_paper
from sagagraph.agents.pdf.loader import load_paper
from sagagraph.cli import main

REPO = Path(__file__).resolve().parents[2]
INCOMPLETE = REPO / "examples" / "papers" / "incomplete_paper.md"
SURVEY = REPO / "examples" / "papers" / "survey_paper.md"
EMPIRICAL = "papers/attention_1706.03762v7.pdf"
POSITION = "papers/beyond_summarization_2304.02623v1.pdf"
KINDS = {
    "papers/attention_1706.03762v7.pdf": "empirical",
    "papers/beyond_summarization_2304.02623v1.pdf": "position",
    "papers/dpr_2004.04906.pdf": "empirical",
    "papers/individual_dp_ieee_tifs.pdf": "empirical",
    "papers/multilexsum_2206.10883v3.pdf": "empirical",
    "papers/s2orc_acl2020.pdf": "empirical",
}
"""Kinds read from the papers (see the module docstring); the corpus's labels do not say."""

pytestmark = pytest.mark.usefixtures("offline_cli")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["run", *args, "--pipeline", "adaptive", "--json"])
    return code, json.loads(capsys.readouterr().out)


def files(tmp_path: Path, saga_id: str) -> set[str]:
    folder = tmp_path / "outputs" / saga_id
    return {p.name for p in folder.iterdir()} if folder.exists() else set()


def test_an_empirical_paper_gets_the_reviewer_and_the_reproducibility_check(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, view = run(capsys, str(corpus / EMPIRICAL), "--saga-id", "emp")
    assert code == 0
    assert view["completed"] == ["validator", "reviewer", "reproducibility", "summarizer"]
    assert files(tmp_path, "emp") == {
        "validation.txt",
        "review.txt",
        "reproducibility.txt",
        "summary.txt",
    }
    text = (tmp_path / "outputs" / "emp" / "reproducibility.txt").read_text()
    assert "code: named" in text and "github.com/" in text  # quoted, with its page
    assert "hardware: named" in text and "P100" in text
    routes = [e["detail"] for e in view["events"] if e["action"] == "route"]
    assert routes == [
        "rules: choice review: reviewer (default; no other rule holds)",
        "rules: reproducibility: runs (rule holds)",
    ]


def test_a_position_paper_gets_the_survey_reviewer_and_no_reproducibility_check(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, view = run(capsys, str(corpus / POSITION), "--saga-id", "pos")
    assert code == 0
    assert view["completed"] == ["validator", "survey_reviewer", "summarizer"]
    assert files(tmp_path, "pos") == {"validation.txt", "survey_review.txt", "summary.txt"}
    review = (tmp_path / "outputs" / "pos" / "survey_review.txt").read_text()
    for heading in ("Coverage", "Taxonomy", "Recency"):
        assert f"\n{heading}\n- " in review
    assert "(REFERENCES, p.3)" in review  # findings name the section and page they rest on


def test_a_survey_gets_the_survey_reviewer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, view = run(capsys, str(SURVEY), "--saga-id", "sur")
    assert code == 0
    assert view["completed"] == ["validator", "survey_reviewer", "summarizer"]
    assert view["results"]["validator"]["profile"]["kind"] == "survey"


def test_fail_at_summarizer_compensates_exactly_the_steps_that_ran_newest_first(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, view = run(capsys, str(corpus / EMPIRICAL), "--saga-id", "f1", "--fail-at", "summarizer")
    assert code == 3
    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["summarizer", "reproducibility", "reviewer", "validator"]
    assert view["completed"] == [] and view["outputs"] == {}
    assert files(tmp_path, "f1") == set()
    code, view = run(capsys, str(corpus / POSITION), "--saga-id", "f2", "--fail-at", "summarizer")
    assert code == 3
    assert view["compensated"] == ["summarizer", "survey_reviewer", "validator"]
    assert files(tmp_path, "f2") == set()


def test_an_incomplete_paper_halts_before_any_choice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, view = run(capsys, str(INCOMPLETE), "--saga-id", "bad")
    assert code == 5
    assert view["status"] == "rolled_back" and view["reason"]
    assert view["completed"] == [] and files(tmp_path, "bad") == set()
    assert not [e for e in view["events"] if e["action"] == "route"]


def test_the_blackboard_follows_the_same_triggers(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, view = run(capsys, str(corpus / POSITION), "--saga-id", "bb", "--mode", "blackboard")
    assert code == 0
    ran = [e["step"] for e in view["events"] if e["action"] == "execute" and e["outcome"] == "ok"]
    assert ran[:3] == ["validator", "survey_reviewer", "summarizer"]
    assert "reviewer" not in ran and "reproducibility" not in ran


@pytest.mark.parametrize(
    ("flags", "word"),
    [
        (["--mode", "choreography"], "--mode orchestration or blackboard"),
        (["--parallel"], "parallel"),
    ],
)
def test_the_adaptive_pipeline_is_refused_where_it_cannot_run(
    flags: list[str], word: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(INCOMPLETE), "--pipeline", "adaptive", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sagagraph: error: --pipeline adaptive") and "\n" not in err
    assert word in err


def test_fail_at_an_adaptive_step_needs_the_adaptive_pipeline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", str(INCOMPLETE), "--fail-at", "reproducibility"]) == 2
    assert "needs --pipeline adaptive" in capsys.readouterr().err


def test_the_profile_matches_the_kinds_read_from_the_papers(corpus: Path) -> None:
    for name, kind in KINDS.items():
        profile = profile_paper(load_paper(corpus / name))
        assert profile["kind"] == kind, (name, profile)
        assert profile["reports_experiments"] == (kind == "empirical"), name
        assert profile["evidence"], name


def test_the_default_pipeline_is_unchanged(tmp_path: Path) -> None:
    definition = paper_saga_definition(outputs_dir=tmp_path)
    assert definition.step_names == ("validator", "reviewer", "summarizer")
    assert not definition.has_choices
    adaptive = paper_saga_definition(outputs_dir=tmp_path, pipeline="adaptive")
    assert adaptive.step_names == (
        "validator",
        "reviewer",
        "survey_reviewer",
        "reproducibility",
        "summarizer",
    )


@pytest.mark.parametrize("mode", ["orchestration", "blackboard"])
def test_the_three_reference_scenarios_hold_under_the_adaptive_pipeline(
    mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    complete = REPO / "examples" / "papers" / "complete_paper.md"
    code, view = run(capsys, str(complete), "--mode", mode, "--saga-id", f"{mode}-ok")
    assert code == 0 and view["status"] == "completed"
    assert {"validation.txt", "review.txt", "reproducibility.txt", "summary.txt"} <= files(
        tmp_path, f"{mode}-ok"
    )
    code, view = run(capsys, str(INCOMPLETE), "--mode", mode, "--saga-id", f"{mode}-bad")
    assert code == 5 and files(tmp_path, f"{mode}-bad") == set()
    args = ["--mode", mode, "--saga-id", f"{mode}-fail", "--fail-at", "summarizer"]
    code, view = run(capsys, str(complete), *args)
    assert code == 3 and view["status"] == "rolled_back"
    assert view["compensated"] == ["summarizer", "reproducibility", "reviewer", "validator"]
    assert files(tmp_path, f"{mode}-fail") == set()
