"""At-least-once delivery: duplicates, replays and overtaking compensations change no outcome."""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sagagraph import SagaDefinition, Step, StepContext, StepResult, participant
from sagagraph.agents.paper_saga import PAPER_EVENT_NAMES
from sagagraph.choreography.bus import DEFAULT_MAX_DELIVERIES, Consumer, EventBus
from sagagraph.choreography.ledger import StepLedger
from sagagraph.choreography.messages import SagaMessage, new_message
from sagagraph.choreography.projection import choreography_view, is_finished
from sagagraph.choreography.runner import run_choreographed_saga, services_in_threads
from sagagraph.choreography.step_service import StepService
from sagagraph.choreography.topology import derive_choreography
from tests.support.choreo_buses import BACKENDS, fresh_bus
from tests.support.choreo_saga import file_saga, log_lines, outputs_of

EXPECTED = {
    "ok": ({}, None, "completed", []),
    "bad": ({"halt_at": "validator"}, None, "rolled_back", []),
    "fail": ({}, "summarizer", "rolled_back", ["summarizer", "reviewer", "validator"]),
}


def eventually(check: Callable[[], bool], timeout: float = 30.0) -> None:
    """Poll ``check`` until it holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


class TwiceBus:
    """Wraps a bus so that every agent receives every event twice."""

    def __init__(self, inner: EventBus) -> None:
        self.inner = inner
        self.url = inner.url

    def serve(
        self, consumer: Consumer, stop: threading.Event, ready: threading.Event | None = None
    ) -> None:
        def twice(message: SagaMessage) -> list[SagaMessage]:
            first = consumer.handle(message)
            second = consumer.handle(dict(message))  # type: ignore[arg-type]
            assert second == first
            return first + second

        self.inner.serve(dataclasses.replace(consumer, handle=twice), stop, ready)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def executions(root: Path) -> list[str]:
    return sorted(log_lines(root, "executions.log"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_event_delivered_twice_changes_nothing(tmp_path: Path, backend: str) -> None:
    with fresh_bus(backend, tmp_path) as inner:
        bus = TwiceBus(inner)
        views = {
            saga_id: run_choreographed_saga(
                file_saga(tmp_path), input, saga_id, bus, fail_at=fail_at, timeout=60
            )
            for saga_id, (input, fail_at, _, _) in EXPECTED.items()
        }
    for saga_id, (_, _, status, compensated) in EXPECTED.items():
        assert views[saga_id]["status"] == status
        assert views[saga_id]["compensated"] == compensated
    # Each step ran once per saga, although each agent heard each event at least twice.
    assert executions(tmp_path) == sorted(
        ["ok validator", "ok reviewer", "ok summarizer", "fail validator", "fail reviewer"]
    )
    assert outputs_of(tmp_path, "ok") == ["reviewer.txt", "summarizer.txt", "validator.txt"]
    assert outputs_of(tmp_path, "fail") == [] and outputs_of(tmp_path, "bad") == []
    assert [e["step"] for e in views["fail"]["events"]].count("validator") == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_replaying_the_whole_log_under_new_ids_changes_nothing(
    tmp_path: Path, backend: str
) -> None:
    """A late copy of a forward event arrives after the step was compensated: refused."""
    definition = file_saga(tmp_path)
    choreography = derive_choreography(definition)
    with fresh_bus(backend, tmp_path) as bus:
        before = {
            saga_id: run_choreographed_saga(
                definition, input, saga_id, bus, fail_at=fail_at, timeout=60
            )
            for saga_id, (input, fail_at, _, _) in EXPECTED.items()
        }
        ran, undone = executions(tmp_path), sorted(log_lines(tmp_path, "compensations.log"))
        log = bus.read_log(list(EXPECTED))
        copies = [m | {"id": m["id"] + "#again"} for m in log]
        expected_handled = {
            r.name: sum(m["type"] in r.subscriptions for m in log) * 2 for r in choreography.roles
        }

        def handled(step: str) -> int:
            with bus.ledger(f"paper_review.{step}") as ledger:
                return ledger.handled_count()

        with services_in_threads(bus, choreography):
            bus.publish(copies)
            for step, count in expected_handled.items():
                eventually(functools.partial(lambda s, n: handled(s) == n, step, count))
        after = bus.read_log(list(EXPECTED))
    assert executions(tmp_path) == ran
    assert sorted(log_lines(tmp_path, "compensations.log")) == undone
    assert {m["id"] for m in after} == {m["id"] for m in log + copies}
    for saga_id, view in before.items():
        assert choreography_view(saga_id, after) == view


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_compensation_published_before_its_saga_started_is_refused(
    tmp_path: Path, backend: str
) -> None:
    """A compensation that overtakes every forward event cannot be the saga's own (its
    summarizer never ran): the reviewer refuses it, and the saga runs as if it were not there.
    (Handed to an agent directly, without a history, it still blocks the step: see below.)"""
    definition = file_saga(tmp_path)
    choreography = derive_choreography(definition)
    common: dict[str, Any] = {"saga": "paper_review", "saga_id": "early", "input": {}}
    overtaking = new_message(
        type="summary_compensated", kind="compensated", step="summarizer", **common
    )
    start = new_message(type="paper_submitted", kind="start", **common)
    with fresh_bus(backend, tmp_path) as bus:
        bus.prepare(choreography)
        # Queued before any agent runs: the reviewer hears the compensation before `validated`.
        bus.publish([overtaking, start])
        with services_in_threads(bus, choreography):
            bus.wait_log(["early"], is_finished, 30)
        with bus.ledger("paper_review.reviewer") as ledger:
            refusals = ledger.refusals()
            assert ledger.state("early")[0] == "committed"
        view = choreography_view("early", bus.read_log(["early"]))
    assert [(r["event_id"], r["type"]) for r in refusals] == [
        (overtaking["id"], "summary_compensated")
    ]
    assert "never started" in refusals[0]["reason"]
    assert view["status"] == "completed"
    assert view["compensated"] == []
    assert outputs_of(tmp_path, "early") == ["reviewer.txt", "summarizer.txt", "validator.txt"]


# --- one agent, events handed to it directly --------------------------------------------


class Counting:
    """A participant that counts its calls."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.executed = 0
        self.compensated: list[StepResult | None] = []

    def execute(self, ctx: StepContext) -> StepResult:
        self.executed += 1
        return StepResult(data={"n": self.executed}, output=f"{ctx.saga_id}/{self.name}")

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        self.compensated.append(result)


