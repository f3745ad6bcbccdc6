"""Fixtures of the worker tests: a queue of the test's own (deleted after it), the flags every
command takes, and the paper saga on the shared checkpointer to read sagas back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.paper_apps import paper_app
from tests.support.queue_support import delete_queue, unique_queue


@pytest.fixture
def queue(amqp_url: str) -> Iterator[str]:
    url = unique_queue(amqp_url)
    yield url
    delete_queue(url)


@pytest.fixture
def env(
    tmp_path: Path, postgres_url: str, queue: str, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """Flags of every command: this test's queue, the session's database, offline engine."""
    monkeypatch.chdir(tmp_path)
    outputs = tmp_path / "outputs"
    flags = ["--db", postgres_url, "--queue", queue, "--outputs", str(outputs), "--llm", "offline"]
    return {"flags": flags, "db": postgres_url, "queue": queue, "outputs": outputs}


@pytest.fixture
def readers(postgres_url: str) -> Iterator[Any]:
    """The paper saga on the shared checkpointer, to read views and history."""
    with paper_app(postgres_url, llm="offline") as app:
        yield app
