"""``recover`` carries every saga it can, even when one of them cannot be built with the flags
given now: that saga gets its one-line error, the others are recovered.

The shared-database case CI met: two orphaned sagas recorded different outputs folders, and
``recover --outputs`` names one of them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from sagagraph.cli import main
from tests.support.console_sagas import Stores, make_orphan


def test_one_saga_whose_folder_differs_does_not_stop_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    here = Stores(
        f"sqlite:///{tmp_path / 'sagas.sqlite'}",
        f"sqlite:///{tmp_path / 'events.sqlite'}",
        tmp_path / "here",
    )
    elsewhere = replace(here, outputs=tmp_path / "elsewhere")
    make_orphan(here, "ours")
    make_orphan(elsewhere, "theirs")
    capsys.readouterr()

    code = main(["recover", "--db", here.db, "--bus", here.bus, "--outputs", str(here.outputs)])
    captured = capsys.readouterr()

    assert code == 75, captured.err  # one saga is still not final: ask again later
    errors = [line for line in captured.err.splitlines() if line.startswith("sagagraph: error")]
    assert len(errors) == 1 and "theirs" in errors[0] and "elsewhere" in errors[0], captured.err
    assert "saga ours: completed" in captured.out
    assert sorted(p.name for p in (here.outputs / "ours").iterdir()) == [
        "review.txt",
        "summary.txt",
        "validation.txt",
    ]
