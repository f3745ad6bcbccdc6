"""The forward path of the saga engine: ordering, failures, halts, retries, timeouts, the view."""

from __future__ import annotations

import itertools
import json
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import StateGraph
from langgraph.types import Command, interrupt

from sagagraph import (
    ConfigurationError,
    InputError,
    Retry,
    SagaDefinition,
    SagaNotFoundError,
    Step,
    StepContext,
    StepResult,
    build_saga_graph,
    new_saga_id,
    participant,
    run_saga,
    saga_config,
    saga_status,
)
from sagagraph.errors import InvalidSagaIdError
from tests.support.toy_saga import (
    Journal,
    Plan,
    TransientError,
    saga_app,
    step_names,
    stored_views,
    toy_saga,
)

MATRIX = [(n, k) for n in range(1, 7) for k in range(1, n + 1)]


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal.sqlite")


def reverse_to_one(k: int) -> list[str]:
    return [f"s{i}" for i in range(k, 0, -1)]


# --- ordering --------------------------------------------------------------------------------


@pytest.mark.parametrize("n", range(1, 7))
def test_every_step_commits_in_order(journal: Journal, n: int) -> None:
    with saga_app(toy_saga(n, journal)) as app:
        view = run_saga(app, {}, saga_id="ok")

    names = step_names(n)
    assert view["status"] == "completed"
    assert view["completed"] == names
    assert view["compensated"] == []
    assert view["outputs"] == {name: name for name in names}
    assert journal.calls("ok") == names
    # Each step saw exactly the results committed before it.
    assert [view["results"][s]["seen"] for s in names] == [names[:i] for i in range(n)]


@pytest.mark.parametrize(("n", "k"), MATRIX)
def test_failure_at_k_compensates_k_down_to_1_and_runs_nothing_after(
    journal: Journal, n: int, k: int
) -> None:
    failing = f"s{k}"
    with saga_app(toy_saga(n, journal, Plan(failing={failing}))) as app:
        view = run_saga(app, {}, saga_id="fail")

    expected = reverse_to_one(k)
    assert view["status"] == "rolled_back"
    assert view["compensated"] == expected
    assert journal.calls("fail") == step_names(k), "steps after the failing one never run"
    assert journal.calls("fail", "compensate") == expected
    # The failing step cleans up its own partial work first, with result=None.
    assert journal.compensate_results("fail") == {s: s != failing for s in expected}
    assert journal.effects("fail") == {
        **{f"s{i}": ("undone", 1, 1) for i in range(1, k)},
        failing: ("undone", 0, 0),  # nothing to undo, but the key is remembered
    }
    assert view["completed"] == []
    assert view["outputs"] == {}
    assert view["failure"] == {
        "step": failing,
        "phase": "execute",
        "error": f"PermanentError: {failing}: refused",
        "attempts": 1,
    }
    assert view["reason"].startswith(f"step {failing!r} failed after 1 attempt(s)")


@pytest.mark.parametrize("k", [None, 1, 2, 3])
def test_failure_positions_on_every_backend(
    journal: Journal, checkpointer_url: str, k: int | None
) -> None:
    saga_id = new_saga_id("backend")
    failing = {f"s{k}"} if k else set()
    with saga_app(toy_saga(3, journal, Plan(failing=failing)), checkpointer_url) as app:
        view = run_saga(app, {}, saga_id=saga_id)
        assert saga_status(app, saga_id) == view

    if k is None:
        assert (view["status"], view["completed"], view["compensated"]) == (
            "completed",
            step_names(3),
            [],
        )
    else:
        assert (view["status"], view["completed"], view["compensated"]) == (
            "rolled_back",
            [],
            reverse_to_one(k),
        )
    assert journal.calls(saga_id) == step_names(k or 3)


