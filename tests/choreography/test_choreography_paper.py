"""The design's three reference scenarios, with the paper pipeline, choreographed on every bus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from sagagraph import build_saga_graph, run_saga
from sagagraph.agents.paper_saga import paper_saga_definition
from sagagraph.choreography.runner import choreography_status, run_choreographed_saga
from tests.support.choreo_buses import BACKENDS, fresh_bus

COMPARED = ("status", "reason", "completed", "compensated", "results", "halted", "failure")
OUTPUT_FILES = ["review.txt", "summary.txt", "validation.txt"]


@pytest.fixture
def complete_paper(corpus: Path) -> str:
    return str(corpus / "papers" / "attention_1706.03762v7.pdf")


@pytest.fixture
def incomplete_paper(tmp_path: Path) -> str:
    """A title, an introduction and a methodology: nothing else."""
    path = tmp_path / "incomplete.md"
    path.write_text(
        "# Tracking Sparrows With Cheap Microphones\n\n"
        "## Introduction\n\n" + "Sparrows are small birds that sing at dawn. " * 30 + "\n\n"
        "## Methodology\n\n" + "We placed forty microphones along a hedge. " * 30 + "\n"
    )
    return str(path)


def files(outputs: Path, saga_id: str) -> dict[str, str]:
    folder = outputs / saga_id
    if not folder.exists():
        return {}
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


def orchestrated(outputs: Path, input: dict[str, Any], fail_at: str | None) -> dict[str, Any]:
    app = build_saga_graph(paper_saga_definition(outputs_dir=outputs)).compile(
        checkpointer=InMemorySaver()
    )
    return run_saga(app, input, saga_id="paper-1", fail_at=fail_at)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("scenario", ["success", "early_termination", "compensation"])
def test_reference_scenario_matches_orchestration(
    tmp_path: Path,
    backend: str,
    scenario: str,
    complete_paper: str,
    incomplete_paper: str,
) -> None:
    paper = incomplete_paper if scenario == "early_termination" else complete_paper
    fail_at = "summarizer" if scenario == "compensation" else None
    input = {"paper": paper}
    expected = orchestrated(tmp_path / "orchestrated", input, fail_at)
    outputs = tmp_path / "choreographed"
    with fresh_bus(backend, tmp_path) as bus:
        definition = paper_saga_definition(outputs_dir=outputs)
        view = run_choreographed_saga(definition, input, "paper-1", bus, fail_at=fail_at)
        assert choreography_status(bus, "paper-1") == view

    assert {k: view[k] for k in COMPARED} == {k: expected[k] for k in COMPARED}
    assert files(outputs, "paper-1") == files(tmp_path / "orchestrated", "paper-1")
    assert view["mode"] == "choreography"
    if scenario == "success":
        assert view["status"] == "completed"
        assert view["completed"] == ["validator", "reviewer", "summarizer"]
        assert sorted(files(outputs, "paper-1")) == OUTPUT_FILES
        assert len(files(outputs, "paper-1")["summary.txt"].split()) == 300
    elif scenario == "early_termination":
        assert view["status"] == "rolled_back"
        assert view["reason"] and "not a complete research paper" in view["reason"]
        assert view["compensated"] == []
        assert [e["step"] for e in view["events"] if e["action"] == "execute"] == ["validator"]
        assert files(outputs, "paper-1") == {}
    else:
        assert view["status"] == "rolled_back"
        assert view["compensated"] == ["summarizer", "reviewer", "validator"]
        assert files(outputs, "paper-1") == {}


def test_paper_saga_uses_the_design_vocabulary() -> None:
    from sagagraph.choreography.topology import derive_choreography

    choreography = derive_choreography(paper_saga_definition())
    assert [
        (r.name, r.subscriptions, r.success_event, r.compensation_event) for r in choreography.roles
    ] == [
        (
            "validator",
            ("paper_submitted", "review_compensated"),
            "validated",
            "validation_compensated",
        ),
        ("reviewer", ("validated", "summary_compensated"), "reviewed", "review_compensated"),
        ("summarizer", ("reviewed",), "summarized", "summary_compensated"),
    ]
