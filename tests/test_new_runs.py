"""A new run is refused a used saga id by the saver's own read: one read of the thread a saga.

run_saga and arun_saga used to read the thread themselves, then LangGraph's loop read it again.
sagagraph's savers now check the loop's first read of a run that starts a saga
(sagagraph.checkpoints.new_runs): the id is refused as before, nothing is written to the
saga already there, and a new saga's thread is read once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langgraph.checkpoint.base import CheckpointTuple

from sagagraph import (
    InputError,
    SagaDefinition,
    StepResult,
    arun_saga,
    build_saga_graph,
    open_async_checkpointer,
    open_checkpointer,
    participant,
    run_saga,
    saga_status,
)
from sagagraph.checkpoints.new_runs import NEW_RUN, refuse_used_thread


def _saga() -> SagaDefinition:
    return SagaDefinition.of(
        "twice",
        [
            participant("a", lambda ctx: StepResult(data={"n": 1}), lambda ctx, result: None),
            participant("b", lambda ctx: StepResult(data={"n": 2}), lambda ctx, result: None),
        ],
    )


@contextmanager
def _counted_reads(saver: Any, name: str) -> Iterator[list[dict[str, Any]]]:
    """Every ``name`` (get_tuple or aget_tuple) call's configurable, in order."""
    reads: list[dict[str, Any]] = []
    read = getattr(saver, name)
    if name == "get_tuple":

        def counted(config: Any) -> Any:
            reads.append(dict(config["configurable"]))
            return read(config)
    else:

        async def counted(config: Any) -> Any:  # type: ignore[misc]
            reads.append(dict(config["configurable"]))
            return await read(config)

    setattr(saver, name, counted)
    try:
        yield reads
    finally:
        delattr(saver, name)


def _thread_reads(reads: list[dict[str, Any]], saga_id: str) -> int:
    return sum(1 for r in reads if r.get("thread_id") == saga_id and not r.get("checkpoint_ns"))


def test_a_used_id_is_refused_and_a_new_saga_reads_its_thread_once(
    durable_checkpointer_url: str,
) -> None:
    with open_checkpointer(durable_checkpointer_url) as saver:
        app = build_saga_graph(_saga()).compile(checkpointer=saver)
        with _counted_reads(saver, "get_tuple") as reads:
            first = run_saga(app, {}, saga_id="new-runs-1")
        assert first["status"] == "completed"
        assert _thread_reads(reads, "new-runs-1") == 1
        before = list(saver.list({"configurable": {"thread_id": "new-runs-1"}}))
        with pytest.raises(InputError, match="'new-runs-1': already exists; use resume"):
            run_saga(app, {"other": "input"}, saga_id="new-runs-1")
        after = list(saver.list({"configurable": {"thread_id": "new-runs-1"}}))
        assert [c.config for c in after] == [c.config for c in before]
        assert saga_status(app, "new-runs-1") == first


def test_the_async_savers_refuse_a_used_id_in_the_runs_own_read(
    durable_checkpointer_url: str,
) -> None:
    async def scenario() -> tuple[dict[str, Any], int, int, int]:
        async with open_async_checkpointer(durable_checkpointer_url) as saver:
            app = build_saga_graph(_saga()).compile(checkpointer=saver)
            with _counted_reads(saver, "aget_tuple") as reads:
                first = await arun_saga(app, {}, saga_id="new-runs-2")
            before = len(
                [c async for c in saver.alist({"configurable": {"thread_id": "new-runs-2"}})]
            )
            with pytest.raises(InputError, match="'new-runs-2': already exists"):
                await arun_saga(app, {}, saga_id="new-runs-2")
            after = len(
                [c async for c in saver.alist({"configurable": {"thread_id": "new-runs-2"}})]
            )
            return first, _thread_reads(reads, "new-runs-2"), before, after

    first, thread_reads, before, after = asyncio.run(scenario())
    assert first["status"] == "completed"
    assert thread_reads == 1
    assert after == before


def _saved(values: dict[str, Any]) -> CheckpointTuple:
    checkpoint: Any = {"channel_values": values}
    return CheckpointTuple(config={"configurable": {}}, checkpoint=checkpoint, metadata={})  # type: ignore[typeddict-item]


def test_only_a_new_runs_first_read_of_a_used_thread_is_refused() -> None:
    new = {"configurable": {"thread_id": "t", NEW_RUN: True}}
    with pytest.raises(InputError, match="'t': already exists"):
        refuse_used_thread(new, _saved({"saga_id": "t"}))  # type: ignore[arg-type]
    refuse_used_thread(new, None)  # type: ignore[arg-type]  # a new thread
    refuse_used_thread(new, _saved({}))  # type: ignore[arg-type]  # nothing written yet
    # Not a new run (resume, status), or a read from inside a node (a checkpoint, a namespace).
    refuse_used_thread({"configurable": {"thread_id": "t"}}, _saved({"saga_id": "t"}))
    for inside in ({"checkpoint_id": "1"}, {"checkpoint_ns": "a:1"}):
        config = {"configurable": {**new["configurable"], **inside}}
        refuse_used_thread(config, _saved({"saga_id": "t"}))  # type: ignore[arg-type]