@pytest.mark.parametrize("k", [1, 2, 4])
def test_fail_at_injects_a_failure_after_earlier_steps_commit(journal: Journal, k: int) -> None:
    definition = toy_saga(4, journal, retry=Retry(max_attempts=3))
    with saga_app(definition) as app:
        view = run_saga(app, {}, saga_id="inj", fail_at=f"s{k}")

    assert view["status"] == "rolled_back"
    assert view["compensated"] == reverse_to_one(k)
    # The injected step never reaches its participant, and an injection is not retried.
    assert journal.calls("inj") == step_names(k - 1)
    assert view["failure"]["attempts"] == 1
    assert view["failure"]["error"].startswith("InjectedFailure:")


def test_fail_at_naming_no_step_is_refused_before_anything_runs(journal: Journal) -> None:
    with saga_app(toy_saga(3, journal)) as app:
        with pytest.raises(ConfigurationError, match=r"fail_at: unknown step 'compensate'"):
            run_saga(app, {}, saga_id="typo", fail_at="compensate")
        with pytest.raises(ConfigurationError, match=r"steps: s1, s2, s3"):
            run_saga(app, {}, saga_id="typo", fail_at="s9")
        assert stored_views(app) == []
    assert journal.saga_ids() == set()


# --- halting ---------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 4])
def test_a_halting_step_ends_the_saga_and_undoes_only_what_committed(
    journal: Journal, k: int
) -> None:
    with saga_app(toy_saga(4, journal, Plan(halt_at=f"s{k}"))) as app:
        view = run_saga(app, {}, saga_id="halt")

    assert view["status"] == "rolled_back"
    assert view["reason"] == "nothing to do"
    assert view["halted"] == {
        "step": f"s{k}",
        "reason": "nothing to do",
        "data": {"why": "not worth it"},
    }
    assert view["failure"] is None
    assert journal.calls("halt") == step_names(k)
    # The halting step committed nothing, so nothing of it is undone.
    assert view["compensated"] == reverse_to_one(k - 1)
    assert view["completed"] == []
    outcomes = [(e["step"], e["outcome"]) for e in view["events"] if e["action"] == "execute"]
    assert outcomes[-1] == (f"s{k}", "halted")


# --- retries and timeouts --------------------------------------------------------------------


def test_a_transient_failure_is_retried_and_each_attempt_is_recorded(journal: Journal) -> None:
    plan = Plan(transient_failures={"s2": 2})
    definition = toy_saga(3, journal, plan, retry=Retry(max_attempts=3, retry_on=(TransientError,)))
    with saga_app(definition) as app:
        view = run_saga(app, {}, saga_id="retry")

    assert view["status"] == "completed"
    s2 = [(e["outcome"], e["attempt"]) for e in view["events"] if e["step"] == "s2"]
    assert s2 == [("retry", 1), ("retry", 2), ("ok", 3)]
    retry_details = [e["detail"] for e in view["events"] if e["outcome"] == "retry"]
    assert retry_details == [
        "TransientError: s2: service busy (attempt 1)",
        "TransientError: s2: service busy (attempt 2)",
    ]
    assert journal.calls("retry") == ["s1", "s2", "s2", "s2", "s3"]
    assert journal.effects("retry")["s2"] == ("done", 1, 0)


def test_a_step_that_still_fails_after_its_retries_compensates(journal: Journal) -> None:
    plan = Plan(transient_failures={"s2": 5})
    definition = toy_saga(3, journal, plan, retry=Retry(max_attempts=3))
    with saga_app(definition) as app:
        view = run_saga(app, {}, saga_id="exhausted")

    assert view["status"] == "rolled_back"
    assert view["failure"]["attempts"] == 3
    s2 = [(e["outcome"], e["attempt"]) for e in view["events"] if e["step"] == "s2"]
    assert s2[:3] == [("retry", 1), ("retry", 2), ("error", 3)]
    assert view["compensated"] == ["s2", "s1"]


