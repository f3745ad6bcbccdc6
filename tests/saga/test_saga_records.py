"""The kernel's record builders: the exact records and reason lines every style writes."""

from __future__ import annotations

import logging
from collections.abc import Generator

import pytest

from sagagraph.errors import StepTimeoutError
from sagagraph.saga.drivers import Returned, advance
from sagagraph.saga.records import (
    compensation_failed,
    failure_record,
    halt_record,
    rollback_finished,
    rollback_requested,
    router_aborted,
    saga_halted,
    step_failed,
)


def test_step_failed_builds_the_record_the_reason_and_the_state_update(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="sagagraph"):
        failed = step_failed("s-1", "reviewer", RuntimeError("model down"), 3)
    assert failed.failure == {
        "step": "reviewer",
        "phase": "execute",
        "error": "RuntimeError: model down",
        "attempts": 3,
    }
    assert failed.reason == "step 'reviewer' failed after 3 attempt(s): RuntimeError: model down"
    assert failed.update() == {
        "status": "compensating",
        "failure": failed.failure,
        "reason": failed.reason,
    }
    assert "saga s-1: step reviewer failed: RuntimeError: model down" in caplog.text


def test_compensation_failed_is_a_compensate_phase_record() -> None:
    record = compensation_failed("validator", StepTimeoutError("too slow"), 2)
    assert record == {
        "step": "validator",
        "phase": "compensate",
        "error": "StepTimeoutError: too slow",
        "attempts": 2,
    }
    assert failure_record("validator", "compensate", "StepTimeoutError: too slow", 2) == record


def test_a_halt_keeps_its_reason_or_names_the_step() -> None:
    halt = halt_record("validator", "missing: abstract", {"missing": ["abstract"]})
    assert halt.halted == {
        "step": "validator",
        "reason": "missing: abstract",
        "data": {"missing": ["abstract"]},
    }
    assert halt.reason == "missing: abstract"
    silent = halt_record("validator", None)
    assert silent.halted == {"step": "validator", "reason": None, "data": {}}
    assert silent.reason == "step 'validator' halted the saga"
    assert silent.update() == {"halted": silent.halted, "reason": silent.reason}


def test_router_abort_and_forced_rollback_records() -> None:
    aborted = router_aborted("supervisor", 3, "malformed JSON")
    error = "RouterAborted: no acceptable next step after 3 proposal(s); last: malformed JSON"
    assert aborted.failure == {
        "step": "supervisor",
        "phase": "execute",
        "error": error,
        "attempts": 3,
    }
    assert aborted.reason == f"LLM router aborted: {error}"
    requested = rollback_requested("summarizer", "operator said so")
    assert requested.failure == {
        "step": "summarizer",
        "phase": "execute",
        "error": "RollbackRequested: operator said so",
        "attempts": 0,
    }
    assert requested.reason == "operator said so"
    halted = saga_halted("operator said so")
    assert halted.halted == {"step": "saga", "reason": "operator said so", "data": {}}
    assert halted.reason == "operator said so"


@pytest.mark.parametrize(
    ("ran", "skipped", "status", "detail"),
    [
        (3, 0, "rolled_back", "3 compensation(s) ran"),
        (0, 0, "rolled_back", "0 compensation(s) ran"),
        (2, 1, "resolved_by_operator", "2 compensation(s) ran; 1 skipped by an operator"),
    ],
)
def test_rollback_finished(ran: int, skipped: int, status: str, detail: str) -> None:
    finished = rollback_finished(ran, skipped)
    assert finished.status == status
    event = finished.event
    assert (event["step"], event["action"], event["outcome"], event["attempt"]) == (
        "saga",
        "finish",
        "ok",
        1,
    )
    assert event["detail"] == detail


def test_advance_drives_a_generator_to_its_return_value() -> None:
    def doubling() -> Generator[int, int, str]:
        total = 0
        for n in (1, 2):
            total += yield n
        return f"total {total}"

    loop = doubling()
    request = advance(loop)
    answers: list[int] = []
    while not isinstance(request, Returned):
        answers.append(request)
        request = advance(loop, request * 2)
    assert answers == [1, 2]
    assert request.value == "total 6"


def test_the_kernel_loads_without_langgraph() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from sagagraph.saga.view import Status; "
        "from sagagraph.saga.names import COMPENSATE; print('langgraph' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", "names and statuses load without LangGraph"


def test_reasons_and_errors_hold_only_text_every_checkpointer_stores() -> None:
    """A NUL (PostgreSQL refuses it), control characters and lone surrogates (not UTF-8)
    in an error message or a reason become U+FFFD; other text is kept as it is."""
    odd = "bad \x00 byte \x1b[0m \ud800 é 🙂 ok"
    cleaned = "bad \ufffd byte \ufffd[0m \ufffd é 🙂 ok"
    failed = step_failed("s", "step", RuntimeError(odd), 1)
    assert failed.failure["error"] == f"RuntimeError: {cleaned}"
    assert halt_record("step", odd).reason == cleaned
    assert saga_halted(odd).reason == cleaned
    assert rollback_requested("step", odd).reason == cleaned
    for text in (failed.reason, cleaned):
        text.encode("utf-8")
    assert halt_record("step", "tab\tand newline\nkept").reason == "tab\tand newline\nkept"
