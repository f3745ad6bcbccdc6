"""Choreography ends every saga as orchestration does, on every bus backend."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from sagagraph import InputError, SagaNotFoundError, build_saga_graph, run_saga
from sagagraph.choreography.bus import EventBus
from sagagraph.choreography.runner import (
    choreography_status,
    run_choreographed_saga,
    saga_events,
)
from tests.support.choreo_buses import BACKENDS, bus_url_for, cleaned_up, fresh_bus
from tests.support.choreo_saga import PAPER_STEPS, file_saga, log_lines, outputs_of

SCENARIOS: dict[str, tuple[dict[str, Any], str | None]] = {
    "success": ({}, None),
    "early_termination": ({"halt_at": "validator"}, None),
    "compensation": ({}, "summarizer"),
    "retried_then_ok": ({"flaky": {"reviewer": 2}}, None),
    "reviewer_breaks": ({"broken": "reviewer"}, None),
    "halt_mid_saga": ({"halt_at": "reviewer"}, None),
}

COMPARED = ("status", "reason", "completed", "compensated", "halted", "failure", "results")


def orchestrated(root: Path, input: dict[str, Any], fail_at: str | None) -> dict[str, Any]:
    app = build_saga_graph(file_saga(root)).compile(checkpointer=InMemorySaver())
    return run_saga(app, input, saga_id="s-1", fail_at=fail_at)


def trail(view: dict[str, Any]) -> list[tuple[str, str, str, int]]:
    return [(e["step"], e["action"], e["outcome"], e["attempt"]) for e in view["events"]]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_choreography_matches_orchestration(tmp_path: Path, backend: str, scenario: str) -> None:
    input, fail_at = SCENARIOS[scenario]
    expected = orchestrated(tmp_path / "orchestration", input, fail_at)
    root = tmp_path / "choreography"
    with fresh_bus(backend, tmp_path) as bus:
        view = run_choreographed_saga(
            file_saga(root), input, "s-1", bus, fail_at=fail_at, timeout=60
        )
        assert {k: view[k] for k in COMPARED} == {k: expected[k] for k in COMPARED}
        assert trail(view) == trail(expected)
        assert view["mode"] == "choreography"
        assert view["router"] == "deterministic"
        assert view["next"] == []
        assert set(view) == set(expected)
        assert outputs_of(root, "s-1") == outputs_of(tmp_path / "orchestration", "s-1")
        assert sorted(view["outputs"]) == sorted(expected["outputs"])
        assert view == choreography_status(bus, "s-1") | {"events": view["events"]}


@pytest.mark.parametrize("backend", BACKENDS)
def test_reference_scenarios_end_states(tmp_path: Path, backend: str) -> None:
    """The design's three scenarios, stated outright (not only as parity)."""
    with fresh_bus(backend, tmp_path) as bus:
        definition = file_saga(tmp_path)
        ok = run_choreographed_saga(definition, {}, "ok", bus, timeout=60)
        invalid = run_choreographed_saga(definition, {"halt_at": "validator"}, "bad", bus)
        failed = run_choreographed_saga(definition, {}, "fail", bus, fail_at="summarizer")
    assert ok["status"] == "completed"
    assert ok["completed"] == ["validator", "reviewer", "summarizer"]
    assert outputs_of(tmp_path, "ok") == ["reviewer.txt", "summarizer.txt", "validator.txt"]

    assert invalid["status"] == "rolled_back"
    assert invalid["reason"] == "validator refused the input"
    assert invalid["compensated"] == [] and invalid["outputs"] == {}
    assert outputs_of(tmp_path, "bad") == []
    assert not any(line.split()[0] == "bad" for line in log_lines(tmp_path, "executions.log"))

    assert failed["status"] == "rolled_back"
    assert failed["compensated"] == ["summarizer", "reviewer", "validator"]
    assert failed["outputs"] == {} and outputs_of(tmp_path, "fail") == []


def test_generic_saga_runs_on_default_names(tmp_path: Path) -> None:
    definition = file_saga(tmp_path, name="trip", steps=("flight", "hotel", "car", "billing"))
    with fresh_bus("sqlite", tmp_path) as bus:
        view = run_choreographed_saga(definition, {}, "t-1", bus, fail_at="car")
        types = [m["type"] for m in saga_events(bus, "t-1")]
    assert view["compensated"] == ["car", "hotel", "flight"]
    assert types == [
        "saga_started",
        "flight_done",
        "hotel_done",
        "car_compensated",
        "hotel_compensated",
        "flight_compensated",
    ]


