"""``pip install -e ".[notebooks]"`` gives what the README promises: ``jupyter lab`` and
``jupyter nbconvert --execute``."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def extra(name: str) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = project["optional-dependencies"][name]
    return {re.split(r"[<>=!~\[ ;]", spec, maxsplit=1)[0].lower() for spec in specs}


def test_the_notebooks_extra_names_jupyterlab_and_nbconvert() -> None:
    assert {"jupyterlab", "nbconvert", "ipykernel"} <= extra("notebooks")


@pytest.mark.parametrize("command", ["lab", "nbconvert"])
def test_the_jupyter_commands_the_readme_uses_exist(command: str) -> None:
    # The jupyter of the environment running the tests, where the dev extra installed them.
    jupyter = Path(sys.executable).with_name("jupyter")
    result = subprocess.run(
        [str(jupyter), command, "--version"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?\S*", result.stdout.strip()), result.stdout
