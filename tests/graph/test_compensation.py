"""The way back: compensations in reverse order, their retries, escalation to an operator."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from sagagraph import (
    ConfigurationError,
    InputError,
    Retry,
    SagaDefinition,
    Step,
    StepContext,
    StepResult,
    arun_saga,
    new_saga_id,
    resolve_saga,
    resume_saga,
    run_saga,
    saga_status,
    unfinished_sagas,
)
from sagagraph.graph.compensation import undo_plan
from sagagraph.graph.state import SagaState
from sagagraph.saga.execution import emit_event
from sagagraph.saga.protocol import StepRecord
from sagagraph.saga.records import AlertHooks
from sagagraph.saga.view import Event, make_event
from tests.support.toy_saga import (
    Crash,
    EventHooks,
    Journal,
    Plan,
    SimulatedCrash,
    rebuilt,
    saga_app,
    toy_saga,
)


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal.sqlite")


def compensate_trail(view: dict[str, Any], step: str) -> list[tuple[str, int]]:
    return [
        (e["outcome"], e["attempt"])
        for e in view["events"]
        if e["step"] == step and e["action"] == "compensate"
    ]


def test_a_compensation_that_fails_twice_then_succeeds_stays_within_its_budget(
    journal: Journal,
) -> None:
    plan = Plan(compensation_failures={"s2": 2})
    definition = toy_saga(3, journal, plan, compensation_retry=Retry(max_attempts=3))
    with saga_app(definition) as app:
        view = run_saga(app, {"fail": "s3"}, saga_id="patient")

    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["s3", "s2", "s1"]
    assert compensate_trail(view, "s2") == [("retry", 1), ("retry", 2), ("ok", 3)]
    assert journal.calls("patient", "compensate") == ["s3", "s2", "s2", "s2", "s1"]
    assert journal.effects("patient")["s2"] == ("undone", 1, 1)


def test_an_exhausted_compensation_pauses_the_saga_for_an_operator(journal: Journal) -> None:
    alerts: list[dict[str, Any]] = []
    plan = Plan(broken_compensations={"s2"})
    definition = toy_saga(3, journal, plan, compensation_retry=Retry(max_attempts=2))
    with saga_app(definition, hooks=AlertHooks(alerts.append)) as app:
        view = run_saga(app, {"fail": "s3"}, saga_id="stuck")
        again = resume_saga(app, "stuck")  # resuming does not answer for the operator

    assert view["status"] == "compensation_failed"
    assert view["waiting_for_operator"] is True
    assert view["next"] == ["escalate"]
    assert view["compensation_failure"] == {
        "step": "s2",
        "phase": "compensate",
        "error": "PermanentError: s2: undo refused",
        "attempts": 2,
    }
    # Never reported as rolled back: s2 and s1 are still committed.
    assert view["compensated"] == ["s3"]
    assert view["completed"] == ["s1", "s2"]
    assert compensate_trail(view, "s2") == [("retry", 1), ("error", 2)]
    assert journal.calls("stuck", "compensate") == ["s3", "s2", "s2"]
    assert "s1" not in journal.calls("stuck", "compensate"), "s1 waits behind s2"
    assert alerts == [{"saga_id": "stuck", **view["compensation_failure"]}]
    escalations = [e for e in view["events"] if e["action"] == "escalate"]
    assert [(e["step"], e["outcome"]) for e in escalations] == [("s2", "waiting")]
    assert again == view
    assert unfinished_sagas(app) == [], "recover leaves operator decisions to operators"


def test_operator_retry_finishes_the_rollback_and_alerts_once(
    journal: Journal, checkpointer_url: str
) -> None:
    alerts: list[dict[str, Any]] = []
    plan = Plan(broken_compensations={"s2"})
    definition = toy_saga(3, journal, plan, compensation_retry=Retry(max_attempts=2))
    saga_id = new_saga_id("retry")
    with saga_app(definition, checkpointer_url, hooks=AlertHooks(alerts.append)) as app:
        run_saga(app, {"fail": "s3"}, saga_id=saga_id)
        plan.broken_compensations.clear()  # the operator fixed what blocked the undo
        view = resolve_saga(app, saga_id, "retry")

    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["s3", "s2", "s1"]
    assert view["compensation_failure"] is None
    assert view["waiting_for_operator"] is False
    assert len(alerts) == 1, "resuming the paused node must not alert again"
    resolve = [e for e in view["events"] if e["action"] == "resolve"]
    assert [(e["step"], e["outcome"], e["detail"]) for e in resolve] == [
        ("s2", "ok", "operator: retry")
    ]
    assert journal.effects(saga_id) == {
        "s1": ("undone", 1, 1),
        "s2": ("undone", 1, 1),
        "s3": ("undone", 0, 0),
    }


def test_operator_retry_that_fails_again_escalates_again(journal: Journal) -> None:
    alerts: list[dict[str, Any]] = []
    plan = Plan(broken_compensations={"s1"})
    definition = toy_saga(2, journal, plan, compensation_retry=Retry(max_attempts=1))
    with saga_app(definition, hooks=AlertHooks(alerts.append)) as app:
        run_saga(app, {"fail": "s2"}, saga_id="twice")
        view = resolve_saga(app, "twice", "retry")

    assert view["status"] == "compensation_failed"
    assert view["waiting_for_operator"] is True
    assert len(alerts) == 2


def test_operator_skip_ends_resolved_by_operator_with_the_note(journal: Journal) -> None:
    plan = Plan(broken_compensations={"s2"})
    definition = toy_saga(3, journal, plan, compensation_retry=Retry(max_attempts=2))
    with saga_app(definition) as app:
        run_saga(app, {"fail": "s3"}, saga_id="skip")
        with pytest.raises(InputError, match="--note is required"):
            resolve_saga(app, "skip", "skip", note="  ")
        with pytest.raises(ConfigurationError, match="'retry' or 'skip'"):
            resolve_saga(app, "skip", "ignore", note="x")  # type: ignore[arg-type]
        view = resolve_saga(app, "skip", "skip", note="ops: refunded by hand, ticket 42")
        with pytest.raises(InputError, match="not waiting for an operator"):
            resolve_saga(app, "skip", "retry")

    assert view["status"] == "resolved_by_operator"
    assert view["compensated"] == ["s3", "s1"], "s1 is still undone after the skip"
    assert view["skipped"] == [
        {
            "step": "s2",
            "note": "ops: refunded by hand, ticket 42",
            "error": "PermanentError: s2: undo refused",
            "left_behind": "s2",
        }
    ]
    assert view["completed"] == []
    skipped = [e for e in view["events"] if e["outcome"] == "skipped"]
    assert [(e["step"], e["detail"]) for e in skipped] == [
        ("s2", "operator: ops: refunded by hand, ticket 42")
    ]
    # What the operator skipped is still there, and the saga says so instead of rolled_back.
    assert journal.effects("skip")["s2"] == ("done", 1, 0)
    assert journal.effects("skip")["s1"] == ("undone", 1, 1)


@pytest.mark.parametrize("moment", ["before", "after"])
def test_a_crash_inside_a_compensation_applies_each_undo_once_on_resume(
    journal: Journal, checkpointer_url: str, moment: str
) -> None:
    """The process dies inside s2's compensation; another resumes the rollback."""
    plan = Plan(crash=Crash("s2", "compensate", moment))  # type: ignore[arg-type]
    definition = toy_saga(4, journal, plan)
    saga_id = new_saga_id("undo")
    with saga_app(definition, checkpointer_url) as app:
        with pytest.raises(SimulatedCrash):
            run_saga(app, {"fail": "s3"}, saga_id=saga_id)
        state = app.get_state({"configurable": {"thread_id": saga_id}})
        assert state.next == ("compensate",)
        assert state.values["status"] == "compensating"
        # s3 failed; its own cleanup was checkpointed before s2's compensation began.
        assert state.values["compensated"] == ["s3"]
        if checkpointer_url == "memory://":
            view = resume_saga(rebuilt(app, definition), saga_id)
    if checkpointer_url != "memory://":
        with saga_app(definition, checkpointer_url) as fresh:
            view = resume_saga(fresh, saga_id)
            assert saga_status(fresh, saga_id) == view

    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["s3", "s2", "s1"]
    # Only the interrupted compensation (s2) runs again; s3's and s1's ran once.
    assert journal.calls(saga_id, "compensate") == ["s3", "s2", "s2", "s1"]
    assert journal.effects(saga_id) == {
        "s1": ("undone", 1, 1),
        "s2": ("undone", 1, 1),
        "s3": ("undone", 0, 0),
    }
    assert journal.calls(saga_id) == ["s1", "s2", "s3"]


