"""Events that contradict a saga's own history are refused, recorded, and change nothing."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from sagagraph import SagaNotFoundError
from sagagraph.choreography.bus import EventBus
from sagagraph.choreography.messages import new_message
from sagagraph.choreography.runner import (
    choreographed_sagas,
    choreography_status,
    run_choreographed_saga,
    services_in_threads,
)
from sagagraph.choreography.topology import derive_choreography
from tests.choreography.test_choreography_delivery import eventually
from tests.support.choreo_buses import BACKENDS, fresh_bus
from tests.support.choreo_saga import file_saga, log_lines, outputs_of

ALL_FILES = ["reviewer.txt", "summarizer.txt", "validator.txt"]


def refusals(bus: EventBus, step: str) -> list[dict[str, Any]]:
    with bus.ledger(f"paper_review.{step}") as ledger:
        return [dict(r) for r in ledger.refusals()]


def forged(type: str, kind: Any, step: str | None, saga_id: str, **fields: Any) -> Any:
    return new_message(
        type=type, kind=kind, saga="paper_review", saga_id=saga_id, step=step, input={}, **fields
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_compensation_forged_after_completion_changes_nothing(
    tmp_path: Path, backend: str
) -> None:
    definition = file_saga(tmp_path)
    with fresh_bus(backend, tmp_path) as bus:
        done = run_choreographed_saga(definition, {}, "done-1", bus, timeout=60)
        assert done["status"] == "completed"
        with services_in_threads(bus, derive_choreography(definition)):
            bus.publish(
                [forged("summary_compensated", "compensated", "summarizer", "done-1", reason="x")]
            )
            eventually(lambda: bool(refusals(bus, "reviewer")))
        (refused,) = refusals(bus, "reviewer")
        after = choreography_status(bus, "done-1")
    assert refused["event_id"].startswith("done-1:summary_compensated:")
    assert "already ended (completed)" in refused["reason"]
    assert outputs_of(tmp_path, "done-1") == ALL_FILES
    assert log_lines(tmp_path, "compensations.log") == []
    assert {k: after[k] for k in ("status", "completed", "compensated")} == {
        "status": "completed",
        "completed": ["validator", "reviewer", "summarizer"],
        "compensated": [],
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_forward_event_for_a_saga_that_never_started_writes_nothing(
    tmp_path: Path, backend: str
) -> None:
    definition = file_saga(tmp_path)
    results = {"validator": {"data": {}, "output": None}, "reviewer": {"data": {}, "output": None}}
    with fresh_bus(backend, tmp_path) as bus:
        with services_in_threads(bus, derive_choreography(definition)):
            bus.publish([forged("reviewed", "done", "reviewer", "ghost", results=results)])
            eventually(lambda: bool(refusals(bus, "summarizer")))
        (refused,) = refusals(bus, "summarizer")
        with pytest.raises(SagaNotFoundError, match="never started"):
            choreography_status(bus, "ghost")
        assert choreographed_sagas(bus) == []
    assert "never started" in refused["reason"]
    assert outputs_of(tmp_path, "ghost") == []
    assert log_lines(tmp_path, "executions.log") == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_saga_id_that_is_a_path_is_refused_quietly(
    tmp_path: Path, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    definition = file_saga(tmp_path / "out")
    with fresh_bus(backend, tmp_path) as bus:
        with services_in_threads(bus, derive_choreography(definition)):
            bus.publish([forged("paper_submitted", "start", None, "../../x")])
            eventually(lambda: bool(refusals(bus, "validator")))
        (refused,) = refusals(bus, "validator")
    assert refused["saga_id"] == "../../x"
    assert "not a valid saga id" in refused["reason"]
    assert not any(r.levelno >= logging.ERROR for r in caplog.records)  # nobody is paged
    assert not (tmp_path / "x").exists() and log_lines(tmp_path / "out", "executions.log") == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_forged_copy_of_a_forward_event_cannot_skip_a_step(tmp_path: Path, backend: str) -> None:
    """A ``validated`` published while the saga is not there yet: the reviewer waits for the
    validator's own event, and runs once."""
    definition = file_saga(tmp_path)
    skip = forged("validated", "done", "validator", "skip-1", results={})
    skip["id"] = "skip-1:validated#forged"
    with fresh_bus(backend, tmp_path) as bus:
        bus.prepare(derive_choreography(definition))
        bus.publish([skip])
        view = run_choreographed_saga(definition, {}, "skip-1", bus, timeout=60)
        reasons = [r["reason"] for r in refusals(bus, "reviewer")]
    assert view["status"] == "completed"
    assert len(reasons) == 1 and "never started" in reasons[0]
    assert log_lines(tmp_path, "executions.log").count("skip-1 reviewer") == 1
