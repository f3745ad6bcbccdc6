"""Shared fixtures: checkpointer URLs over every backend, local services, the PDF corpus."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.corpus import require_corpus
from tests.support.services import (
    CORPUS,
    CORPUS_NEXT,
    fresh_postgres_database,
    require_rabbitmq,
    unavailable,
)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a fresh PostgreSQL database for this test session."""
    with fresh_postgres_database() as url:
        yield url


@pytest.fixture
def amqp_url() -> str:
    return require_rabbitmq()


@pytest.fixture(params=["memory", "sqlite", "sqlite+group", "postgres"])
def checkpointer_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A checkpointer URL for each backend: memory, a fresh SQLite file (LangGraph's saver,
    or the group-commit saver), PostgreSQL."""
    if request.param == "memory":
        return "memory://"
    if request.param.startswith("sqlite"):
        return f"{request.param}:///{tmp_path / 'sagas.sqlite'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture(params=["sqlite", "sqlite+group", "postgres"])
def durable_checkpointer_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A checkpointer URL that survives the process: SQLite file (either saver) or PostgreSQL."""
    if request.param.startswith("sqlite"):
        return f"{request.param}:///{tmp_path / 'sagas.sqlite'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The shared corpus of real PDFs (read in place, never copied)."""
    if not (CORPUS / "labels.json").exists():
        # A fresh clone has no ../shared beside it: skip there, as the service fixtures do,
        # and fail under CI=true, where the corpus must be present.
        unavailable(f"corpus at {CORPUS}", "labels.json not found (set SAGAGRAPH_CORPUS)")
    return CORPUS


@pytest.fixture(scope="session")
def corpus_next() -> Path:
    """The second folder of real PDFs, ``../shared/corpus-next`` (hard kinds), read in place."""
    return require_corpus(CORPUS_NEXT)


@pytest.fixture(scope="session")
def corpus_labels(corpus: Path) -> dict[str, str]:
    labels: dict[str, str] = json.loads((corpus / "labels.json").read_text())
    labels.pop("_about", None)
    return labels


@pytest.fixture
def offline_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The CLI as a new user runs it: offline engine, no database, bus or key in the
    environment, in an empty working folder."""
    for name in ("SAGAGRAPH_DB", "SAGAGRAPH_BUS", "SAGAGRAPH_AMQP_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SAGAGRAPH_LLM", "offline")
    monkeypatch.chdir(tmp_path)
