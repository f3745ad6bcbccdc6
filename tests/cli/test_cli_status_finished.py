"""``sagagraph status`` of a finished saga, read through the saver, says how it ended.

For every way the paper saga ends (completed, halted, rolled back; chain, parallel,
blackboard), on SQLite and PostgreSQL, ``status`` exits with the saga's own code.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from sagagraph.cli import main

PAPERS = Path(__file__).resolve().parents[2] / "examples" / "papers"
COMPLETE = PAPERS / "complete_paper.md"
INCOMPLETE = PAPERS / "incomplete_paper.md"

ENDINGS = {
    "done": (COMPLETE, ()),
    "halted": (INCOMPLETE, ()),
    "undone": (COMPLETE, ("--fail-at", "summarizer")),
    "par-done": (COMPLETE, ("--parallel",)),
    "par-undone": (COMPLETE, ("--parallel", "--fail-at", "reviewer")),
    "bb-done": (COMPLETE, ("--mode", "blackboard")),
    "bb-undone": (COMPLETE, ("--mode", "blackboard", "--fail-at", "summarizer")),
}
"""Saga suffix -> the paper and the flags ``run`` gets."""


pytestmark = pytest.mark.usefixtures("offline_cli")


def status(
    capsys: pytest.CaptureFixture[str], db: str, saga_id: str, *flags: str
) -> tuple[int, str, str]:
    code = main(["status", saga_id, "--db", db, *flags])
    out, err = capsys.readouterr()
    return code, out, err


def test_status_of_a_finished_saga_says_how_it_ended(
    durable_checkpointer_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = durable_checkpointer_url
    prefix = f"st{uuid.uuid4().hex[:8]}"
    for suffix, (paper, flags) in ENDINGS.items():
        main(["run", str(paper), "--saga-id", f"{prefix}-{suffix}", "--db", db, *flags])
    capsys.readouterr()
    views = {}
    for suffix in ENDINGS:
        saga_id = f"{prefix}-{suffix}"
        views[suffix] = (status(capsys, db, saga_id), status(capsys, db, saga_id, "--json"))
    assert {s: text[0] for s, (text, _) in views.items()} == {
        "done": 0,
        "halted": 5,
        "undone": 3,
        "par-done": 0,
        "par-undone": 3,
        "bb-done": 0,
        "bb-undone": 3,
    }
    assert '"board"' in views["bb-done"][1][1]


def test_status_of_a_saga_not_in_the_checkpointer_still_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    assert main(["run", str(COMPLETE), "--saga-id", "one", "--db", db]) == 0
    capsys.readouterr()
    code, out, err = status(capsys, db, "other")
    assert (code, out) == (2, "")
    expected = f"sagagraph: error: saga 'other': not found in {db} (checkpointer)"
    assert err.strip().startswith(expected)
