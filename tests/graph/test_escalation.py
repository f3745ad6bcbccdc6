"""Escalation: a compensation that gives up pauses the saga for an operator, and says so at once.

The pause is a LangGraph interrupt whose payload names the step, the error and the attempts.
The alert goes out the moment the retries are exhausted (a CRITICAL log record and the
``on_escalation`` hook), once per exhaustion, and is not lost when the process dies first.
An operator answers ``retry`` or ``skip`` (with a note); a skipped saga never claims
``rolled_back``: it ends ``resolved_by_operator`` and lists what was left behind.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sagagraph import (
    Retry,
    new_saga_id,
    recover_sagas,
    resolve_saga,
    run_saga,
    saga_config,
    saga_status,
    unfinished_sagas,
)
from sagagraph.saga.records import AlertHooks
from tests.support.services import fresh_postgres_database
from tests.support.toy_saga import Journal, Plan, SimulatedCrash, saga_app, toy_saga

TWO_ATTEMPTS = Retry(max_attempts=2)


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal.sqlite")


def trail(view: dict[str, Any], step: str) -> list[tuple[str, str, int]]:
    """``(action, outcome, attempt)`` of every event about ``step`` after its execute."""
    return [
        (e["action"], e["outcome"], e["attempt"])
        for e in view["events"]
        if e["step"] == step and e["action"] != "execute"
    ]


def test_a_compensation_that_fails_twice_then_succeeds_on_retry_ends_rolled_back(
    journal: Journal, checkpointer_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    alerts: list[dict[str, Any]] = []
    plan = Plan(flaky_compensations={"s2": 2})
    definition = toy_saga(3, journal, plan, compensation_retry=TWO_ATTEMPTS)
    saga_id = new_saga_id("twice")
    caplog.set_level(logging.CRITICAL, logger="sagagraph")
    with saga_app(definition, checkpointer_url, hooks=AlertHooks(alerts.append)) as app:
        paused = run_saga(app, {"fail": "s3"}, saga_id=saga_id)
        interrupts = [
            i.value for t in app.get_state(saga_config(saga_id)).tasks for i in t.interrupts
        ]
        view = resolve_saga(app, saga_id, "retry")

    failure = {
        "step": "s2",
        "phase": "compensate",
        "error": "TransientError: s2: undo failed (attempt 2)",
        "attempts": 2,
    }
    assert paused["status"] == "compensation_failed"
    assert paused["compensation_failure"] == failure
    # The pause is an interrupt that carries the step, the error and the attempts.
    assert interrupts == [{"saga_id": saga_id, **failure}]
    assert alerts == [{"saga_id": saga_id, **failure}]
    critical = [r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL]
    assert critical == [
        f"saga {saga_id} needs an operator: compensation of s2 failed after 2 attempt(s): "
        "TransientError: s2: undo failed (attempt 2)"
    ]

    assert view["status"] == "rolled_back"
    assert view["compensated"] == ["s3", "s2", "s1"]
    assert trail(view, "s2") == [
        ("compensate", "retry", 1),
        ("compensate", "error", 2),
        ("escalate", "waiting", 1),
        ("resolve", "ok", 1),
        ("compensate", "ok", 1),
    ]
    assert journal.calls(saga_id, "compensate") == ["s3", "s2", "s2", "s2", "s1"]
    assert journal.effects(saga_id) == {
        "s1": ("undone", 1, 1),
        "s2": ("undone", 1, 1),
        "s3": ("undone", 0, 0),
    }
    assert len(alerts) == 1, "the retry that succeeded raised no second alert"


def test_the_alert_fires_before_any_later_compensation_runs(journal: Journal) -> None:
    """The moment s2 gives up, s1 has not been touched, and the saga says it is failing."""
    seen: list[tuple[list[str], str]] = []
    plan = Plan(broken_compensations={"s2"})
    definition = toy_saga(3, journal, plan, compensation_retry=TWO_ATTEMPTS)

    apps: list[Any] = []

    def pager(payload: dict[str, Any]) -> None:
        status = apps[0].get_state(saga_config(payload["saga_id"])).values["status"]
        seen.append((journal.calls(payload["saga_id"], "compensate"), status))

    with saga_app(definition, hooks=AlertHooks(pager)) as app:
        apps.append(app)
        run_saga(app, {"fail": "s3"}, saga_id="moment")

    assert seen == [(["s3", "s2", "s2"], "compensation_failed")]


@pytest.fixture(params=["sqlite", "postgres"])
def own_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A checkpointer no other test writes to: ``recover_sagas`` scans every saga in it (the
    session's shared PostgreSQL holds other tests' unfinished sagas)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    else:
        with fresh_postgres_database() as url:
            yield url


def test_an_alert_is_not_lost_when_the_process_dies_before_sending_it(
    journal: Journal, own_database: str
) -> None:
    calls: list[dict[str, Any]] = []

    def pager_that_dies_once(payload: dict[str, Any]) -> None:
        calls.append(payload)
        if len(calls) == 1:
            raise SimulatedCrash("the process died while paging")

    plan = Plan(broken_compensations={"s1"})
    definition = toy_saga(2, journal, plan, compensation_retry=TWO_ATTEMPTS)
    saga_id = new_saga_id("lost")
    with saga_app(definition, own_database, hooks=AlertHooks(pager_that_dies_once)) as app:
        with pytest.raises(SimulatedCrash):
            run_saga(app, {"fail": "s2"}, saga_id=saga_id)
        stopped = saga_status(app, saga_id)
        assert (stopped["status"], stopped["next"]) == ("compensation_failed", ["escalate"])
        assert stopped["waiting_for_operator"] is False
        assert unfinished_sagas(app) == [saga_id], "recover picks up the unsent alert"

        [view] = recover_sagas(app)

    assert len(calls) == 2 and calls[0] == calls[1], "sent again: at least once"
    assert view["waiting_for_operator"] is True
    assert [e["outcome"] for e in view["events"] if e["action"] == "escalate"] == ["waiting"]


def test_skipping_every_stuck_compensation_lists_everything_left_behind(
    journal: Journal, tmp_path: Path
) -> None:
    outputs = tmp_path / "outputs"
    plan = Plan(broken_compensations={"s1", "s2"})
    definition = toy_saga(4, journal, plan, compensation_retry=TWO_ATTEMPTS, outputs=outputs)
    alerts: list[dict[str, Any]] = []
    with saga_app(definition, hooks=AlertHooks(alerts.append)) as app:
        run_saga(app, {"fail": "s4"}, saga_id="left")
        first = resolve_saga(app, "left", "skip", note="ops: s2 kept, ticket 1")
        final = resolve_saga(app, "left", "skip", note="ops: s1 kept, ticket 2")

    assert first["status"] == "compensation_failed", "s1 gives up next and pauses again"
    assert first["compensation_failure"]["step"] == "s1"
    assert [a["step"] for a in alerts] == ["s2", "s1"]
    assert final["status"] == "resolved_by_operator"
    assert final["compensated"] == ["s4", "s3"]
    assert [(s["step"], s["note"], s["left_behind"]) for s in final["skipped"]] == [
        ("s2", "ops: s2 kept, ticket 1", str(outputs / "left" / "s2.txt")),
        ("s1", "ops: s1 kept, ticket 2", str(outputs / "left" / "s1.txt")),
    ]
    # Exactly what the operators took responsibility for is still there.
    assert sorted(p.name for p in (outputs / "left").iterdir()) == ["s1.txt", "s2.txt"]
    assert journal.effects("left")["s3"] == ("undone", 1, 1)
    finish = [e for e in final["events"] if e["action"] == "finish"]
    assert [e["detail"] for e in finish] == ["2 compensation(s) ran; 2 skipped by an operator"]
