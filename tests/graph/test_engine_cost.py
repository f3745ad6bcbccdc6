"""The engine's own work per saga, counted in calls (not timed: this machine is shared).

Issue 39 item 3: sagagraph's CPU per saga on memory, beside plain LangGraph's. What the
engine adds around LangGraph's loop is bounded here by what it calls, so a cut stays cut:
the environment's secrets are not read again for every text redacted, and no runtime
protocol check runs per saga.
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats

import pytest

from bench.fake_saga import PAPER_INPUT, fake_agents, fake_definition
from sagagraph import arun_saga, build_saga_graph, open_async_checkpointer, run_saga
from sagagraph.redaction import SECRET_ENV_VARS, URL_ENV_VARS
from tests.support.toy_saga import saga_app

SAGAS = 20


def _calls_per_saga(fail_at: str | None) -> dict[tuple[str, str], float]:
    """Calls a saga makes, by (file, function), over ``SAGAS`` sagas after a warm one."""
    with saga_app(fake_definition(fake_agents())) as app:
        run_saga(app, PAPER_INPUT, saga_id="warm", fail_at=fail_at)
        profile = cProfile.Profile()
        profile.enable()
        for i in range(SAGAS):
            run_saga(app, PAPER_INPUT, saga_id=f"s{i}", fail_at=fail_at)
        profile.disable()
    calls: dict[tuple[str, str], float] = {}
    for (file, _, name), row in pstats.Stats(profile).stats.items():  # type: ignore[attr-defined]
        calls[(file, name)] = calls.get((file, name), 0) + row[1] / SAGAS
    return calls


@pytest.mark.parametrize("fail_at", [None, "summarizer"], ids=["success", "failure"])
def test_a_saga_reads_the_environment_less_than_one_redaction_used_to(
    fail_at: str | None,
) -> None:
    calls = _calls_per_saga(fail_at)
    environ_reads = sum(
        n for (file, name), n in calls.items() if name == "__getitem__" and file.endswith("os>")
    )
    # One look at the watched variables through os.environ reads each of them.
    assert environ_reads < len(SECRET_ENV_VARS) + len(URL_ENV_VARS)


@pytest.mark.parametrize("fail_at", [None, "summarizer"], ids=["success", "failure"])
def test_a_saga_makes_no_runtime_protocol_check(fail_at: str | None) -> None:
    calls = _calls_per_saga(fail_at)
    checks = sum(
        n
        for (file, name), n in calls.items()
        if name == "__instancecheck__" and file.endswith("typing.py")
    )
    assert checks == 0


def test_an_async_saga_without_an_input_check_starts_without_a_thread_hop() -> None:
    """``arun_saga`` runs a definition's ``check_input`` on a thread (reading a PDF must not
    stop the event loop); a definition without one has nothing to run there."""

    async def run_all() -> pstats.Stats:
        async with open_async_checkpointer("memory://") as saver:
            app = build_saga_graph(fake_definition(fake_agents())).compile(checkpointer=saver)
            await arun_saga(app, PAPER_INPUT, saga_id="warm")
            profile = cProfile.Profile()
            profile.enable()
            for i in range(SAGAS):
                await arun_saga(app, PAPER_INPUT, saga_id=f"s{i}")
            profile.disable()
        return pstats.Stats(profile)

    stats = asyncio.run(run_all())
    hops = sum(
        row[1]
        for (_, _, name), row in stats.stats.items()  # type: ignore[attr-defined]
        if name == "run_in_step_thread"
    )
    assert hops == 0
