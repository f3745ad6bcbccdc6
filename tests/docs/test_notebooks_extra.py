"""``make extra EXTRA=notebooks`` gives what the README promises: ``jupyter lab`` and
``jupyter nbconvert --execute``, whose executed copy does not land among the notebooks."""

from __future__ import annotations

import os
import re
import shlex
import shutil
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


@pytest.mark.slow
def test_the_readme_nbconvert_command_leaves_the_notebooks_folder_as_it_was(
    tmp_path: Path,
) -> None:
    readme = (ROOT / "README.md").read_text()
    found = re.search(r"`(jupyter nbconvert [^`]*)`", readme)
    assert found, "the README gives no nbconvert command"
    command = shlex.split(" ".join(found.group(1).split()))
    (notebook,) = [arg for arg in command if arg.endswith(".ipynb")]
    # A checkout of its own, as far as the notebook looks (it finds examples/ from its folder).
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / notebook, tmp_path / notebook)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    jupyter = Path(sys.executable).with_name("jupyter")
    env = {"PYTHONPATH": str(ROOT), "SAGAGRAPH_LLM": "offline", "PATH": str(jupyter.parent)}
    done = subprocess.run(
        [str(jupyter), *command[1:]],
        cwd=tmp_path,
        env=env | {k: v for k, v in os.environ.items() if k in ("HOME", "LANG")},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "notebooks").iterdir()) == [Path(notebook).name]
    assert "*.nbconvert.ipynb" in (ROOT / ".gitignore").read_text().split()
