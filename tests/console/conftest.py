"""Fixtures of the console's tests: sagas made by the real CLI, and the console's app over them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the console extra is not installed")

from starlette.testclient import TestClient

from sagagraph.console.app import create_app
from sagagraph.console.security import Guard
from sagagraph.console.source import SagaSource
from tests.support.console_sagas import Stores, make_dead_letter, make_orphan, make_sagas

HOST, PORT = "127.0.0.1", 8765
ORIGIN = f"http://{HOST}:{PORT}"


@pytest.fixture(scope="module")
def shown(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stores]:
    """Sagas only read by the tests that use them: done, undone, stuck, an orphan and a
    dead-lettered one."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SAGAGRAPH_LLM", "offline")
        patch.delenv("OPENAI_API_KEY", raising=False)
        stores = make_sagas(tmp_path_factory.mktemp("shown"))
        make_orphan(stores)
        make_dead_letter(stores)
        yield stores


@pytest.fixture
def acted_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Stores:
    """Fresh sagas for a test that acts on them: done, undone, stuck, stuck2 and an orphan."""
    monkeypatch.setenv("SAGAGRAPH_LLM", "offline")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    stores = make_sagas(tmp_path, stuck=("stuck", "stuck2"))
    make_orphan(stores)
    return stores


def console(stores: Stores, guard: Guard | None = None) -> TestClient:
    """A client of the console over ``stores``, as a browser on this machine reaches it."""
    guard = guard or Guard(HOST, PORT)
    app = create_app(SagaSource.from_urls(stores.db, stores.bus), guard)
    return TestClient(app, base_url=ORIGIN, follow_redirects=False, client=(HOST, 50000))


def csrf_of(page: str) -> str:
    found = re.search(r'<meta name="csrf" content="([^"]+)">', page)
    assert found, "no CSRF token in the page"
    return found.group(1)


def post(client: TestClient, saga_id: str, action: str, **form: str) -> Any:
    """The action's form sent from the saga's page, as a browser sends it."""
    data = {"csrf": csrf_of(client.get(f"/sagas/{saga_id}").text)} | form
    return client.post(f"/sagas/{saga_id}/actions/{action}", data=data, headers={"Origin": ORIGIN})


def view(stores: Stores, saga_id: str) -> dict[str, Any]:
    found = SagaSource.from_urls(stores.db, stores.bus).view(saga_id)
    assert found is not None
    return found
