"""What a hostile LangGraph Server client sends is refused with a one-line reason before any
step runs; run in-process on the graph the server serves (its admit node decides)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from sagagraph.server import RunRefused, build_server_graph

REPO = Path(__file__).resolve().parents[2]
PAPER = str(REPO / "examples" / "papers" / "complete_paper.md")


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"input": "paper.md"}, "input: expected an object"),
        ({"input": [PAPER]}, "input: expected an object"),
        ({"input": {"paper": PAPER}, "saga_id": 7}, "saga id"),
        ({"input": {"paper": PAPER}, "saga_id": "../escape"}, "no path separators"),
        ({"input": {"paper": "a" * 1_000_000}}, "not a usable path (1000000 characters"),
        ({"input": {"paper": "p\x00.md"}}, "holding a NUL"),
    ],
    ids=["input-str", "input-list", "saga-id-int", "saga-id-dotdot", "huge-path", "nul-path"],
)
def test_hostile_run_input_is_refused_in_one_line_before_any_step(
    tmp_path: Path, given: Any, message: str
) -> None:
    graph = build_server_graph(outputs_dir=str(tmp_path / "out")).compile(
        checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "t1"}}
    with pytest.raises(RunRefused) as refused:
        graph.invoke(given, config)
    text = str(refused.value)
    assert message in text and "\n" not in text and len(text) < 400, text
    assert not graph.get_state(config).values.get("status")  # no saga started
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize(
    "given",
    [
        {"input": {"paper": PAPER}, "completed": ["validator", "reviewer", "summarizer"]},
        {"input": {"paper": PAPER}, "status": "completed"},
        {"input": {"paper": PAPER}, "outputs": {"validator": "/etc/passwd"}},
        {"input": {"paper": PAPER}, "cleanup": ["validator"], "events": [{"type": "x"}]},
    ],
    ids=["completed", "status", "outputs", "cleanup-events"],
)
def test_state_fields_in_the_run_input_are_refused_before_any_step(
    tmp_path: Path, given: Any
) -> None:
    graph = build_server_graph(outputs_dir=str(tmp_path / "out")).compile(
        checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "t1"}}
    with pytest.raises(RunRefused) as refused:
        graph.invoke(given, config)
    text = str(refused.value)
    unknown = sorted(set(given) - {"input"})
    assert f"not run input fields: {', '.join(unknown)}" in text, text
    assert "\n" not in text and len(text) < 400, text
    values = graph.get_state(config).values
    assert not any(values.get(field) for field in unknown), values  # nothing steered
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_later_runs_on_the_same_thread_still_work(tmp_path: Path) -> None:
    """A run paused before a step, then continued on the same thread with no input (as the
    Server resumes a thread), completes; the refused keys are only ever the run's own."""
    graph = build_server_graph(outputs_dir=str(tmp_path / "out")).compile(
        checkpointer=InMemorySaver(), interrupt_before=["reviewer"]
    )
    config: Any = {"configurable": {"thread_id": "t2"}}
    graph.invoke({"input": {"paper": PAPER}, "saga_id": "s2", "fail_at": None}, config)
    paused = graph.get_state(config)
    assert paused.next == ("reviewer",) and paused.values["completed"] == ["validator"]
    view = graph.invoke(None, config)
    assert view["status"] == "completed", view
    assert view["completed"] == ["validator", "reviewer", "summarizer"]
    assert view["saga_id"] == "s2"
    assert sorted(p.name for p in (tmp_path / "out" / "s2").iterdir()) == [
        "review.txt",
        "summary.txt",
        "validation.txt",
    ]
