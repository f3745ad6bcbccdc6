"""Per-step timeouts and out-of-order writes, on the real paper saga and its file store.

A model call that hangs past its step's timeout fails the step, which is then retried or
compensated. Python cannot kill the hung call: it returns later, on its abandoned thread,
and tries to write. If the step was compensated meanwhile, the store refuses that write
(its idempotency key is tombstoned), so the late call leaves nothing behind. If the step
was retried and committed, the late write lands on the same key: same file, no duplicate.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sagagraph import Participant, Retry, SagaDefinition, Step, run_saga
from sagagraph.agents.engine import Review, Summary, ValidationReport
from sagagraph.agents.offline_engine import OfflineEngine
from sagagraph.agents.paper import Paper
from sagagraph.agents.paper_agents import (
    PaperDeps,
    ReviewerAgent,
    SummarizerAgent,
    ValidatorAgent,
)
from sagagraph.agents.paper_saga import PAPER_SAGA
from sagagraph.agents.pdf.loader import PaperLoader
from sagagraph.agents.store import LEDGER_DIR, OutputStore
from sagagraph.saga.protocol import Usage
from tests.support.toy_saga import saga_app

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "examples" / "papers" / "complete_paper.md"
TIMEOUT = 0.5
"""The hanging step's timeout; the other steps have none, so a slow machine cannot flake."""
HANG_LIMIT = 10.0
"""Upper bound of a hang, so a broken test cannot wait forever."""


class HangingEngine:
    """The offline engine, except that one step's first ``hangs`` calls block until released."""

    name = "hanging"

    def __init__(self, step: str, hangs: int) -> None:
        self.inner = OfflineEngine()
        self.step = step
        self.hangs = hangs
        self.release = threading.Event()
        """Set it to let the hung calls return (late)."""
        self.calls = 0

    def _call(self, step: str) -> None:
        if step != self.step:
            return
        self.calls += 1
        if self.calls <= self.hangs:
            self.release.wait(HANG_LIMIT)

    def validate(self, paper: Paper) -> tuple[ValidationReport, Usage]:
        self._call("validator")
        return self.inner.validate(paper)

    def review(self, paper: Paper) -> tuple[Review, Usage]:
        self._call("reviewer")
        return self.inner.review(paper)

    def summarize(self, paper: Paper, words: int) -> tuple[Summary, Usage]:
        self._call("summarizer")
        return self.inner.summarize(paper, words)


def paper_saga(engine: HangingEngine, outputs: Path, attempts: int) -> SagaDefinition:
    """The paper saga with a timeout (and ``attempts``) on the step that hangs only."""
    agents: dict[str, Participant] = {
        "validator": ValidatorAgent(),
        "reviewer": ReviewerAgent(),
        "summarizer": SummarizerAgent(),
    }
    steps = tuple(
        Step(
            agent, timeout=TIMEOUT, retry=Retry(max_attempts=attempts), can_halt=name == "validator"
        )
        if name == engine.step
        else Step(agent, can_halt=name == "validator")
        for name, agent in agents.items()
    )
    deps = PaperDeps(engine, PaperLoader(), OutputStore(outputs))
    return SagaDefinition(PAPER_SAGA, steps, deps)


@pytest.fixture
def let_hung_calls_return() -> Iterator[list[HangingEngine]]:
    """Release every hung call at the end of the test and wait for its thread to finish."""
    engines: list[HangingEngine] = []
    yield engines
    for engine in engines:
        engine.release.set()
    join_abandoned_calls()


def join_abandoned_calls() -> None:
    for thread in threading.enumerate():
        if thread.name.startswith("sagagraph:step"):
            thread.join(HANG_LIMIT)


def files_under(outputs: Path) -> list[str]:
    if not outputs.exists():
        return []
    return sorted(
        p.relative_to(outputs).as_posix()
        for p in outputs.rglob("*")
        if p.is_file() and LEDGER_DIR not in p.parts
    )


@pytest.mark.parametrize("step", ["validator", "reviewer", "summarizer"])
def test_a_call_that_returns_after_its_step_was_compensated_leaves_nothing_behind(
    tmp_path: Path, step: str, let_hung_calls_return: list[HangingEngine]
) -> None:
    engine = HangingEngine(step, hangs=1)
    let_hung_calls_return.append(engine)
    outputs = tmp_path / "outputs"
    with saga_app(paper_saga(engine, outputs, attempts=1)) as app:
        view = run_saga(app, {"paper": str(PAPER)}, saga_id="late")

    assert view["status"] == "rolled_back"
    assert (
        view["failure"]["error"]
        == f"StepTimeoutError: step {step!r} did not finish within {TIMEOUT:g}s"
    )
    steps = ["validator", "reviewer", "summarizer"]
    assert view["compensated"] == steps[: steps.index(step) + 1][::-1]
    assert files_under(outputs) == []
    store = OutputStore(outputs)
    assert store.is_compensated(f"late:{step}")

    # Now the hung model call returns, on its abandoned thread, and its step tries to write.
    engine.release.set()
    join_abandoned_calls()

    assert files_under(outputs) == [], "the late write was refused: nothing is left behind"
    assert not (outputs / "late").exists()


def test_a_call_that_hangs_once_is_retried_and_its_late_twin_changes_nothing(
    tmp_path: Path, let_hung_calls_return: list[HangingEngine]
) -> None:
    engine = HangingEngine("reviewer", hangs=1)
    let_hung_calls_return.append(engine)
    outputs = tmp_path / "outputs"
    with saga_app(paper_saga(engine, outputs, attempts=2)) as app:
        view = run_saga(app, {"paper": str(PAPER)}, saga_id="again")

    assert view["status"] == "completed"
    reviewer = [(e["outcome"], e["attempt"]) for e in view["events"] if e["step"] == "reviewer"]
    assert reviewer == [("retry", 1), ("ok", 2)]
    retry_detail = next(e["detail"] for e in view["events"] if e["outcome"] == "retry")
    assert retry_detail.startswith("StepTimeoutError: step 'reviewer' did not finish")
    expected = ["again/review.txt", "again/summary.txt", "again/validation.txt"]
    assert files_under(outputs) == expected
    review = (outputs / "again" / "review.txt").read_text()

    engine.release.set()
    join_abandoned_calls()

    # The first attempt wrote late, under the same idempotency key: the same file, once.
    assert files_under(outputs) == expected
    assert (outputs / "again" / "review.txt").read_text() == review
    assert engine.calls == 2


def test_a_hang_past_every_attempt_fails_the_step_once_per_attempt(
    tmp_path: Path, let_hung_calls_return: list[HangingEngine]
) -> None:
    engine = HangingEngine("summarizer", hangs=2)
    let_hung_calls_return.append(engine)
    outputs = tmp_path / "outputs"
    with saga_app(paper_saga(engine, outputs, attempts=2)) as app:
        view: dict[str, Any] = run_saga(app, {"paper": str(PAPER)}, saga_id="never")

    summarizer = [
        (e["action"], e["outcome"], e["attempt"])
        for e in view["events"]
        if e["step"] == "summarizer"
    ]
    assert summarizer == [
        ("execute", "retry", 1),
        ("execute", "timeout", 2),
        ("compensate", "ok", 1),
    ]
    assert view["failure"]["attempts"] == 2
    assert view["status"] == "rolled_back"
    assert files_under(outputs) == []
