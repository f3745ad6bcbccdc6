"""Each attempt's duration: a step's ``execute`` and ``compensate`` events carry when the
attempt began (``started``) and how long it took (``duration_ms``), consistent with their
``ts``; ``status --json`` and ``events --json`` show them, and ``events`` prints them.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from sagagraph.cli import main
from sagagraph.saga.view import stamp_ms

REPO = Path(__file__).resolve().parents[2]
COMPLETE = REPO / "examples" / "papers" / "complete_paper.md"
ATTEMPTS = ("execute", "compensate")

pytestmark = pytest.mark.usefixtures("offline_cli")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def check_durations(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The attempts among ``events``, each checked against its timestamps."""
    attempts = [e for e in events if e["action"] in ATTEMPTS]
    assert attempts
    for event in attempts:
        began, ended = stamp_ms(event["started"]), stamp_ms(event["ts"])
        assert event["duration_ms"] == ended - began >= 0, event
    # One step at a time: an attempt begins after the one before it ended.
    for before, after in itertools.pairwise(attempts):
        assert stamp_ms(after["started"]) >= stamp_ms(before["ts"]), (before, after)
    return attempts


def test_every_attempt_of_a_rolled_back_saga_has_its_duration(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["run", str(COMPLETE), "--saga-id", "timed", "--fail-at", "summarizer"]
    assert run(capsys, *args)[0] == 3
    code, out = run(capsys, "status", "timed", "--json")
    view = json.loads(out)
    attempts = check_durations(view["events"])
    assert [(e["step"], e["action"]) for e in attempts] == [
        ("validator", "execute"),
        ("reviewer", "execute"),
        ("summarizer", "execute"),
        ("summarizer", "compensate"),
        ("reviewer", "compensate"),
        ("validator", "compensate"),
    ]
    # Fields are added, none renamed.
    assert {"ts", "step", "action", "outcome", "attempt", "detail"} <= set(attempts[0])

    code, out = run(capsys, "events", "timed", "--json")
    assert code == 0 and json.loads(out) == view["events"]

    code, out = run(capsys, "events", "timed")
    lines = out.splitlines()
    for event in attempts:
        shown = f"{event['duration_ms'] / 1000:.3f} s"
        assert any(
            event["ts"] in line and event["action"] in line and shown in line for line in lines
        ), (shown, out)
    # The saga's end is no attempt: no duration on its line.
    (finish,) = [line for line in lines if " finish " in line]
    assert not re.search(r"\d\.\d{3} s", finish), finish


def test_a_choreographed_sagas_messages_carry_their_attempts_durations(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["run", str(COMPLETE), "--saga-id", "chor", "--mode", "choreography"]
    assert run(capsys, *args)[0] == 0
    code, out = run(capsys, "events", "chor", "--json")
    assert code == 0
    messages = json.loads(out)
    events = [e for message in messages for e in message.get("events") or []]
    attempts = check_durations(events)
    assert [e["step"] for e in attempts] == ["validator", "reviewer", "summarizer"]
    code, out = run(capsys, "events", "chor")
    assert code == 0
    for event in attempts:
        line = next(line for line in out.splitlines() if f" {event['step']} " in line)
        assert f"{event['duration_ms'] / 1000:.3f} s" in line, line