def test_the_undo_plan_is_state_the_failed_steps_then_the_committed_newest_first() -> None:
    """The plan reads ``cleanup`` and ``completed``, never the events; a router (not a step)
    that gives up has nothing of its own to undo."""
    record: StepRecord = {"data": {}, "output": None}
    state: SagaState = {
        "results": {"a": record, "b": record},
        "completed": ["a", "b"],
        "failure": {"step": "supervisor", "phase": "execute", "error": "x", "attempts": 3},
    }
    assert undo_plan(state, ("a", "b", "c")) == ["b", "a"]
    state |= {"cleanup": ["c", "d"]}
    assert undo_plan(state, ("a", "b", "c", "d")) == ["c", "d", "b", "a"]
    state |= {"cleanup": [], "completed": ["a"], "compensated": ["c", "d", "b"]}
    assert undo_plan(state, ("a", "b", "c", "d")) == ["a"]


def test_a_saga_stored_before_cleanup_existed_still_cleans_up_its_failed_step() -> None:
    state: SagaState = {
        "completed": ["a"],
        "failure": {"step": "b", "phase": "execute", "error": "x", "attempts": 1},
    }
    assert undo_plan(state, ("a", "b")) == ["b", "a"]
    state["compensated"] = ["b"]
    assert undo_plan(state, ("a", "b")) == ["a"]