def test_paper_saga_events_are_named_as_in_the_design(tmp_path: Path) -> None:
    with fresh_bus("sqlite", tmp_path) as bus:
        run_choreographed_saga(file_saga(tmp_path), {}, "p-1", bus, fail_at="summarizer")
        run_choreographed_saga(file_saga(tmp_path), {}, "p-2", bus)
        first = [m["type"] for m in saga_events(bus, "p-1")]
        second = [m["type"] for m in saga_events(bus, "p-2")]
    assert first == [
        "paper_submitted",
        "validated",
        "reviewed",
        "summary_compensated",
        "review_compensated",
        "validation_compensated",
    ]
    assert second == ["paper_submitted", "validated", "reviewed", "summarized"]


def test_status_is_readable_from_a_new_process_view_of_the_sqlite_log(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'events.sqlite'}"
    view = run_choreographed_saga(file_saga(tmp_path), {}, "s-9", url, fail_at="reviewer")
    assert choreography_status(url, "s-9") == view
    assert saga_events(url, "s-9")[0]["id"].startswith("s-9:paper_submitted:")


def test_unknown_saga_and_missing_log(tmp_path: Path) -> None:
    missing = f"sqlite:///{tmp_path / 'nothing-here.sqlite'}"
    assert saga_events(missing, "nope") == []
    with pytest.raises(SagaNotFoundError, match="'nope'"):
        choreography_status(missing, "nope")
    assert not (tmp_path / "nothing-here.sqlite").exists()


def test_a_saga_id_is_used_once(tmp_path: Path) -> None:
    with fresh_bus("sqlite", tmp_path) as bus:
        run_choreographed_saga(file_saga(tmp_path), {}, "once", bus)
        with pytest.raises(InputError, match="'once': already exists"):
            run_choreographed_saga(file_saga(tmp_path), {}, "once", bus)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"saga_id": "../escape"}, "saga id"),
        ({"fail_at": "critic"}, "fail_at: unknown step 'critic'"),
        ({"input": {"paper": object()}}, "saga input"),
    ],
)
def test_bad_arguments_are_refused_before_anything_is_published(
    tmp_path: Path, kwargs: dict[str, Any], error: str
) -> None:
    arguments: dict[str, Any] = {"input": {}, "saga_id": "fine"} | kwargs
    url = f"sqlite:///{tmp_path / 'events.sqlite'}"
    with pytest.raises(Exception, match=error):
        run_choreographed_saga(file_saga(tmp_path), bus_url=url, **arguments)
    assert saga_events(url, "fine") == []


def test_unknown_bus_url_is_a_configuration_error(tmp_path: Path) -> None:
    from sagagraph import ConfigurationError

    with pytest.raises(ConfigurationError, match=r"bus url 'kafka://u:\*\*\*@h'"):
        run_choreographed_saga(file_saga(tmp_path), {}, "x", "kafka://u:secret@h")


def test_agents_run_by_run_agent_serve_sagas_started_elsewhere(tmp_path: Path) -> None:
    """The functions the CLI wires: one run_step_service a step, sagas started and awaited apart."""
    import threading

    from sagagraph.choreography.runner import (
        run_step_service,
        start_choreographed_saga,
        wait_for_sagas,
    )

    url = f"sqlite:///{tmp_path / 'events.sqlite'}"
    definition = file_saga(tmp_path)
    stop = threading.Event()
    readies = {step: threading.Event() for step in definition.step_names}
    threads = [
        threading.Thread(
            target=run_step_service, args=(definition, step, url, stop), kwargs={"ready": r}
        )
        for step, r in readies.items()
    ]
    for thread in threads:
        thread.start()
    try:
        assert all(r.wait(30) for r in readies.values())
        first = start_choreographed_saga(definition, {}, None, url)
        second = start_choreographed_saga(definition, {}, "second", url, fail_at="reviewer")
        views = wait_for_sagas(url, [first, second], timeout=30)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert views[first]["status"] == "completed"
    assert views["second"]["compensated"] == ["reviewer", "validator"]
    with pytest.raises(InputError, match="already exists"):
        start_choreographed_saga(definition, {}, "second", url)


def test_passwords_never_reach_errors(tmp_path: Path) -> None:
    from sagagraph.errors import BusError

    url = "amqp://guest:topsecret@127.0.0.1:1/"  # nothing listens on port 1
    with pytest.raises(BusError) as caught:
        choreography_status(url, "x")
    assert "topsecret" not in str(caught.value)
    assert "guest:***@127.0.0.1:1" in str(caught.value)


