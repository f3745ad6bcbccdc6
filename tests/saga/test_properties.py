"""Property-based: whatever goes wrong, and wherever, a saga ends all-or-nothing.

Hypothesis draws a saga length, a step that fails for good, transient failures per step (up
to the retry budget and beyond), compensations that fail a few times (within their budget,
or past it, so an operator must retry or skip), and a crash at any boundary followed by a
recovery forward or backward. Whatever it draws, the same invariants hold:

- the saga ends completed, rolled back, or resolved by an operator, never half way;
- completed: every step's effect applied exactly once, nothing compensated;
- otherwise: no step after the one that stopped the saga ever ran; every effect applied is
  undone exactly once, except what an operator explicitly skipped, which is listed;
- compensations ran in strictly reverse order, across retries, crashes and resolutions.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sagagraph import Retry, new_saga_id, recover_sagas, resolve_saga, run_saga, saga_status
from tests.support.toy_saga import (
    Crash,
    Journal,
    Plan,
    SimulatedCrash,
    rebuilt,
    saga_app,
    step_names,
    toy_saga,
)

ATTEMPTS = 3
"""Execute and compensate budgets: a step failing ATTEMPTS times in a row has failed."""
MAX_RESOLUTIONS = 12


@pytest.fixture(scope="module")
def journal() -> Iterator[Journal]:
    # Module-scoped (hypothesis runs many examples per test call); each example has its own
    # saga id, and the journal keys everything by saga id.
    with tempfile.TemporaryDirectory() as folder:
        yield Journal(Path(folder) / "journal.sqlite")


@dataclass
class Scenario:
    n: int
    fail_at: int | None
    """1-based index of a step that fails for good, or None."""
    transient: dict[str, int]
    """Step -> failing first attempts; ATTEMPTS or more means the step fails."""
    flaky_undo: dict[str, int]
    """Step -> compensate calls that fail (across attempts and operator retries)."""
    crash: Crash | None
    recover_backward: bool
    decisions: list[str] = field(default_factory=list)
    """What the operator answers, in order, each time the saga waits: retry or skip."""

    def stop_index(self) -> int | None:
        """1-based index of the first step that fails, if any."""
        for i, name in enumerate(step_names(self.n), start=1):
            if self.fail_at == i or self.transient.get(name, 0) >= ATTEMPTS:
                return i
        return None


@st.composite
def scenarios(draw: Callable[..., Any]) -> Scenario:
    n = draw(st.integers(1, 6))
    names = step_names(n)
    fail_at = draw(st.none() | st.integers(1, n))
    transient = draw(st.dictionaries(st.sampled_from(names), st.integers(0, ATTEMPTS)))
    flaky_undo = draw(st.dictionaries(st.sampled_from(names), st.integers(0, 2 * ATTEMPTS)))
    crash = draw(
        st.none()
        | st.builds(
            Crash,
            step=st.sampled_from(names),
            action=st.sampled_from(["execute", "compensate"]),
            moment=st.sampled_from(["before", "after"]),
        )
    )
    decisions = draw(st.lists(st.sampled_from(["retry", "skip"]), max_size=MAX_RESOLUTIONS))
    return Scenario(n, fail_at, transient, flaky_undo, crash, draw(st.booleans()), decisions)


def run_scenario(journal: Journal, scenario: Scenario) -> tuple[str, dict[str, Any], bool]:
    """Run the saga, recover it after a crash, answer its escalations; return its final view."""
    plan = Plan(crash=scenario.crash, flaky_compensations=dict(scenario.flaky_undo))
    definition = toy_saga(
        scenario.n,
        journal,
        plan,
        retry=Retry(max_attempts=ATTEMPTS),
        compensation_retry=Retry(max_attempts=ATTEMPTS),
    )
    saga_id = new_saga_id("prop")
    saga_input: dict[str, Any] = {"transient": scenario.transient}
    if scenario.fail_at is not None:
        saga_input["fail"] = f"s{scenario.fail_at}"
    crashed = False
    with saga_app(definition) as app:

        def survive(call: Callable[[], Any]) -> None:
            nonlocal crashed
            try:
                call()
            except SimulatedCrash:
                crashed = True
                # A new process: a fresh graph on the same checkpointer recovers the saga.
                recover_sagas(rebuilt(app, definition), compensate=scenario.recover_backward)

        survive(lambda: run_saga(app, saga_input, saga_id=saga_id))
        decisions = list(scenario.decisions)
        view = saga_status(app, saga_id)
        while view["waiting_for_operator"]:
            # Once the drawn decisions run out, the operator retries: flaky undos recover.
            decision = decisions.pop(0) if decisions else "retry"
            if decision == "skip":
                survive(lambda: resolve_saga(app, saga_id, "skip", note="operator: kept"))
            else:
                survive(lambda: resolve_saga(app, saga_id, "retry"))
            view = saga_status(app, saga_id)
    return saga_id, view, crashed


def index(step: str) -> int:
    return int(step[1:])


@settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(scenario=scenarios())
def test_every_saga_ends_all_or_nothing(journal: Journal, scenario: Scenario) -> None:
    saga_id, view, crashed = run_scenario(journal, scenario)
    names = step_names(scenario.n)
    effects = journal.effects(saga_id)
    executed = journal.calls(saga_id, "execute")
    undo_calls = journal.calls(saga_id, "compensate")
    skipped = [s["step"] for s in view["skipped"]]

    assert view["status"] in ("completed", "rolled_back", "resolved_by_operator")
    assert not view["waiting_for_operator"] and view["next"] == []

    stop = scenario.stop_index()
    crash = scenario.crash
    crash_fired = (
        crashed
        and crash is not None
        and crash.action == "execute"
        and (stop is None or index(crash.step) < stop)
    )
    if stop is None and not (crash_fired and scenario.recover_backward):
        assert view["status"] == "completed"
        assert view["completed"] == names
        assert effects == {s: ("done", 1, 0) for s in names}, "each effect applied once"
        assert undo_calls == [] and view["compensated"] == []
        return

    # Rolled back: nothing after the step that stopped the saga ever ran.
    last = stop if stop is not None else len(names)
    if crash_fired and scenario.recover_backward:
        assert crash is not None
        last = min(last, index(crash.step))
    assert executed and max(index(s) for s in executed) == last
    assert view["completed"] == [] and view["outputs"] == {}
    started = sorted(set(executed), key=index)
    # Every step that started is undone exactly once, or listed as skipped by an operator.
    assert sorted(view["compensated"] + skipped, key=index) == started
    for step in started:
        state, applied, undone = effects.get(step, ("none", 0, 0))
        if step in skipped:
            # Left as it was: applied once and not undone, or never applied at all.
            assert (state, applied, undone) in (("done", 1, 0), ("none", 0, 0)), (step, effects)
        else:
            assert state == "undone" and applied <= 1 and undone == applied, (step, effects)
    # Strictly reverse order: the order compensations finished (or were skipped) ...
    finished = [
        e["step"]
        for e in view["events"]
        if (e["action"], e["outcome"]) in (("compensate", "ok"), ("resolve", "skipped"))
    ]
    assert [index(s) for s in finished] == sorted((index(s) for s in finished), reverse=True)
    assert len(finished) == len(set(finished))
    # ... and every compensate call, retries included. A crash inside a compensation restarts
    # its superstep once (which may begin with the failed step's cleanup, run with it): the
    # calls are in reverse order before and after that restart.
    calls = [index(s) for s in undo_calls]
    rises = [i for i in range(1, len(calls)) if calls[i] > calls[i - 1]]
    crashed_undoing = crash is not None and crash.action == "compensate"
    assert len(rises) <= (1 if crashed_undoing else 0), undo_calls
    assert view["status"] == ("resolved_by_operator" if skipped else "rolled_back")
