"""A LangChain ``config`` reaches every run of a saga: callbacks, tags, metadata, run name.

A real callback handler (LangChain's ``BaseCallbackHandler``, as LangSmith's and Langfuse's
are) sees the saga's graph run and its step nodes, with the saga id in the metadata and tags.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableConfig

from sagagraph import (
    ConfigurationError,
    aresume_saga,
    arun_saga,
    open_async_checkpointer,
    resume_saga,
    run_saga,
    saga_status,
)
from sagagraph.graph.builder import build_saga_graph
from sagagraph.graph.runner import run_config
from tests.support.toy_saga import Journal, Plan, saga_app, toy_saga


class Recorder(BaseCallbackHandler):
    """Every chain start LangChain reports: its name, tags, metadata and parent."""

    def __init__(self) -> None:
        self.starts: list[dict[str, Any]] = []

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.starts.append(
            {
                "name": kwargs.get("name"),
                "root": parent_run_id is None,
                "tags": list(tags or []),
                "metadata": dict(metadata or {}),
            }
        )

    def root(self) -> dict[str, Any]:
        roots = [s for s in self.starts if s["root"]]
        assert len(roots) == 1, roots
        return roots[0]


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal.sqlite")


def test_run_saga_passes_callbacks_tags_metadata_and_run_name(journal: Journal) -> None:
    recorder = Recorder()
    config: RunnableConfig = {
        "callbacks": [recorder],
        "tags": ["nightly"],
        "metadata": {"team": "papers"},
        "run_name": "paper saga",
    }
    with saga_app(toy_saga(2, journal)) as app:
        view = run_saga(app, {}, saga_id="traced-1", config=config)
    assert view["status"] == "completed"
    root = recorder.root()
    assert root["name"] == "paper saga"
    assert {"nightly", "saga_id:traced-1"} <= set(root["tags"])
    assert root["metadata"]["saga_id"] == "traced-1"
    assert root["metadata"]["team"] == "papers"
    # The step nodes inherit them: a tracer can filter every run of a saga by its id.
    steps = [s for s in recorder.starts if s["name"] in ("s1", "s2")]
    assert {s["name"] for s in steps} == {"s1", "s2"}
    assert all(s["metadata"]["saga_id"] == "traced-1" for s in steps)
    assert all("saga_id:traced-1" in s["tags"] for s in steps)


def test_resume_saga_takes_a_config_too(journal: Journal) -> None:
    plan = Plan(failing={"s2"})
    recorder = Recorder()
    with saga_app(toy_saga(2, journal, plan)) as app:
        # Left unfinished: the saga's graph is interrupted before s2, then resumed.
        app.invoke(
            {"saga_id": "traced-2", "input": {}},
            run_config("traced-2"),
            interrupt_before=["s2"],
        )
        assert saga_status(app, "traced-2")["status"] == "running"
        plan.failing.clear()
        view = resume_saga(app, "traced-2", config={"callbacks": [recorder], "tags": ["again"]})
    assert view["status"] == "completed"
    root = recorder.root()
    assert {"again", "saga_id:traced-2"} <= set(root["tags"])
    assert root["metadata"]["saga_id"] == "traced-2"


def test_async_runners_take_a_config(journal: Journal, tmp_path: Path) -> None:
    recorder = Recorder()
    resumed = Recorder()

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
        async with open_async_checkpointer(url) as checkpointer:
            app = build_saga_graph(toy_saga(2, journal)).compile(checkpointer=checkpointer)
            view = await arun_saga(
                app, {}, saga_id="traced-3", config={"callbacks": [recorder], "run_name": "a"}
            )
            again = await aresume_saga(app, "traced-3", config={"callbacks": [resumed]})
            return view, again

    view, again = asyncio.run(main())
    assert view["status"] == again["status"] == "completed"
    assert recorder.root()["name"] == "a"
    assert recorder.root()["metadata"]["saga_id"] == "traced-3"
    assert resumed.starts == []  # a finished saga is not run again


def test_a_thread_id_naming_another_saga_is_refused(journal: Journal) -> None:
    refused = pytest.raises(ConfigurationError, match=r"config: configurable\.thread_id 'other'")
    with saga_app(toy_saga(1, journal)) as app, refused:
        run_saga(app, {}, saga_id="mine", config={"configurable": {"thread_id": "other"}})


def test_the_callers_recursion_limit_wins_and_the_saga_id_cannot_be_overridden() -> None:
    merged = run_config("s-1", {"recursion_limit": 40, "metadata": {"saga_id": "forged"}})
    assert merged["recursion_limit"] == 40
    assert merged["metadata"]["saga_id"] == "s-1"
    assert merged["configurable"]["thread_id"] == "s-1"
