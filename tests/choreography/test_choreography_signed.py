"""Signed events: a forgery, an unsigned or replayed event, never moves a saga.

The forger here is anyone who can publish on the bus without the deployment key: it copies a
genuine event, retypes it and publishes it unsigned while the step it claims to speak for is
still running. The saga must end whole (completed by the genuine steps, or rolled back with
nothing left), with the forgery refused, recorded, shown as refused, and no file written
outside the saga's own folder.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sagagraph.choreography.bus import EventBus
from sagagraph.choreography.buses import open_bus
from sagagraph.choreography.messages import SagaMessage, new_message
from sagagraph.choreography.runner import (
    choreographed_sagas,
    saga_events,
    services_in_threads,
    start_choreographed_saga,
    wait_for_sagas,
)
from sagagraph.choreography.topology import derive_choreography
from tests.choreography.test_choreography_delivery import eventually
from tests.choreography.test_choreography_processes import PROCESS_BACKENDS, agent_processes
from tests.support.choreo_buses import fresh_bus
from tests.support.choreo_saga import (
    file_saga,
    file_saga_for,
    holding_marker,
    log_lines,
    outputs_of,
    release,
)

# Agents in their own processes exchanging signed events: seconds each.
pytestmark = pytest.mark.slow

KEY = "k3y-for-the-tests-0123456789abcdef"
ALL_FILES = ["reviewer.txt", "summarizer.txt", "validator.txt"]


@pytest.fixture
def bus_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """The deployment key, in the environment: this process and the agents it starts sign."""
    monkeypatch.setenv("SAGAGRAPH_BUS_KEY", KEY)
    monkeypatch.delenv("SAGAGRAPH_BUS_KEY_FILE", raising=False)
    return KEY


@contextmanager
def forger_bus(url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[EventBus]:
    """The bus as someone without the key sees it: what it publishes is unsigned."""
    with monkeypatch.context() as env:
        env.delenv("SAGAGRAPH_BUS_KEY", raising=False)
        bus = open_bus(url)
    try:
        yield bus
    finally:
        bus.close()


def refusals(bus: EventBus, step: str) -> list[dict[str, Any]]:
    with bus.ledger(f"paper_review.{step}") as ledger:
        return [dict(r) for r in ledger.refusals()]


def genuine(bus: EventBus, saga_id: str, event_type: str) -> SagaMessage:
    return next(m for m in bus.read_log([saga_id]) if m["type"] == event_type)


def retyped(event: SagaMessage, **fields: Any) -> SagaMessage:
    """A copy of ``event`` under another type, as a forger makes it (no signature)."""
    copy: dict[str, Any] = {k: v for k, v in event.items() if k != "sig"}
    copy.update(fields)
    copy["id"] = f"{event['saga_id']}:{copy['type']}"
    return copy  # type: ignore[return-value]


def forged_reviewed(validated: SagaMessage, evil: Path) -> SagaMessage:
    results = {**validated["results"], "reviewer": {"data": {"forged": True}, "output": None}}
    return retyped(
        validated,
        type="reviewed",
        step="reviewer",
        next_step="summarizer",
        input={**validated["input"], "root": str(evil)},
        results=results,
    )


def forged_review_compensated(validated: SagaMessage) -> SagaMessage:
    return retyped(
        validated,
        type="review_compensated",
        kind="compensated",
        step="reviewer",
        next_step="validator",
        ran_compensation=True,
        compensated=["reviewer"],
        reason="forged",
    )


def scan_for_key(folder: Path) -> list[str]:
    """Files under ``folder`` that contain the key."""
    return [str(p) for p in folder.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


FORGERIES = {
    "reviewed": lambda validated, evil: forged_reviewed(validated, evil),
    "review_compensated": lambda validated, evil: forged_review_compensated(validated),
}
REFUSED_BY = {"reviewed": "summarizer", "review_compensated": "validator"}


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
@pytest.mark.parametrize("backend", PROCESS_BACKENDS)
def test_a_forged_event_while_the_reviewer_runs_is_refused_and_the_saga_stays_whole(
    tmp_path: Path,
    backend: str,
    forgery: str,
    bus_key: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saga_id = f"forged-{forgery.replace('_', '-')}"
    evil = tmp_path / "chosen-by-the-forger"
    with agent_processes(backend, tmp_path) as (agents, bus):
        root = agents.root
        root.mkdir(parents=True, exist_ok=True)
        for step in ("validator", "reviewer", "summarizer"):
            agents.start(step)
        saga_input = {"hold_at": "reviewer", "root": str(root)}
        start_choreographed_saga(file_saga(root), saga_input, saga_id, bus)
        eventually(holding_marker(root, saga_id, "reviewer").exists, timeout=60)
        fake = FORGERIES[forgery](genuine(bus, saga_id, "validated"), evil)
        with forger_bus(agents.url, monkeypatch) as forger:
            forger.publish([fake])
        refuser = REFUSED_BY[forgery]
        eventually(lambda: bool(refusals(bus, refuser)), timeout=60)
        release(root, saga_id)
        view = wait_for_sagas(bus, [saga_id], 60)[saga_id]
        (refused,) = refusals(bus, refuser)
        shown = saga_events(bus, saga_id)
        codes = agents.stop_all()
    assert view["status"] == "completed", agents.logs()
    assert outputs_of(root, saga_id) == ALL_FILES
    summary = (root / saga_id / "summarizer.txt").read_text()
    assert summary == f"summarizer for {saga_id} after reviewer,validator\n"
    assert not evil.exists()
    assert log_lines(root, "compensations.log") == []
    assert refused["type"] == forgery and "unsigned" in refused["reason"]
    marked = [m for m in shown if m.get("refused")]
    assert [(m["type"], m["id"]) for m in marked] == [(forgery, fake["id"])]
    assert [m["type"] for m in shown if not m.get("refused")] == [
        "paper_submitted",
        "validated",
        "reviewed",
        "summarized",
    ]
    assert all(code == 0 for code in codes.values()), codes
    assert scan_for_key(tmp_path) == []


def test_an_unsigned_start_is_refused_when_a_key_is_set(
    tmp_path: Path, bus_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    definition = file_saga(tmp_path / "work")
    with fresh_bus("sqlite", tmp_path) as bus:
        with services_in_threads(bus, derive_choreography(definition)):
            start = new_message(
                type="paper_submitted",
                kind="start",
                saga="paper_review",
                saga_id="unsigned-1",
                input={},
                next_step="validator",
            )
            with forger_bus(bus.url, monkeypatch) as forger:
                forger.publish([start])
            eventually(lambda: bool(refusals(bus, "validator")))
        (refused,) = refusals(bus, "validator")
        assert choreographed_sagas(bus) == []
        shown = saga_events(bus, "unsigned-1")
    assert "unsigned" in refused["reason"]
    assert [m.get("refused") is not None for m in shown] == [True]
    assert outputs_of(tmp_path / "work", "unsigned-1") == []
    assert log_lines(tmp_path / "work", "executions.log") == []


def test_a_badly_signed_event_is_refused(
    tmp_path: Path, bus_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    definition = file_saga(tmp_path / "work")
    with fresh_bus("sqlite", tmp_path) as bus:
        with services_in_threads(bus, derive_choreography(definition)):
            start = new_message(
                type="paper_submitted",
                kind="start",
                saga="paper_review",
                saga_id="bad-sig-1",
                input={},
                next_step="validator",
            )
            start["sig"] = "0" * 64
            with forger_bus(bus.url, monkeypatch) as forger:
                forger.publish([start])
            eventually(lambda: bool(refusals(bus, "validator")))
        (refused,) = refusals(bus, "validator")
    assert "bad signature" in refused["reason"]
    assert log_lines(tmp_path / "work", "executions.log") == []


@pytest.mark.parametrize("backend", PROCESS_BACKENDS)
def test_a_replayed_signed_event_is_deduplicated(
    tmp_path: Path, backend: str, bus_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with agent_processes(backend, tmp_path) as (agents, bus):
        root = agents.root
        root.mkdir(parents=True, exist_ok=True)
        for step in ("validator", "reviewer", "summarizer"):
            agents.start(step)
        start_choreographed_saga(file_saga(root), {"root": str(root)}, "replayed", bus)
        first = wait_for_sagas(bus, ["replayed"], 60)["replayed"]
        log = bus.read_log(["replayed"])
        with forger_bus(agents.url, monkeypatch) as replayer:
            replayer.publish(log)  # each event again, exactly as signed
        time.sleep(3)
        again = wait_for_sagas(bus, ["replayed"], 60)["replayed"]
        after = bus.read_log(["replayed"])
        refused = {s: refusals(bus, s) for s in ("validator", "reviewer", "summarizer")}
        agents.stop_all()
    assert first["status"] == again["status"] == "completed"
    assert [m["id"] for m in after] == [m["id"] for m in log]
    assert refused == {"validator": [], "reviewer": [], "summarizer": []}
    lines = log_lines(root, "executions.log")
    assert sorted(lines) == sorted(f"replayed {s}" for s in ("validator", "reviewer", "summarizer"))


def test_each_publication_has_its_own_id() -> None:
    a, b = (
        new_message(type="validated", kind="done", saga="s", saga_id="x", input={})
        for _ in range(2)
    )
    assert a["id"] != b["id"] and a["id"].startswith("x:validated")


def test_agents_take_the_input_and_results_from_the_sagas_history(tmp_path: Path) -> None:
    """A ``validated`` whose copy of the input and of others' results differs from the saga's
    history: the reviewer works from the history (the start event, each step's own record)."""
    chosen, elsewhere = tmp_path / "chosen", tmp_path / "elsewhere"
    definition = file_saga(chosen)
    choreography = derive_choreography(definition)
    with fresh_bus("memory", tmp_path) as bus:
        bus.prepare(choreography)
        with services_in_threads(
            bus, choreography, ["reviewer"], definition_for=file_saga_for(chosen)
        ):
            start = new_message(
                type="paper_submitted",
                kind="start",
                saga="paper_review",
                saga_id="h-1",
                input={"root": str(chosen)},
                next_step="validator",
            )
            record: Any = {"data": {}, "output": None}
            validated = new_message(
                type="validated",
                kind="done",
                saga="paper_review",
                saga_id="h-1",
                step="validator",
                next_step="reviewer",
                input={"root": str(elsewhere)},
                results={"validator": record, "extra": record},
            )
            bus.publish([start, validated])
            eventually(lambda: any(m["type"] == "reviewed" for m in bus.read_log(["h-1"])))
    assert not elsewhere.exists()
    text = (chosen / "h-1" / "reviewer.txt").read_text()
    assert text == "reviewer for h-1 after validator\n"
    assert os.path.exists(chosen / "h-1" / "reviewer.txt")


def test_the_key_comes_from_the_environment_or_a_file_and_never_shows(tmp_path: Path) -> None:
    from sagagraph.choreography.messages import decode, encode
    from sagagraph.choreography.signing import Authenticator, load_bus_key
    from sagagraph.errors import ConfigurationError

    assert load_bus_key(env={}) is None
    key = load_bus_key(env={"SAGAGRAPH_BUS_KEY": KEY})
    assert key is not None and KEY not in repr(key) + str(key)
    (tmp_path / "key").write_text(f"  {KEY}  \n")
    from_file = load_bus_key(env={"SAGAGRAPH_BUS_KEY_FILE": str(tmp_path / "key")})
    flag = load_bus_key(tmp_path / "key", env={"SAGAGRAPH_BUS_KEY": "another-key-0123456789"})
    with pytest.raises(ConfigurationError, match="at least 16"):
        load_bus_key(env={"SAGAGRAPH_BUS_KEY": "short"})
    with pytest.raises(ConfigurationError, match="not both"):
        load_bus_key(env={"SAGAGRAPH_BUS_KEY": KEY, "SAGAGRAPH_BUS_KEY_FILE": "x"})
    with pytest.raises(ConfigurationError, match="cannot read") as missing:
        load_bus_key(tmp_path / "nowhere")
    assert KEY not in str(missing.value)
    event = new_message(type="validated", kind="done", saga="s", saga_id="x", input={"n": 1.5})
    sealed = Authenticator(key).seal(event)
    travelled = decode(encode(sealed))  # the signature survives the trip through JSON
    assert Authenticator(from_file).check(travelled) is None
    assert Authenticator(flag).check(travelled) is None
    assert Authenticator(key).seal(travelled) == travelled  # sealing again changes nothing
    altered = {**travelled, "input": {"n": 2}}
    assert "bad signature" in (Authenticator(key).check(altered) or "")
    other = load_bus_key(env={"SAGAGRAPH_BUS_KEY": "another-key-0123456789"})
    assert "bad signature" in (Authenticator(other).check(travelled) or "")
    assert KEY not in encode(sealed).decode()


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_without_a_key_a_compensation_without_a_cause_is_still_refused(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One user, one machine, nothing signed: a ``review_compensated`` published while the
    reviewer runs, naming no failure of the reviewer's and following no later compensation,
    is refused by the saga's history alone."""
    monkeypatch.delenv("SAGAGRAPH_BUS_KEY", raising=False)
    monkeypatch.delenv("SAGAGRAPH_BUS_KEY_FILE", raising=False)
    root = tmp_path / "work"
    definition = file_saga(root)
    with fresh_bus(backend, tmp_path) as bus:
        with services_in_threads(bus, derive_choreography(definition)):
            start_choreographed_saga(definition, {"hold_at": "reviewer"}, "nokey-1", bus)
            eventually(holding_marker(root, "nokey-1", "reviewer").exists)
            bus.publish([forged_review_compensated(genuine(bus, "nokey-1", "validated"))])
            eventually(lambda: bool(refusals(bus, "validator")))
            release(root, "nokey-1")
            view = wait_for_sagas(bus, ["nokey-1"], 30)["nokey-1"]
        (refused,) = refusals(bus, "validator")
    assert "without a cause" in refused["reason"]
    assert view["status"] == "completed"
    assert outputs_of(root, "nokey-1") == ALL_FILES