def test_errors_outside_retry_on_fail_at_the_first_attempt(journal: Journal) -> None:
    plan = Plan(failing={"s1"})
    definition = toy_saga(2, journal, plan, retry=Retry(max_attempts=5, retry_on=(TransientError,)))
    with saga_app(definition) as app:
        view = run_saga(app, {}, saga_id="permanent")

    assert view["failure"]["attempts"] == 1
    assert journal.calls("permanent") == ["s1"]


def test_a_step_past_its_timeout_fails_and_its_late_write_is_refused(journal: Journal) -> None:
    release = threading.Event()
    plan = Plan(hang={"s2": release})
    definition = toy_saga(3, journal, plan, timeout=0.2)
    with saga_app(definition) as app:
        view = run_saga(app, {}, saga_id="slow")
    release.set()
    for worker in threading.enumerate():
        if worker.name == "sagagraph:step 's2'":
            worker.join(10)

    assert view["status"] == "rolled_back"
    assert view["failure"]["error"] == "StepTimeoutError: step 's2' did not finish within 0.2s"
    assert next(e["outcome"] for e in view["events"] if e["step"] == "s2") == "timeout"
    assert view["compensated"] == ["s2", "s1"]
    # The abandoned call woke up after s2 was compensated: its write was refused.
    assert journal.effects("slow")["s2"] == ("undone", 0, 0)
    assert "s3" not in journal.calls("slow")


# --- LangGraph control flow inside a step -----------------------------------------------------


@pytest.mark.parametrize("timeout", [None, 5.0])
def test_interrupt_inside_a_step_pauses_the_saga_instead_of_failing_it(
    timeout: float | None,
) -> None:
    def ask(ctx: StepContext) -> StepResult:
        answer = interrupt({"question": "ship it?"})
        return StepResult(data={"answer": answer})

    definition = SagaDefinition("ask", (Step(participant("approve", ask), timeout=timeout),))
    with saga_app(definition) as app:
        paused = run_saga(app, {}, saga_id="ask")
        app.invoke(Command(resume="yes"), saga_config("ask"))
        done = saga_status(app, "ask")

    assert paused["waiting_for_operator"] is True
    assert paused["next"] == ["approve"]
    assert paused["events"] == []
    assert done["status"] == "completed"
    assert done["results"] == {"approve": {"answer": "yes"}}


# --- ids, definitions, the graph --------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_id", ["../etc", "a/b", "..", ".hidden", "", "x" * 129, "a b", "a\\b", "ok/../x"]
)
def test_unsafe_saga_ids_are_refused_before_anything_is_written(
    journal: Journal, bad_id: str
) -> None:
    with saga_app(toy_saga(2, journal)) as app:
        with pytest.raises(InvalidSagaIdError) as caught:
            run_saga(app, {}, saga_id=bad_id)
        with pytest.raises(InvalidSagaIdError):
            saga_status(app, bad_id)
        assert stored_views(app) == []
    assert "\n" not in str(caught.value)
    assert journal.saga_ids() == set()


def test_a_saga_id_runs_once_and_unknown_ids_are_reported(journal: Journal) -> None:
    with saga_app(toy_saga(1, journal)) as app:
        run_saga(app, {}, saga_id="once")
        with pytest.raises(InputError, match="'once': already exists"):
            run_saga(app, {}, saga_id="once")
        with pytest.raises(SagaNotFoundError, match="'never'"):
            saga_status(app, "never")
    assert journal.calls("once") == ["s1"]


def test_a_saga_without_an_id_gets_a_fresh_one(journal: Journal) -> None:
    with saga_app(toy_saga(1, journal)) as app:
        first = run_saga(app, {})
        second = run_saga(app, {})
    assert first["saga_id"] != second["saga_id"]
    assert first["saga_id"].startswith("saga-")


