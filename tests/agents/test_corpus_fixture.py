"""Without the shared corpus the corpus tests skip with the reason; under ``CI=true`` they fail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Reads the shared corpus of real PDFs (../shared/corpus): not part of `make check`.
pytestmark = pytest.mark.corpus

ROOT = Path(__file__).resolve().parents[2]
CORPUS_TESTS = "tests/agents/test_corpus.py"
"""Tests that read the corpus, run in a child pytest."""


def run_probe(tmp_path: Path, *, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env |= {"SAGAGRAPH_CORPUS": str(tmp_path / "missing"), "PYTHONPATH": str(ROOT)}
    env["SAGAGRAPH_CORPUS_NEXT"] = str(tmp_path / "missing-next")
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-q", "-x", CORPUS_TESTS],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("ci", [False, True], ids=["outside-ci", "ci"])
def test_a_missing_corpus_skips_outside_ci_and_fails_under_ci(tmp_path: Path, ci: bool) -> None:
    result = run_probe(tmp_path, ci=ci)
    out = result.stdout
    assert "labels.json not found" in out, out
    if ci:
        assert result.returncode == 1 and "error" in out and "skipped" not in out, out
    else:
        assert result.returncode == 0 and "skipped" in out and "error" not in out, out
