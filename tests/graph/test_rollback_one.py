"""``rollback_saga``: one unfinished saga compensated, with who and why in its events; the
others left as they are. On SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sagagraph import InputError, SagaNotFoundError, rollback_saga, run_saga, saga_status
from sagagraph.graph.runner import run_config
from tests.support.toy_saga import Journal, saga_app, toy_saga


def stopped_before(app: Any, saga_id: str, step: str) -> None:
    """A saga whose process stopped before ``step``: the steps before it committed."""
    app.invoke({"saga_id": saga_id, "input": {}}, run_config(saga_id), interrupt_before=[step])
    assert saga_status(app, saga_id)["status"] == "running"


def test_rollback_compensates_one_saga_and_records_who_and_why(
    durable_checkpointer_url: str, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    with saga_app(toy_saga(3, journal), durable_checkpointer_url) as app:
        stopped_before(app, "one", "s3")
        stopped_before(app, "other", "s3")

        view = rollback_saga(app, "one", reason="wrong paper uploaded", by="alice")

        assert view["status"] == "rolled_back"
        # s3 was next (in flight, maybe half done): compensated first, then s2 and s1.
        assert view["compensated"] == ["s3", "s2", "s1"]
        assert "wrong paper uploaded" in view["reason"]
        (asked,) = [e for e in view["events"] if e["outcome"] == "rollback"]
        assert asked["by"] == "alice"
        assert asked["detail"] == "alice: wrong paper uploaded"
        # The other saga is untouched: still unfinished, its effects still there.
        other = saga_status(app, "other")
        assert (other["status"], other["completed"], other["compensated"]) == (
            "running",
            ["s1", "s2"],
            [],
        )

    def standing(saga_id: str) -> dict[str, int]:
        """Each step's effect still in place (applied minus undone)."""
        effects = journal.effects(saga_id).items()
        return {step: applied - undone for step, (_, applied, undone) in effects if applied}

    assert standing("one") == {"s1": 0, "s2": 0}
    assert standing("other") == {"s1": 1, "s2": 1}


def test_rollback_refuses_a_finished_or_unknown_saga(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    with saga_app(toy_saga(2, journal), f"sqlite:///{tmp_path / 's.sqlite'}") as app:
        run_saga(app, {}, saga_id="done")
        with pytest.raises(InputError, match="already completed; nothing to roll back"):
            rollback_saga(app, "done", by="bob")
        with pytest.raises(SagaNotFoundError):
            rollback_saga(app, "nobody")
        assert saga_status(app, "done")["status"] == "completed"


def test_without_by_the_event_names_nobody(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    with saga_app(toy_saga(2, journal)) as app:
        stopped_before(app, "anon", "s2")
        view = rollback_saga(app, "anon", reason="  ")
    (asked,) = [e for e in view["events"] if e["outcome"] == "rollback"]
    assert "by" not in asked
    assert asked["detail"] == "rollback requested by an operator"
