"""``run_saga`` and ``arun_saga`` refuse input the saga cannot use before a saga exists.

A definition declares its input check (``SagaDefinition(check_input=...)``); the paper saga's
checks that the paper is readable, as the CLI and the LangGraph Server do. An unreadable paper
is an InputError naming the field and the cause, and the checkpointer holds no saga after it:
no checkpoint, nothing to recover, no output.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from sagagraph.agents.paper_blackboard import paper_blackboard_graph
from sagagraph.agents.paper_saga import paper_saga_definition
from sagagraph.errors import InputError
from sagagraph.graph.async_runner import arun_saga
from sagagraph.graph.builder import build_saga_graph
from sagagraph.graph.runner import run_saga
from sagagraph.saga.protocol import SagaDefinition, StepContext, StepResult
from tests.support.toy_saga import stored_views

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "examples" / "papers" / "complete_paper.md"

BAD_PAPERS = {
    "missing": (None, "no such file"),
    "not_a_pdf.pdf": (b"hello, I am no PDF", "not a PDF"),
    "empty.pdf": (b"", "empty"),
}


def bad_paper(folder: Path, name: str) -> Path:
    content, _ = BAD_PAPERS[name]
    path = folder / name
    if content is not None:
        path.write_bytes(content)
    return path


@pytest.mark.parametrize("name", sorted(BAD_PAPERS))
@pytest.mark.parametrize("style", ["orchestration", "blackboard"])
def test_run_saga_refuses_an_unreadable_paper_before_a_saga_exists(
    tmp_path: Path, name: str, style: str
) -> None:
    definition = paper_saga_definition(outputs_dir=tmp_path / "outputs")
    build = build_saga_graph if style == "orchestration" else paper_blackboard_graph
    app = build(definition).compile(checkpointer=InMemorySaver())
    with pytest.raises(InputError) as refused:
        run_saga(app, {"paper": str(bad_paper(tmp_path, name))}, saga_id="bad")
    message = str(refused.value)
    assert message.startswith("input.paper: "), message
    assert BAD_PAPERS[name][1] in message
    assert "\n" not in message
    assert stored_views(app) == []
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("name", sorted(BAD_PAPERS))
def test_arun_saga_refuses_an_unreadable_paper_before_a_saga_exists(
    tmp_path: Path, name: str
) -> None:
    definition = paper_saga_definition(outputs_dir=tmp_path / "outputs")
    app = build_saga_graph(definition).compile(checkpointer=InMemorySaver())
    with pytest.raises(InputError, match=r"^input\.paper: .*" + BAD_PAPERS[name][1]):
        asyncio.run(arun_saga(app, {"paper": str(bad_paper(tmp_path, name))}, saga_id="bad"))
    assert stored_views(app) == []


def test_a_missing_paper_field_is_refused_naming_it(tmp_path: Path) -> None:
    app = build_saga_graph(paper_saga_definition(outputs_dir=tmp_path)).compile(
        checkpointer=InMemorySaver()
    )
    with pytest.raises(InputError, match=r"^input\.paper: missing"):
        run_saga(app, {"papers": str(PAPER)})
    assert stored_views(app) == []


def test_a_readable_paper_runs(tmp_path: Path) -> None:
    app = build_saga_graph(paper_saga_definition(outputs_dir=tmp_path)).compile(
        checkpointer=InMemorySaver()
    )
    assert run_saga(app, {"paper": str(PAPER)}, saga_id="good")["status"] == "completed"


class Noop:
    name = "noop"

    def execute(self, ctx: StepContext) -> StepResult:
        return StepResult(output="done")

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        pass


def test_any_definition_may_declare_its_input_check() -> None:
    seen: list[Mapping[str, Any]] = []

    def check(saga_input: Mapping[str, Any]) -> None:
        seen.append(saga_input)
        if saga_input.get("amount", 0) <= 0:
            raise InputError(f"input.amount: must be positive, got {saga_input.get('amount')}")

    definition = SagaDefinition.of("toy", [Noop()], check_input=check)
    app = build_saga_graph(definition).compile(checkpointer=InMemorySaver())
    with pytest.raises(InputError, match=r"input\.amount: must be positive"):
        run_saga(app, {"amount": -1})
    assert stored_views(app) == []
    assert run_saga(app, {"amount": 3})["status"] == "completed"
    assert seen == [{"amount": -1}, {"amount": 3}]


def test_a_choreographed_saga_is_refused_alike(tmp_path: Path) -> None:
    from sagagraph.choreography.runner import run_choreographed_saga

    definition = paper_saga_definition(outputs_dir=tmp_path / "outputs")
    bus = f"sqlite:///{tmp_path / 'bus.sqlite'}"
    with pytest.raises(InputError, match=r"^input\.paper: .*no such file"):
        run_choreographed_saga(definition, {"paper": str(tmp_path / "missing")}, "bad", bus)
    assert not (tmp_path / "bus.sqlite").exists()
    assert not (tmp_path / "outputs").exists()
