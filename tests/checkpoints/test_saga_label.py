"""The saga summary keeps the label the definition chooses, never a field of the paper app."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from sagagraph import build_saga_graph, open_checkpointer, run_saga, saga_config
from sagagraph.checkpoints import saga_index as m
from sagagraph.checkpoints.saga_index import latest_checkpoints
from tests.support.toy_saga import Journal, toy_saga


def _labels(tmp_path: Path, label: object) -> tuple[object, dict[str, object]]:
    definition = toy_saga(2, Journal(tmp_path / "journal.sqlite"))
    if label is not None:
        definition = replace(definition, label=label)
    with open_checkpointer(f"sqlite:///{tmp_path / 'sagas.sqlite'}") as saver:
        app = build_saga_graph(definition).compile(checkpointer=saver)
        run_saga(app, {"paper": "p.pdf", "order": "A-17"}, saga_id="s1")
        stored = app.get_state(saga_config("s1")).values.get("label")
        summaries = {s.saga_id: s.summary.get(m.LABEL) for s in latest_checkpoints(saver)}
    return stored, summaries


def test_the_definitions_label_is_stored_and_summarized(tmp_path: Path) -> None:
    stored, summaries = _labels(tmp_path, lambda saga_input: f"order {saga_input['order']}")
    assert stored == "order A-17"
    assert summaries == {"s1": "order A-17"}


def test_a_definition_without_a_label_stores_none_not_the_papers_path(tmp_path: Path) -> None:
    stored, summaries = _labels(tmp_path, None)
    assert stored is None
    assert summaries == {"s1": None}
