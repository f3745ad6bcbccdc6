"""What an operator types is redacted before it is stored (issue 38, item 5): a resolve
note, a rollback reason, a reject's why, a cancel's why. The service's operations are the
one place every surface (CLI, console, Python) goes through, so the test drives them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sagagraph import SagaService
from sagagraph.graph.definitions import Definitions
from sagagraph.graph.runner import saga_config
from tests.support.gated_saga import definition as gated
from tests.support.gated_saga import responder
from tests.support.openai_server import ScriptedOpenAIServer
from tests.support.toy_saga import Journal, toy_saga

SECRET = "sk-operator-typed-4f1c9a7e2b"


@pytest.fixture
def service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[SagaService, ScriptedOpenAIServer]]:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    journal = Journal(tmp_path / "journal.sqlite")
    with ScriptedOpenAIServer(responder) as server:
        definitions = Definitions(
            {
                "toy": lambda: toy_saga(3, journal),
                "gate": lambda: gated(tmp_path, server.base_url),
            }
        )
        db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
        bus = f"sqlite:///{tmp_path / 'events.sqlite'}"
        yield SagaService.from_urls(db, bus, definitions=definitions), server


def stored(service: SagaService, saga_id: str) -> str:
    return json.dumps(service.require(saga_id), default=str)


def test_a_resolve_note_is_stored_redacted(service: Any) -> None:
    sagas, _ = service
    view = sagas.run("toy", {"fail": "s3", "broken_undo": ["s2"]}, saga_id="parked")
    assert view["waiting_for_operator"]
    sagas.resolve("parked", "skip", note=f"ops: skipped with key {SECRET}")
    text = stored(sagas, "parked")
    assert SECRET not in text and "skipped with key ***" in text


def test_a_rollback_reason_and_who_are_stored_redacted(service: Any) -> None:
    sagas, _ = service
    graph = sagas.definitions.graph_of("toy", {})
    with sagas.store.checkpointer() as saver:
        app = graph.compile(checkpointer=saver)
        from sagagraph.graph.runner import initial_state

        app.update_state(saga_config("half"), initial_state("half", {}), as_node="__start__")
        for chunk in app.stream(None, saga_config("half"), stream_mode="updates"):
            if "s1" in chunk:
                break  # the process stops after one step
    view = sagas.rollback("half", reason=f"leaked {SECRET}", by=f"ops {SECRET}")
    assert view["status"] == "rolled_back"
    text = stored(sagas, "half")
    assert SECRET not in text and "leaked ***" in text


def test_a_reject_why_is_stored_redacted(service: Any) -> None:
    sagas, _ = service
    view = sagas.run("gate", {"traveller": "ada"}, saga_id="gated")
    assert view["status"] == "waiting_for_operator"
    done = sagas.reject("gated", f"over budget, key {SECRET}")
    assert done["status"] == "rolled_back"
    assert SECRET not in stored(sagas, "gated")