def test_build_saga_graph_returns_an_uncompiled_graph_with_the_steps_in_order(
    journal: Journal,
) -> None:
    graph = build_saga_graph(toy_saga(3, journal))
    assert isinstance(graph, StateGraph)
    assert set(graph.nodes) == {"s1", "s2", "s3", "compensate", "escalate"}
    edges = graph.compile().get_graph().edges
    forward = {(e.source, e.target) for e in edges if e.target.startswith("s")}
    assert forward == {("__start__", "s1"), ("s1", "s2"), ("s2", "s3")}


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["a", "a"], "defines steps twice"),
        (["compensate"], "reserved"),
        (["Bad-Name"], "lowercase"),
        ([], "has no steps"),
    ],
)
def test_bad_definitions_are_refused_with_one_line(names: list[str], message: str) -> None:
    def noop(ctx: StepContext) -> StepResult:
        return StepResult()

    with pytest.raises(ConfigurationError, match=message) as caught:
        SagaDefinition.of("bad", [participant(name, noop) for name in names])
    assert "\n" not in str(caught.value)


def test_retry_policies_are_validated() -> None:
    with pytest.raises(ConfigurationError, match="max_attempts"):
        Retry(max_attempts=0)
    with pytest.raises(ConfigurationError, match="backoff"):
        Retry(backoff=-1)
    policy = Retry(max_attempts=4, backoff=0.5, backoff_factor=2, max_backoff=1.5)
    assert [policy.delay(a) for a in (1, 2, 3)] == [0.5, 1.0, 1.5]


def test_every_step_and_compensation_gets_the_definitions_deps() -> None:
    seen: list[str] = []

    def note(ctx: StepContext[list[str]]) -> StepResult:
        ctx.deps.append(f"{ctx.step} did")
        return StepResult()

    def undo(ctx: StepContext[list[str]], result: StepResult | None) -> None:
        ctx.deps.append(f"{ctx.step} undone")

    steps = [participant("a", note, undo), participant("b", note, undo)]
    definition = SagaDefinition.of("deps", steps, deps=seen)
    with saga_app(definition) as app:
        view = run_saga(app, {}, saga_id="deps", fail_at="b")
    assert view["status"] == "rolled_back"
    assert seen == ["a did", "b undone", "a undone"]


# --- the JSON view and the audit trail --------------------------------------------------------


def _history(app: Any, saga_id: str) -> list[dict[str, Any]]:
    """The saga's checkpointed states, oldest first."""
    return [s.values for s in reversed(list(app.get_state_history(saga_config(saga_id))))]


@pytest.mark.parametrize(
    ("fail", "statuses"),
    [(None, ["running", "completed"]), ("s3", ["running", "compensating", "rolled_back"])],
)
def test_status_lifecycle_and_an_append_only_trail(
    journal: Journal, fail: str | None, statuses: list[str]
) -> None:
    with saga_app(toy_saga(3, journal)) as app:
        view = run_saga(app, {"fail": fail} if fail else {}, saga_id="life")
        history = _history(app, "life")

    seen: list[str] = []
    for values in history:
        status = values.get("status")
        if status and (not seen or seen[-1] != status):
            seen.append(status)
    assert seen == statuses

    trails = [values.get("events") or [] for values in history]
    for before, after in itertools.pairwise(trails):
        assert after[: len(before)] == before, "events are only ever appended"
    assert trails[-1] == view["events"]


def test_the_view_is_json_with_the_documented_fields(journal: Journal) -> None:
    with saga_app(toy_saga(3, journal)) as app:
        view = run_saga(app, {"fail": "s3"}, saga_id="json")

    decoded = json.loads(json.dumps(view))
    for key in ("saga_id", "status", "reason", "mode", "router", "completed", "compensated"):
        assert key in decoded
    assert {"outputs", "events", "usage"} <= decoded.keys()
    assert decoded["saga_id"] == "json"
    assert decoded["mode"] == "orchestration"
    assert decoded["router"] == "deterministic"
    assert decoded["usage"] == {"input_tokens": 0, "output_tokens": 0}
    stamps = []
    for event in decoded["events"]:
        base = {"ts", "step", "action", "outcome", "attempt", "detail"}
        # An attempt's event also says when it began and how long it took.
        attempt = event["action"] in ("execute", "compensate")
        timing = {"started", "duration_ms"} if attempt else set()
        assert set(event) == base | timing
        assert isinstance(event["attempt"], int) and event["attempt"] >= 1
        stamps.append(datetime.fromisoformat(event["ts"]))
    assert stamps == sorted(stamps)
    trail = [(e["step"], e["action"], e["outcome"]) for e in decoded["events"]]
    assert trail == [
        ("s1", "execute", "ok"),
        ("s2", "execute", "ok"),
        ("s3", "execute", "error"),
        ("s3", "compensate", "ok"),
        ("s2", "compensate", "ok"),
        ("s1", "compensate", "ok"),
        ("saga", "finish", "ok"),
    ]


