"""Parallel steps (``Step.after``) under deterministic orchestration: siblings run in one
superstep, a join waits for all its branches, and compensation covers exactly the branches
that committed (plus every step that failed)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sagagraph import SagaDefinition, Step, build_saga_graph, resume_saga, run_saga
from sagagraph.agents.paper_saga import paper_saga_definition
from sagagraph.checkpoints.async_factory import open_async_checkpointer
from sagagraph.choreography.topology import derive_choreography
from sagagraph.errors import ConfigurationError
from sagagraph.graph.async_runner import arun_saga
from sagagraph.graph.runner import saga_config
from sagagraph.saga.names import new_saga_id
from tests.agents.test_paper_saga import COMPLETE, paper_app, visible_files
from tests.support.toy_saga import (
    FAST_RETRY,
    Crash,
    Journal,
    Plan,
    SimulatedCrash,
    ToyStep,
    rebuilt,
    saga_app,
)


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal.sqlite")


@pytest.fixture(params=["memory", "sqlite"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'cp.sqlite'}"


def diamond(journal: Journal, plan: Plan) -> SagaDefinition:
    """``a -> b``, ``a -> c``, ``(b, c) -> d``."""

    def step(name: str, after: tuple[str, ...] | None = None) -> Step:
        return Step(ToyStep(name, journal, plan), compensation_retry=FAST_RETRY, after=after)

    return SagaDefinition(
        "diamond", (step("a"), step("b", ("a",)), step("c", ("a",)), step("d", ("b", "c")))
    )


def executed(view: dict[str, Any]) -> list[str]:
    return [e["step"] for e in view["events"] if e["action"] == "execute"]


# --- the paper saga ----------------------------------------------------------------------


def test_parallel_paper_saga_completes_with_the_three_files(url: str, tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    definition = paper_saga_definition(outputs_dir=outputs, parallel=True)
    with paper_app(url, definition) as app:
        view = run_saga(app, {"paper": COMPLETE})
    saga_id = view["saga_id"]
    assert view["status"] == "completed", view["reason"]
    assert sorted(view["completed"]) == ["reviewer", "summarizer", "validator"]
    assert view["completed"][0] == "validator"
    assert visible_files(outputs) == [
        f"{saga_id}/review.txt",
        f"{saga_id}/summary.txt",
        f"{saga_id}/validation.txt",
    ]
    assert view["events"][-1]["step"] in ("reviewer", "summarizer")


def test_parallel_paper_saga_failing_summarizer_undoes_the_reviewer_that_ran_beside_it(
    url: str, tmp_path: Path
) -> None:
    outputs = tmp_path / "outputs"
    definition = paper_saga_definition(outputs_dir=outputs, parallel=True)
    with paper_app(url, definition) as app:
        view = run_saga(app, {"paper": COMPLETE}, fail_at="summarizer")
    assert view["status"] == "rolled_back"
    assert view["failure"]["step"] == "summarizer"
    assert view["compensated"] == ["summarizer", "reviewer", "validator"]
    assert view["completed"] == []
    assert visible_files(outputs) == []


def test_the_default_paper_saga_is_still_a_chain() -> None:
    assert paper_saga_definition().is_chain
    assert not paper_saga_definition(parallel=True).is_chain


# --- a toy diamond -----------------------------------------------------------------------


def test_diamond_completes_and_the_join_runs_once(journal: Journal, url: str) -> None:
    definition = diamond(journal, Plan())
    with saga_app(definition, url) as app:
        view = run_saga(app, {}, saga_id="dia-ok")
    assert view["status"] == "completed"
    assert sorted(executed(view)) == ["a", "b", "c", "d"]
    assert executed(view)[0] == "a" and executed(view)[-1] == "d"
    assert journal.effects("dia-ok") == {s: ("done", 1, 0) for s in "abcd"}


def test_diamond_failing_branch_stops_the_join_and_undoes_the_sibling(
    journal: Journal, url: str
) -> None:
    definition = diamond(journal, Plan(failing={"c"}))
    with saga_app(definition, url) as app:
        view = run_saga(app, {}, saga_id="dia-c")
    assert view["status"] == "rolled_back"
    assert "d" not in journal.calls("dia-c")  # the join never ran its step
    # b ran beside c and committed: the failed step first, then what committed, newest first.
    assert ("b", "ok") in [(e["step"], e["outcome"]) for e in view["events"]]
    assert view["compensated"] == ["c", "b", "a"]
    assert journal.effects("dia-c") == {
        "a": ("undone", 1, 1),
        "b": ("undone", 1, 1),
        "c": ("undone", 0, 0),
    }
    assert journal.compensate_results("dia-c") == {"c": False, "b": True, "a": True}


def test_diamond_under_ainvoke_matches_invoke(tmp_path: Path) -> None:
    async def arun(journal: Journal, fail: str | None) -> dict[str, Any]:
        async with open_async_checkpointer("memory://") as checkpointer:
            app = build_saga_graph(diamond(journal, Plan())).compile(checkpointer=checkpointer)
            return await arun_saga(app, {"fail": fail} if fail else {}, saga_id="dia-async")

    done = asyncio.run(arun(Journal(tmp_path / "ok.sqlite"), None))
    failed = asyncio.run(arun(Journal(tmp_path / "c.sqlite"), "c"))
    assert done["status"] == "completed"
    assert failed["status"] == "rolled_back"
    assert failed["compensated"] == ["c", "b", "a"]


def test_diamond_both_siblings_failing_are_both_cleaned_up(journal: Journal, url: str) -> None:
    definition = diamond(journal, Plan(failing={"b", "c"}))
    with saga_app(definition, url) as app:
        view = run_saga(app, {}, saga_id="dia-bc")
        again = run_saga(app, {}, saga_id="dia-bc-2")
    assert view["status"] == "rolled_back"
    # One failure is reported, the same one every time; both failed steps are cleaned up.
    assert view["failure"]["step"] == again["failure"]["step"]
    assert view["failure"]["step"] in ("b", "c")
    assert view["reason"].startswith(f"step {view['failure']['step']!r} failed")
    first = view["failure"]["step"]
    other = "c" if first == "b" else "b"
    assert view["compensated"] == [first, other, "a"]
    assert "d" not in journal.calls("dia-bc")
    assert journal.effects("dia-bc")["a"] == ("undone", 1, 1)


def test_a_halting_sibling_rolls_back_the_one_that_committed(journal: Journal) -> None:
    plan = Plan(halt_at="b")

    def step(name: str, after: tuple[str, ...] | None = None) -> Step:
        return Step(ToyStep(name, journal, plan), after=after, can_halt=name == "b")

    definition = SagaDefinition(
        "halt", (step("a"), step("b", ("a",)), step("c", ("a",)), step("d", ("b", "c")))
    )
    with saga_app(definition) as app:
        view = run_saga(app, {}, saga_id="dia-halt")
    assert view["status"] == "rolled_back"
    assert view["halted"]["step"] == "b"
    assert view["compensated"] == ["c", "a"]
    assert "d" not in journal.calls("dia-halt")


def test_a_crash_in_a_parallel_superstep_resumes_with_each_effect_once(
    journal: Journal, url: str
) -> None:
    plan = Plan(crash=Crash("c", "execute", "after"))
    definition = diamond(journal, plan)
    saga_id = new_saga_id("dia-crash")
    with saga_app(definition, url) as app:
        with pytest.raises(SimulatedCrash):
            run_saga(app, {}, saga_id=saga_id)
        state = app.get_state(saga_config(saga_id))
        assert "c" in state.next
        view = resume_saga(rebuilt(app, definition), saga_id)
    assert view["status"] == "completed"
    assert sorted(view["completed"]) == ["a", "b", "c", "d"]
    assert journal.effects(saga_id) == {s: ("done", 1, 0) for s in "abcd"}
    calls = journal.calls(saga_id)
    assert calls.count("c") == 2  # the crashed step runs again; its keyed effect does not
    assert calls.count("a") == 1 and calls.count("d") == 1
    assert sorted(executed(view)) == ["a", "b", "c", "d"]


def test_three_leaves_complete_only_when_all_committed(journal: Journal) -> None:
    plan = Plan()

    def step(name: str, after: tuple[str, ...] | None = None) -> Step:
        return Step(ToyStep(name, journal, plan), after=after)

    definition = SagaDefinition(
        "fan", (step("a"), step("b", ("a",)), step("c", ("a",)), step("e", ("c",)))
    )
    with saga_app(definition) as app:
        view = run_saga(app, {}, saga_id="fan")
        assert view["status"] == "completed"
        plan.failing.add("e")
        failed = run_saga(app, {}, saga_id="fan-e")
    assert failed["status"] == "rolled_back"
    assert failed["compensated"] == ["e", "c", "b", "a"]


# --- definitions that cannot be built ----------------------------------------------------


def _toy(journal: Journal, *afters: tuple[str, ...] | None) -> SagaDefinition:
    plan = Plan()
    steps = tuple(
        Step(ToyStep(f"s{i}", journal, plan), after=after)
        for i, after in enumerate(afters, start=1)
    )
    return SagaDefinition("bad", steps)


@pytest.mark.parametrize(
    ("afters", "message"),
    [
        ((None, ("nope",)), "'nope' is not defined"),
        ((None, ("s3",), None), "'s3' is defined later"),
        ((None, ("s2",)), "a step cannot need itself"),
        ((None, ()), "only the first step may need no other step"),
        ((None, ("s1", "s1")), "names a step twice"),
        ((None, ["s1"]), "expected a tuple of step names"),
    ],
)
def test_bad_after_is_refused_in_one_line(
    journal: Journal, afters: tuple[Any, ...], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message) as error:
        _toy(journal, *afters)
    assert "\n" not in str(error.value)


def test_an_after_equal_to_the_default_is_still_a_chain(journal: Journal) -> None:
    assert _toy(journal, (), ("s1",), ("s2",)).is_chain
    assert not _toy(journal, None, ("s1",), ("s1",)).is_chain


def test_llm_router_and_choreography_refuse_parallel_steps(journal: Journal) -> None:
    definition = _toy(journal, None, ("s1",), ("s1",))
    with pytest.raises(ConfigurationError, match="need router='deterministic'"):
        build_saga_graph(definition, router="llm", router_model=object())
    with pytest.raises(ConfigurationError, match="need orchestration"):
        derive_choreography(definition)