def three_counting() -> tuple[SagaDefinition, Counting]:
    reviewer = Counting("reviewer")
    definition = SagaDefinition.of(
        "paper_review",
        [Counting("validator"), reviewer, Counting("summarizer")],
        event_names=PAPER_EVENT_NAMES,
    )
    return definition, reviewer


def event(type: str, kind: Any, step: str | None, **fields: Any) -> SagaMessage:
    return new_message(
        type=type, kind=kind, saga="paper_review", saga_id="s", step=step, input={}, **fields
    )


VALIDATED = {"validator": {"data": {}, "output": "s/validator"}}


def test_a_redelivered_event_returns_what_was_emitted_without_running_again(
    tmp_path: Path,
) -> None:
    definition, reviewer = three_counting()
    with StepLedger(tmp_path / "ledger.sqlite", "paper_review.reviewer") as ledger:
        agent = StepService(derive_choreography(definition), "reviewer", ledger)
        forward = event("validated", "done", "validator", results=VALIDATED)
        first = agent.handle(forward)
        again = agent.handle(forward)
        under_new_id = agent.handle(forward | {"id": "other-id"})
    assert reviewer.executed == 1
    assert [m["type"] for m in first] == ["reviewed"]
    assert again == first
    assert under_new_id == []


def test_the_ledger_survives_a_restart(tmp_path: Path) -> None:
    definition, reviewer = three_counting()
    forward = event("validated", "done", "validator", results=VALIDATED)
    with StepLedger(tmp_path / "ledger.sqlite", "paper_review.reviewer") as ledger:
        first = StepService(derive_choreography(definition), "reviewer", ledger).handle(forward)
    with StepLedger(tmp_path / "ledger.sqlite", "paper_review.reviewer") as ledger:
        again = StepService(derive_choreography(definition), "reviewer", ledger).handle(forward)
        assert ledger.state("s") == ("committed", {"data": {"n": 1}, "output": "s/reviewer"})
    assert again == first and reviewer.executed == 1


def test_compensation_before_forward_at_one_agent(tmp_path: Path) -> None:
    definition, reviewer = three_counting()
    with StepLedger(":memory:", "paper_review.reviewer") as ledger:
        agent = StepService(derive_choreography(definition), "reviewer", ledger)
        backward = agent.handle(
            event(
                "summary_compensated",
                "compensated",
                "summarizer",
                results=VALIDATED,
                reason="cancelled",
            )
        )
        forward = agent.handle(event("validated", "done", "validator", results=VALIDATED))
        assert ledger.state("s") == ("blocked", None)
    assert reviewer.executed == 0
    assert reviewer.compensated == [None]  # cleaned up what a half-run could have left
    (emitted,) = backward
    assert emitted["type"] == "review_compensated"
    assert emitted["compensated"] == ["reviewer"]
    assert emitted["reason"] == "cancelled"
    assert emitted["results"] == VALIDATED  # the validator still has to undo its work
    assert forward == []


