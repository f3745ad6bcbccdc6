"""Execute the notebooks top to bottom, offline, and save them with their outputs.

    .venv/bin/python notebooks/run_all.py            # every notebook in this folder
    .venv/bin/python notebooks/run_all.py 03_routing.ipynb

The saved copies are what GitHub shows, pictures included, so run this after changing a
notebook or anything it displays. Each notebook runs in a fresh ``python3`` kernel whose
working directory is this folder, with no API key and no model server configured, and with
every HTTP proxy pointed at a closed local port, so a notebook that reached for the network
would fail here instead of quietly working. ``tests/test_notebooks.py`` runs the same
function under ``make test``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CELL_TIMEOUT = 120
"""Seconds one cell may run before the notebook fails."""

_SCRUBBED_PREFIXES = ("OPENAI_", "SAGAGRAPH_")
_DEAD_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens, connections fail fast


def offline_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The kernel's environment: ``base`` without keys, model servers or sagagraph settings."""
    env = {
        name: value
        for name, value in (os.environ if base is None else base).items()
        if not name.startswith(_SCRUBBED_PREFIXES)
    }
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        env[name] = _DEAD_PROXY
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"  # local servers stay reachable
    # Pictures are captured as PNG outputs, whatever backend the caller's shell chose.
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # silences a debugger notice on stderr
    return env


def notebooks(names: Sequence[str] = ()) -> list[Path]:
    """The notebooks of this folder in order, or those named."""
    if names:
        return [HERE / Path(name).name for name in names]
    return sorted(HERE.glob("[0-9][0-9]_*.ipynb"))


def execute_notebook(path: Path, *, cwd: Path = HERE, timeout: int = CELL_TIMEOUT) -> Any:
    """Run ``path`` in a fresh kernel; return the executed notebook (nbformat node).

    Raises nbclient's CellExecutionError, naming the cell, when any cell fails.
    """
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
        record_timing=False,  # no timestamps: the saved copy changes only when outputs do
    )
    client.execute(env=offline_env())
    return notebook


def main(argv: Sequence[str]) -> int:
    import nbformat

    for path in notebooks(argv):
        print(f"running {path.name} ...", flush=True)
        executed = execute_notebook(path)
        nbformat.write(executed, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
