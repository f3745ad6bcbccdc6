"""``compensation="batch"``: every pending compensation in one superstep.

The same guarantees as the default stepwise mode (reverse order, each undo applied once,
escalation) and the same checkpoints, without stepwise's rollback journal: after a crash
mid-batch the whole batch runs again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sagagraph import (
    ConfigurationError,
    Retry,
    build_saga_graph,
    resolve_saga,
    resume_saga,
    run_saga,
    saga_fields,
)
from sagagraph.graph.rollback_journal import CHANNEL as JOURNAL_CHANNEL
from tests.toy_saga import (
    Crash,
    Journal,
    Plan,
    SimulatedCrash,
    rebuilt,
    saga_app,
    step_names,
    toy_saga,
)

MATRIX = [(n, k) for n in range(1, 7) for k in range(1, n + 1)]


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal.sqlite")


def checkpoints(app: Any, saga_id: str) -> int:
    return len(list(app.get_state_history({"configurable": {"thread_id": saga_id}})))


def journal_writes(app: Any, saga_id: str) -> int:
    """How many rollback journal writes the saga's checkpoints hold."""
    history = app.get_state_history({"configurable": {"thread_id": saga_id}})
    return sum(
        channel == JOURNAL_CHANNEL
        for snapshot in history
        for _, channel, _ in app.checkpointer.get_tuple(snapshot.config).pending_writes or []
    )


@pytest.mark.parametrize(("n", "k"), MATRIX)
def test_batch_compensates_k_down_to_1_like_stepwise(journal: Journal, n: int, k: int) -> None:
    definition = toy_saga(n, journal, Plan(failing={f"s{k}"}))
    with saga_app(definition, compensation="batch") as app:
        view = run_saga(app, {}, saga_id="batch")
    with saga_app(definition) as app:
        stepwise = run_saga(app, {}, saga_id="stepwise")

    expected = [f"s{i}" for i in range(k, 0, -1)]
    assert view["status"] == "rolled_back"
    assert view["compensated"] == expected
    assert journal.calls("batch") == step_names(k)
    assert journal.calls("batch", "compensate") == expected
    assert journal.effects("batch") == journal.effects("stepwise")
    strip = [(e["step"], e["action"], e["outcome"]) for e in view["events"]]
    assert strip == [(e["step"], e["action"], e["outcome"]) for e in stepwise["events"]]


def test_batch_and_stepwise_write_the_rollback_in_one_checkpoint_only_stepwise_journals(
    journal: Journal,
) -> None:
    definition = toy_saga(4, journal, Plan(failing={"s4"}))
    with saga_app(definition, compensation="batch") as app:
        run_saga(app, {}, saga_id="batch")
        batch = checkpoints(app, "batch"), journal_writes(app, "batch")
    with saga_app(definition) as app:
        run_saga(app, {}, saga_id="stepwise")
        stepwise = checkpoints(app, "stepwise"), journal_writes(app, "stepwise")
    # Four compensations (s4's cleanup, then s3, s2, s1), one superstep either way. Stepwise
    # journals s3's (with the cleanup before it) and s2's; s1's, the last, ends the superstep.
    assert stepwise == (batch[0], 2)
    assert batch[1] == 0


def test_a_batch_stops_at_a_compensation_that_gives_up_and_records_what_it_undid(
    journal: Journal,
) -> None:
    plan = Plan(broken_compensations={"s2"})
    definition = toy_saga(4, journal, plan, compensation_retry=Retry(max_attempts=2))
    with saga_app(definition, compensation="batch") as app:
        view = run_saga(app, {"fail": "s4"}, saga_id="stuck")
        assert view["status"] == "compensation_failed"
        assert view["compensated"] == ["s4", "s3"]
        assert view["completed"] == ["s1", "s2"]
        assert view["compensation_failure"]["step"] == "s2"
        plan.broken_compensations.clear()
        done = resolve_saga(app, "stuck", "retry")

    assert done["status"] == "rolled_back"
    assert done["compensated"] == ["s4", "s3", "s2", "s1"]
    assert journal.effects("stuck")["s1"] == ("undone", 1, 1)
    assert journal.effects("stuck")["s2"] == ("undone", 1, 1)


def test_a_crash_mid_batch_reruns_the_batch_and_each_undo_applies_once(
    journal: Journal,
) -> None:
    plan = Plan(crash=Crash("s2", "compensate", "after"))
    definition = toy_saga(4, journal, plan)
    with saga_app(definition, compensation="batch") as app:
        with pytest.raises(SimulatedCrash):
            run_saga(app, {"fail": "s3"}, saga_id="crash")
        state = app.get_state({"configurable": {"thread_id": "crash"}})
        assert state.next == ("compensate",)
        assert saga_fields(state.values).get("compensated", []) == [], (
            "nothing of the batch was checkpointed"
        )
        plan.crash = None
        view = resume_saga(rebuilt(app, definition, "batch"), "crash")

    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["s3", "s2", "s1"]
    # The batch ran again from its first compensation; idempotency keeps each effect single.
    assert journal.calls("crash", "compensate") == ["s3", "s2", "s3", "s2", "s1"]
    assert journal.effects("crash") == {
        "s1": ("undone", 1, 1),
        "s2": ("undone", 1, 1),
        "s3": ("undone", 0, 0),
    }


def test_an_unknown_compensation_mode_is_refused(journal: Journal) -> None:
    with pytest.raises(ConfigurationError, match="compensation"):
        build_saga_graph(toy_saga(2, journal), compensation="sometimes")  # type: ignore[arg-type]
