"""``bench.router_risk``: scripted misbehaviours through ChatOpenAI never execute an invalid
route, and its own validity check (independent of the guard) catches one that is."""

from __future__ import annotations

from typing import Any

from bench import router_risk


def test_every_behaviour_on_the_sample_papers_runs_no_invalid_step() -> None:
    rows = router_risk.run_experiment(router_risk.default_papers(quick=True), real=False)
    summary = {s["behaviour"]: s for s in router_risk.summarize(rows)}
    assert set(summary) == set(router_risk.BEHAVIOURS)
    for s in summary.values():
        assert s["invalid_executions"] == 0, s
        assert s["completed"] == s["sagas"] == 2
    assert summary["well_behaved"]["rejections"] == 0
    assert summary["well_behaved"]["routes_differ"] == 0
    assert set(summary["undefined_steps"]["rejections_by_kind"]) == {"undefined"}
    assert summary["undefined_steps"]["fallbacks"] > 0
    assert "skip" in summary["skips_validator"]["rejections_by_kind"]
    assert {"repeat", "early_finish"} <= set(
        summary["repeats_or_finishes_early"]["rejections_by_kind"]
    )
    wrong = summary["wrong_alternative"]
    assert wrong["routes_differ"] == 2 and wrong["defensible"] == 0
    assert "excluded" in wrong["rejections_by_kind"]
    table = router_risk.render(list(summary.values()))
    assert table.splitlines()[0].startswith("| behaviour |")


def _view(route: list[str], status: str = "completed", compensated: Any = ()) -> dict[str, Any]:
    events = [{"step": s, "action": "execute", "outcome": "ok", "detail": ""} for s in route]
    return {"events": events, "status": status, "compensated": list(compensated)}


def test_the_validity_check_catches_what_the_guard_should_have_refused() -> None:
    ok = ["validator", "reviewer", "reproducibility", "summarizer"]
    assert router_risk.invalid(_view(ok)) == []
    assert router_risk.invalid(_view(["validator", "survey_reviewer", "summarizer"])) == []
    assert router_risk.invalid(_view(["reviewer", "summarizer"]))  # skipped the validator
    assert router_risk.invalid(_view(["validator", "reviewer", "survey_reviewer", "summarizer"]))
    assert router_risk.invalid(_view(["validator", "reviewer", "reviewer", "summarizer"]))
    assert router_risk.invalid(_view(["validator", "formatting_agent", "summarizer"]))
    assert router_risk.invalid(_view(["validator", "reviewer"]))  # completed early
    undone = _view(["validator", "reviewer"], "rolled_back", ["reviewer", "validator"])
    assert router_risk.invalid(undone) == []
    wrong_order = _view(["validator", "reviewer"], "rolled_back", ["validator", "reviewer"])
    assert router_risk.invalid(wrong_order)
    assert router_risk.defensible(ok, ["validator", "reviewer", "summarizer"])
    assert not router_risk.defensible(["validator", "survey_reviewer", "summarizer"], ok)