def test_a_duplicate_compensation_does_not_undo_twice(tmp_path: Path) -> None:
    definition, reviewer = three_counting()
    with StepLedger(":memory:", "paper_review.reviewer") as ledger:
        agent = StepService(derive_choreography(definition), "reviewer", ledger)
        agent.handle(event("validated", "done", "validator", results=VALIDATED))
        reviewed = {**VALIDATED, "reviewer": {"data": {"n": 1}, "output": "s/reviewer"}}
        backward = event("summary_compensated", "compensated", "summarizer", results=reviewed)
        first = agent.handle(backward)
        assert agent.handle(backward | {"id": "x"}) == []
    assert len(reviewer.compensated) == 1
    assert reviewer.compensated[0] == StepResult(data={"n": 1}, output="s/reviewer")
    assert first[0]["results"] == VALIDATED  # the reviewer's result is gone downstream


# --- failures the bus sets aside ----------------------------------------------------------


def unserialisable(ctx: StepContext) -> StepResult:
    return StepResult(data={"handle": object()})


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_event_whose_handler_keeps_failing_is_set_aside_and_the_saga_compensates(
    tmp_path: Path, backend: str
) -> None:
    tries: list[int] = []
    undone: list[StepResult | None] = []

    def counted(ctx: StepContext) -> StepResult:
        tries.append(1)
        return unserialisable(ctx)

    def undo(ctx: StepContext, result: StepResult | None) -> None:
        undone.append(result)

    definition = SagaDefinition.of(
        "poison", [participant("first", counted, undo), participant("second", unserialisable)]
    )
    choreography = derive_choreography(definition)
    start = new_message(
        type="saga_started", kind="start", saga="poison", saga_id="p", input={}, next_step="first"
    )
    with fresh_bus(backend, tmp_path) as bus:
        bus.retry_delay = 0.01  # type: ignore[attr-defined]
        bus.prepare(choreography)
        with services_in_threads(bus, choreography):
            bus.publish([start])
            messages = bus.wait_log(["p"], is_finished, 60)
        view = choreography_view("p", messages)
        assert bus.dead_letters() == []  # the agent set it aside itself, and said so
    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["first"]
    assert undone == [None]  # the failed step cleaned up after itself, as after any failure
    assert len(tries) == DEFAULT_MAX_DELIVERIES - 1  # the last delivery gives up instead
    assert view["failure"]["step"] == "first"
    assert view["failure"]["attempts"] == DEFAULT_MAX_DELIVERIES
    assert "set aside after 5 deliveries" in view["failure"]["error"]
    assert "not JSON-serialisable" in view["failure"]["error"]


def test_a_compensation_that_keeps_failing_waits_for_an_operator(tmp_path: Path) -> None:
    def refuse(ctx: StepContext, result: StepResult | None) -> None:
        raise OSError("store offline")

    def ok(ctx: StepContext) -> StepResult:
        return StepResult(output=f"{ctx.step}.txt")

    def fail(ctx: StepContext) -> StepResult:
        raise RuntimeError("boom")

    from sagagraph import Retry

    definition = SagaDefinition.of(
        "stuck",
        [
            Step(participant("first", ok, refuse), compensation_retry=Retry(max_attempts=2)),
            participant("second", fail),
        ],
    )
    view = run_choreographed_saga(definition, {}, "st", "memory://", timeout=30)
    assert view["status"] == "compensation_failed"
    assert view["waiting_for_operator"] is True
    assert view["compensated"] == ["second"]
    assert view["completed"] == ["first"]  # still committed: nobody pretends it was undone
    assert [e["outcome"] for e in view["events"] if e["step"] == "first"][-3:] == [
        "retry",
        "error",
        "waiting",
    ]


def test_serve_reports_unreadable_entries_as_dead_letters(tmp_path: Path) -> None:
    with fresh_bus("sqlite", tmp_path) as bus:
        raw: Any = bus
        with raw._lock:
            raw._db().execute(
                "INSERT INTO bus_events (id, saga, saga_id, type, body, published_at) "
                "VALUES ('junk', 'paper_review', 's', 'paper_submitted', x'7b7b', 'now')"
            )
        choreography = derive_choreography(file_saga(tmp_path))
        with services_in_threads(bus, choreography):
            eventually(lambda: bool(bus.dead_letters()))
        (letter,) = bus.dead_letters()
    assert letter["consumer"] == "paper_review.validator"
    assert "not JSON" in letter["error"]