@pytest.mark.rabbitmq
def test_a_wrong_broker_password_is_reported_without_it(amqp_url: str) -> None:
    from sagagraph import ConfigurationError

    wrong = amqp_url.replace("guest:guest@", "guest:not-the-password@")
    # Bad usage (exit 2), not an outage: no retry can fix it.
    with pytest.raises(ConfigurationError, match="refused the user name or password") as caught:
        choreography_status(wrong, "x")
    assert "not-the-password" not in str(caught.value)


@contextmanager
def agents_outside(
    definition: Any, url: str, state_dir: Path, steps: tuple[str, ...]
) -> Iterator[None]:
    """``steps``' agents serving on ``url`` as another process would (threads, own ledgers)."""
    from sagagraph.choreography.runner import run_step_service

    stop = threading.Event()
    threads = []
    for step in steps:
        ready = threading.Event()
        thread = threading.Thread(
            target=run_step_service,
            args=(definition, step, url, stop),
            kwargs={"state_dir": state_dir, "ready": ready},
        )
        thread.start()
        threads.append(thread)
        assert ready.wait(30)
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join()


PROCESS_BUSES = ["sqlite", pytest.param("amqp", marks=pytest.mark.rabbitmq)]


def start_id(bus: EventBus, saga_id: str) -> str:
    return next(m["id"] for m in bus.read_log([saga_id]) if m["kind"] == "start")


@pytest.mark.parametrize("backend", PROCESS_BUSES)
def test_run_uses_the_agents_serving_elsewhere_when_all_of_them_serve(
    tmp_path: Path, backend: str
) -> None:
    """No agent is doubled in-process: the run only publishes and waits."""
    from sagagraph.choreography.ledger import StepLedger

    definition = file_saga(tmp_path)
    url = bus_url_for(backend, tmp_path)
    with cleaned_up(url, tmp_path) as bus:
        with agents_outside(definition, url, tmp_path / "outside", PAPER_STEPS):
            assert bus.listeners("paper_review.reviewer") == 1
            view = run_choreographed_saga(definition, {}, "shared", bus, timeout=60)
        started = start_id(bus, "shared")
        assert bus.listeners("paper_review.reviewer") == 0  # they said goodbye
        in_bus_ledger = None
        if backend == "sqlite":  # log agents keep their ledger in the log file
            with bus.ledger("paper_review.validator") as ledger:
                in_bus_ledger = ledger.handled(started)
    assert view["status"] == "completed"
    assert log_lines(tmp_path, "executions.log").count("shared validator") == 1
    if backend == "amqp":
        namespace = bus.url.rsplit("namespace=", 1)[1]
        ledger_file = tmp_path / "outside" / f"{namespace}.paper_review.validator.sqlite"
        with StepLedger(ledger_file, "paper_review.validator") as ledger:
            assert ledger.handled(started) is not None
        assert not (tmp_path / "agents" / f"{namespace}.paper_review.validator.sqlite").exists()
    else:
        assert in_bus_ledger is not None


@pytest.mark.parametrize("backend", PROCESS_BUSES)
@pytest.mark.parametrize("placement", [None, "in-process", "external"])
def test_run_refuses_a_mix_of_agents_serving_and_missing(
    tmp_path: Path, backend: str, placement: Any
) -> None:
    """One agent process missing: the run does not quietly run that agent in-process."""
    from sagagraph import ConfigurationError

    definition = file_saga(tmp_path)
    url = bus_url_for(backend, tmp_path)
    with cleaned_up(url, tmp_path) as bus:
        two = ("validator", "reviewer")
        with (
            agents_outside(definition, url, tmp_path / "outside", two),
            pytest.raises(ConfigurationError) as caught,
        ):
            run_choreographed_saga(definition, {}, "mixed", bus, agents=placement, timeout=60)
        assert saga_events(bus, "mixed") == []  # refused before the saga started
    message = str(caught.value)
    if placement == "in-process":
        assert "validator, reviewer already serve" in message
    else:
        assert "summarizer" in message and "sagagraph agent" in message
        if placement is None:  # two serve, one does not: said in words that agree
            assert "step services validator, reviewer serve on" in message
            assert "but summarizer does not:" in message
    assert log_lines(tmp_path, "executions.log") == []


@pytest.mark.parametrize("backend", PROCESS_BUSES)
def test_external_agents_must_all_serve(tmp_path: Path, backend: str) -> None:
    from sagagraph import ConfigurationError

    url = bus_url_for(backend, tmp_path)
    with (
        cleaned_up(url, tmp_path) as bus,
        pytest.raises(ConfigurationError, match="no service serves validator, reviewer, summ"),
    ):
        run_choreographed_saga(file_saga(tmp_path), {}, "x", bus, agents="external")
