"""LangGraph's checkpointer conformance suite, against every saver sagagraph opens.

``langgraph-checkpoint-conformance`` drives a saver through its async methods. The async
savers (``open_async_checkpointer``) run it as they are; the sync ones (``open_checkpointer``)
through :class:`SyncAsAsync`, which answers each async method with the saver's own sync
method, so the sync code paths are the ones tested. Every capability the saver has must
pass: the base ones (put, put_writes, get_tuple, list, delete_thread) and, on PostgreSQL and
the group-commit savers (``sqlite+group:///``, ``postgresql+group://``), ``prune``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import CapabilityReport

from sagagraph.checkpoints.async_factory import open_async_checkpointer
from sagagraph.checkpoints.factory import open_checkpointer
from tests.support.services import fresh_postgres_database

BASE = {"put", "put_writes", "get_tuple", "list", "delete_thread"}


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A database of this module's own: the suite's threads are not sagas, and the session's
    shared database is scanned by other tests' recoveries."""
    with fresh_postgres_database() as url:
        yield url


class SyncAsAsync(BaseCheckpointSaver[Any]):
    """A sync saver seen through the async methods the conformance suite calls."""

    def __init__(self, inner: BaseCheckpointSaver[Any]) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.inner.get_next_version(current, channel)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.inner.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for item in self.inner.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self.inner.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.inner.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)


class SyncPrunableAsAsync(SyncAsAsync):
    """:class:`SyncAsAsync` of a saver that prunes (PostgreSQL)."""

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.inner.prune(thread_ids, strategy=strategy)  # type: ignore[attr-defined]


def conformance(name: str, url: Callable[[], str], *, sync: bool) -> CapabilityReport:
    """Run the whole suite on the savers ``url()`` opens (a fresh one per capability)."""

    async def factory() -> AsyncGenerator[BaseCheckpointSaver[Any], None]:
        if sync:
            with open_checkpointer(url()) as saver:
                prunes = type(saver).prune is not BaseCheckpointSaver.prune
                wrapper = SyncPrunableAsAsync if prunes else SyncAsAsync
                yield wrapper(saver)
        else:
            async with open_async_checkpointer(url()) as saver:
                yield saver

    registered = checkpointer_test(name=name)(factory)
    return asyncio.run(validate(registered))


def check(report: CapabilityReport, expected: set[str]) -> None:
    failures = {
        cap: result.failures
        for cap, result in report.results.items()
        if result.detected and result.passed is not True
    }
    assert not failures, failures
    passed = {cap for cap, result in report.results.items() if result.passed}
    assert expected <= passed, sorted(expected - passed)
    assert report.passed_all_base()


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
def test_the_sqlite_savers_pass_langgraphs_conformance_suite(tmp_path: Path, sync: bool) -> None:
    def url() -> str:
        return f"sqlite:///{tmp_path / f'{uuid.uuid4().hex}.sqlite'}"

    check(conformance(f"sagagraph-sqlite-{sync}", url, sync=sync), BASE)


@pytest.mark.postgres
@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
def test_the_postgres_savers_pass_langgraphs_conformance_suite(
    postgres_url: str, sync: bool
) -> None:
    check(
        conformance(f"sagagraph-postgres-{sync}", lambda: postgres_url, sync=sync),
        BASE | {"prune"},
    )


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
def test_the_group_commit_saver_passes_langgraphs_conformance_suite(
    tmp_path: Path, sync: bool
) -> None:
    def url() -> str:
        return f"sqlite+group:///{tmp_path / f'{uuid.uuid4().hex}.sqlite'}"

    check(conformance(f"sagagraph-sqlite-group-{sync}", url, sync=sync), BASE | {"prune"})


@pytest.mark.postgres
@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
def test_the_postgres_group_commit_saver_passes_langgraphs_conformance_suite(
    postgres_url: str, sync: bool
) -> None:
    url = postgres_url.replace("postgresql://", "postgresql+group://", 1)
    check(
        conformance(f"sagagraph-postgres-group-{sync}", lambda: url, sync=sync),
        BASE | {"prune"},
    )