def test_a_failing_alert_hook_does_not_stop_the_escalation(journal: Journal) -> None:
    def broken_pager(payload: dict[str, Any]) -> None:
        raise ConnectionError("pager unreachable")

    plan = Plan(broken_compensations={"s1"})
    definition = toy_saga(2, journal, plan, compensation_retry=Retry(max_attempts=1))
    with saga_app(definition, hooks=AlertHooks(broken_pager)) as app:
        view = run_saga(app, {"fail": "s2"}, saga_id="pager")
    assert view["status"] == "compensation_failed"
    assert view["waiting_for_operator"] is True


class _Watching:
    """A step whose compensation waits (10 s at most) until the compensation before it has
    been reported to the hooks' ``on_event``, and notes whether it was."""

    def __init__(self, name: str, before: str | None, reports: dict[str, threading.Event]):
        self.name = name
        self.before = before
        self.reports = reports
        self.heard: bool | None = None

    def execute(self, ctx: StepContext) -> StepResult:
        return StepResult(data={"step": self.name})

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        if self.before is not None:
            self.heard = self.reports[self.before].wait(timeout=10)


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_a_rollback_reports_each_compensation_once_as_it_ends(driver: str) -> None:
    """The rollback is one superstep, but ``on_event`` hears of each compensation when it
    ends (the custom stream), not when the superstep does, and only once."""
    names = ("s1", "s2", "s3", "s4")
    reports = {n: threading.Event() for n in names}
    steps = [_Watching(n, names[i + 1] if i + 1 < len(names) else None, reports)
             for i, n in enumerate(names)]  # fmt: skip
    reported: list[dict[str, Any]] = []

    def on_event(event: Event) -> None:
        reported.append(event)
        if event["action"] == "compensate":
            reports[event["step"]].set()

    with saga_app(SagaDefinition("watched", tuple(Step(s) for s in steps))) as app:
        if driver == "sync":
            view = run_saga(app, {}, saga_id="watched", fail_at="s4", hooks=EventHooks(on_event))
        else:
            view = asyncio.run(
                arun_saga(app, {}, saga_id="watched", fail_at="s4", hooks=EventHooks(on_event))
            )
    assert view["status"] == "rolled_back"
    assert [s.heard for s in steps] == [True, True, True, None]
    assert reported == view["events"], "every event once, in the order of the audit trail"


class _Reporting:
    """A step whose compensation reports, through ``emit_event``, that ``failed`` failed
    (an ``execute error`` event for a step that never ran), as a participant may."""

    def __init__(self, name: str, failed: str | None = None) -> None:
        self.name = name
        self.failed = failed
        self.compensated_with: list[StepResult | None] = []

    def execute(self, ctx: StepContext) -> StepResult:
        return StepResult(data={"step": self.name})

    def compensate(self, ctx: StepContext, result: StepResult | None) -> None:
        self.compensated_with.append(result)
        if self.failed is not None:
            emit_event(make_event(self.failed, "execute", "error", 1, "reported by a neighbour"))


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_an_event_a_compensation_records_leaves_the_undo_plan_as_it_is(driver: str) -> None:
    """The undo plan is state (``cleanup``, ``completed``), the events only its audit trail: a
    compensation that records an ``execute error`` of a step that never ran adds nothing."""
    steps = (_Reporting("s1"), _Reporting("s2", failed="s3"), _Reporting("s3"))
    with saga_app(SagaDefinition("reported", tuple(Step(s) for s in steps))) as app:
        if driver == "sync":
            view = run_saga(app, {}, saga_id="reported", fail_at="s2")
        else:
            view = asyncio.run(arun_saga(app, {}, saga_id="reported", fail_at="s2"))
    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["s2", "s1"]
    assert steps[2].compensated_with == [], "s3 never ran: nothing to clean up"
    assert steps[0].compensated_with[0] is not None
