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