def test_token_usage_is_summed_and_kept_after_compensation() -> None:
    def spend(ctx: StepContext) -> StepResult:
        return StepResult(usage={"input_tokens": 10, "output_tokens": 3})

    definition = SagaDefinition.of("tokens", [participant("a", spend), participant("b", spend)])
    with saga_app(definition) as app:
        view = run_saga(app, {}, saga_id="tokens", fail_at="b")
    assert view["usage"] == {"input_tokens": 10, "output_tokens": 3}
    assert view["usage_by_step"] == {"a": {"input_tokens": 10, "output_tokens": 3}}


# --- concurrency ------------------------------------------------------------------------------


def test_concurrent_sagas_never_touch_each_others_records(
    journal: Journal, checkpointer_url: str
) -> None:
    """Two sagas meet inside s2 (a barrier), then one fails at s3 and the other completes."""
    plan = Plan(barrier=threading.Barrier(2))
    definition = toy_saga(4, journal, plan)
    views: dict[str, dict[str, Any]] = {}
    errors: list[BaseException] = []
    with saga_app(definition, checkpointer_url) as app:
        ids = {"left": new_saga_id("left"), "right": new_saga_id("right")}

        def run(side: str, saga_input: dict[str, Any]) -> None:
            try:
                views[side] = run_saga(app, saga_input, saga_id=ids[side])
            except BaseException as error:  # surfaced below, in the test's thread
                errors.append(error)

        threads = [
            threading.Thread(target=run, args=("left", {"fail": "s3"})),
            threading.Thread(target=run, args=("right", {})),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not errors
        again = {side: saga_status(app, saga_id) for side, saga_id in ids.items()}

    assert views["left"]["status"] == "rolled_back"
    assert views["left"]["compensated"] == ["s3", "s2", "s1"]
    assert views["right"]["status"] == "completed"
    for side, saga_id in ids.items():
        assert again[side]["saga_id"] == saga_id
        assert again[side]["events"] == views[side]["events"]
    assert journal.effects(ids["left"]) == {
        "s1": ("undone", 1, 1),
        "s2": ("undone", 1, 1),
        "s3": ("undone", 0, 0),
    }
    assert journal.effects(ids["right"]) == {f"s{i}": ("done", 1, 0) for i in range(1, 5)}
    assert journal.calls(ids["right"], "compensate") == []


def test_a_halt_from_a_step_not_declared_can_halt_fails_it_and_compensates() -> None:
    undone: list[str] = []

    def book(ctx: StepContext) -> StepResult:
        return StepResult(output="booked")

    def surprise(ctx: StepContext) -> StepResult:
        return StepResult(halt=True, reason="changed my mind")

    saga = SagaDefinition.of(
        "surprise",
        [
            participant("book", book, lambda ctx, result: undone.append(ctx.step)),
            participant("decide", surprise),
        ],
    )
    with saga_app(saga) as app:
        view = run_saga(app, {}, saga_id="surprise")

    assert view["status"] == "rolled_back"
    assert view["halted"] is None
    assert view["failure"]["error"] == (
        "ConfigurationError: step 'decide' returned halt=True but is not declared "
        "Step(..., can_halt=True)"
    )
    assert view["failure"]["attempts"] == 1
    assert undone == ["book"]
