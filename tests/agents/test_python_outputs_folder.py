"""A saga started from Python records its outputs folder, absolute, and recover writes there.

Issue 28 item 6: ``paper_saga_definition(outputs_dir="out")`` from folder A, killed after its
first step (a real process), then ``sagagraph recover`` from folder B: every file of the saga
lands in ``A/out/ID/``, none in B.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.python_outputs_worker import KILLED_EXIT_CODE

REPO = Path(__file__).resolve().parents[2]
SAGAGRAPH = Path(sys.executable).parent / "sagagraph"


def test_recover_from_another_folder_writes_where_a_python_saga_started(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    env |= {"PYTHONPATH": str(REPO)}
    here, there = tmp_path / "a", tmp_path / "b"
    here.mkdir()
    there.mkdir()
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    started = subprocess.run(
        [sys.executable, "-m", "tests.support.python_outputs_worker", url, "py1"],
        cwd=here, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert started.returncode == KILLED_EXIT_CODE, started.stderr
    assert sorted(p.name for p in (here / "out" / "py1").iterdir()) == ["validation.txt"]

    recover = subprocess.run(
        [str(SAGAGRAPH), "recover", "--db", url, "--json"],
        cwd=there, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert recover.returncode == 0, recover.stderr
    assert sorted(p.name for p in (here / "out" / "py1").iterdir()) == [
        "review.txt",
        "summary.txt",
        "validation.txt",
    ]
    assert not (there / "outputs").exists(), sorted(str(p) for p in there.rglob("*"))


def test_a_python_saga_killed_in_its_first_step_keeps_its_outputs_folder(tmp_path: Path) -> None:
    """Issue 38 item 7: killed (SIGKILL) inside the validator, before any checkpoint after
    it, then recovered from another folder: the folder was recorded with the saga's input,
    in the first checkpoint, so every file lands in ``A/out/ID/`` and none in B."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    env |= {"PYTHONPATH": str(REPO)}
    here, there = tmp_path / "a", tmp_path / "b"
    here.mkdir()
    there.mkdir()
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    started = subprocess.run(
        [sys.executable, "-m", "tests.support.python_outputs_worker", url, "py2", "in-validator"],
        cwd=here, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert started.returncode == -9, started.stderr
    assert sorted(p.name for p in (here / "out" / "py2").iterdir()) == ["validation.txt"]

    recover = subprocess.run(
        [str(SAGAGRAPH), "recover", "--db", url, "--json"],
        cwd=there, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert recover.returncode == 0, recover.stderr
    assert sorted(p.name for p in (here / "out" / "py2").iterdir()) == [
        "review.txt",
        "summary.txt",
        "validation.txt",
    ]
    assert not (there / "outputs").exists(), sorted(str(p) for p in there.rglob("*"))
