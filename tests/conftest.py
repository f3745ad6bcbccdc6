"""Shared fixtures: checkpointer URLs over every backend, local services, the PDF corpus; the
markers that split the fast loop (`make check`) from the full gate (`make test`)."""

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
    postgres_backend_url,
    refuse_unmarked,
    require_rabbitmq,
    unavailable,
)

# A test that takes one of these fixtures, or is parametrised with one of these values, needs
# that service (or the shared corpus of real PDFs, ../shared/corpus): it is marked so, whatever
# file it lives in, and `make check` leaves it out.
SERVICE_FIXTURES = {
    "postgres_url": "postgres",
    "amqp_url": "rabbitmq",
    "corpus": "corpus",
    "corpus_next": "corpus",
    "corpus_labels": "corpus",
}
SERVICE_PARAMS = {
    "postgres": "postgres",
    "postgres+group": "postgres",
    "rabbitmq": "rabbitmq",
    "amqp": "rabbitmq",
}


def service_markers(item: pytest.Item) -> set[str]:
    """The services ``item`` reaches, read from its fixtures and its parameters."""
    needed = {mark for name, mark in SERVICE_FIXTURES.items() if name in item.fixturenames}  # type: ignore[attr-defined]
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        for value in callspec.params.values():
            if isinstance(value, str) and value in SERVICE_PARAMS:
                needed.add(SERVICE_PARAMS[value])
    return needed


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test by the services it needs, so `-m "not postgres"` and the like select
    by what a test uses rather than by a list of files."""
    for item in items:
        for mark in sorted(service_markers(item)):
            item.add_marker(getattr(pytest.mark, mark))
        if item.get_closest_marker("serial"):
            # Under pytest-xdist (`--dist loadgroup`) every such test runs on one worker.
            item.add_marker(pytest.mark.xdist_group("serial"))


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a fresh PostgreSQL database for this test session."""
    with fresh_postgres_database() as url:
        yield url


@pytest.fixture
def amqp_url() -> str:
    return require_rabbitmq()


@pytest.fixture(params=["memory", "sqlite", "sqlite+group", "postgres", "postgres+group"])
def checkpointer_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A checkpointer URL for each backend: memory, a fresh SQLite file (LangGraph's saver,
    or the group-commit saver), PostgreSQL (either saver)."""
    if request.param == "memory":
        return "memory://"
    if request.param.startswith("sqlite"):
        return f"{request.param}:///{tmp_path / 'sagas.sqlite'}"
    return postgres_backend_url(request.param, request.getfixturevalue("postgres_url"))


@pytest.fixture(params=["sqlite", "sqlite+group", "postgres", "postgres+group"])
def durable_checkpointer_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A checkpointer URL that survives the process: SQLite file or PostgreSQL (either
    saver)."""
    if request.param.startswith("sqlite"):
        return f"{request.param}:///{tmp_path / 'sagas.sqlite'}"
    return postgres_backend_url(request.param, request.getfixturevalue("postgres_url"))


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The shared corpus of real PDFs (read in place, never copied)."""
    refuse_unmarked("the shared corpus", "corpus")
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
