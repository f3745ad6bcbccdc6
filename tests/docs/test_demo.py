"""``make demo``: light (the package and its runtime dependencies, no dev extra), and it runs
the shipped real paper, whose licence ships beside it.

The install itself is measured by hand on a fresh clone (it downloads packages); here the
Makefile's recipe is read, and the demo runs with every optional and dev-only package made
unimportable, as in the light install.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "examples" / "papers" / "wheat_heat_stress_plos_one_2018.pdf"
OPTIONAL = (
    "psycopg",
    "psycopg_pool",
    "langgraph.checkpoint.postgres",
    "aio_pika",
    "aiormq",
    "langchain",
    "langgraph_api",
    "jupyterlab",
    "nbconvert",
    "nbclient",
    "nbformat",
    "ipykernel",
    "matplotlib",
    "pytest",
    "hypothesis",
    "mypy",
)
"""Top-level (or dotted) modules of the extras: none is installed by ``make demo``."""

WITHOUT_EXTRAS = f"""
import importlib.abc, runpy, sys

class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == m or name.startswith(m + ".") for m in {OPTIONAL!r}):
            raise ModuleNotFoundError(f"No module named {{name!r}} (not in make demo)", name=name)
        return None

sys.meta_path.insert(0, Absent())
runpy.run_module("examples.demo", run_name="__main__", alter_sys=True)
"""


def recipe(makefile: str, target: str) -> str:
    """The commands of ``target`` in the Makefile (tab-indented lines after its rule)."""
    found = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert found, f"no rule for {target}"
    return found.group(1)


def test_make_demo_installs_the_package_alone_and_make_test_the_dev_extra() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^demo: \$\(DEMO_STAMP\)$", makefile, re.M)
    light = recipe(makefile, "$(DEMO_STAMP)")
    assert "$(DEMO_INSTALL)" in light and "[" not in light
    (install,) = re.findall(r"^DEMO_INSTALL := (.*)$", makefile, re.M)
    assert install.startswith("install ") and install.endswith(" -e .")
    full = recipe(makefile, "$(STAMP)")
    assert '-e ".[dev]"' in full
    for target in ("lint", "typecheck", "imports", "pytest"):
        assert re.search(rf"^{target}: \$\(STAMP\)$", makefile, re.M), target


@pytest.mark.slow
def test_the_demo_runs_without_any_extra_from_any_folder(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRAS],
        cwd=tmp_path,
        env=env | {"PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert f"$ sagagraph run {PAPER} --saga-id success" in done.stdout
    assert "saga success: completed" in done.stdout
    demo = tmp_path / "outputs" / "demo"
    assert sorted(p.name for p in (demo / "success").iterdir()) == [
        "review.txt",
        "summary.txt",
        "validation.txt",
    ]
    assert not (demo / "compensation").exists() or not any((demo / "compensation").iterdir())


def test_the_shipped_paper_is_named_with_its_licence_and_checksum() -> None:
    sources = (REPO / "examples" / "papers" / "SOURCES.md").read_text()
    assert PAPER.name in sources
    assert "CC BY 4.0" in sources and "10.1371/journal.pone.0197919" in sources
    assert hashlib.sha256(PAPER.read_bytes()).hexdigest() in sources
    assert PAPER.stat().st_size < 3_000_000


UNPUBLISHED = re.compile(r"""pip install\s+['"]?sagagraph\[""")
"""A registry install of sagagraph: no registry serves it (it is installed from its checkout)."""
BARE_PIP = re.compile(r"""(?<![\w/.-])pip install -e ['"]?\.\[""")
"""An extra installed with whatever ``pip`` the shell finds: after ``make demo`` the venv has no
pip, so that is the host's, and the extra lands outside ``.venv``."""


def test_an_extra_is_added_with_make_extra_into_the_venv() -> None:
    makefile = (REPO / "Makefile").read_text()
    commands = recipe(makefile, "extra")
    assert "--python $(BIN)/python $(EXTRA_INSTALL)" in commands
    assert "$(BIN)/pip $(EXTRA_INSTALL)" in commands
    assert re.search(r'^EXTRA_INSTALL = install .* -e "\.\[\$\(EXTRA\)\]"$', makefile, re.M)


def test_no_doc_names_an_unpublished_package_or_a_pip_outside_the_venv() -> None:
    import tomllib

    extras = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    texts = [
        REPO / "README.md",
        *(REPO / "docs").glob("*.md"),
        *(REPO / "notebooks").glob("*.ipynb"),
    ]
    texts += [*(REPO / "sagagraph").rglob("*.py"), *(REPO / "examples").rglob("*.py")]
    for path in texts:
        text = path.read_text()
        where = path.relative_to(REPO)
        assert not UNPUBLISHED.search(text), f"{where} names sagagraph[...] on a registry"
        assert not BARE_PIP.search(text), f"{where}: pip install -e .[...] outside make extra"
        for named in re.findall(r"make extra EXTRA=([\w,]*\w)", text):
            assert set(named.split(",")) <= extras, f"{where}: no extra {named!r}"
