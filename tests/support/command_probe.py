"""Run one ``sagagraph`` command in a fresh interpreter, as the script does, and record the
modules it imported: start-up tests check that a command loads only what it needs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
from sagagraph.cli import entry, main
try:
    code = main(sys.argv[2:])
except SystemExit as stop:  # --help and --version leave through argparse
    code = stop.code
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules)}, out)
"""


def probe(tmp_path: Path, *args: str) -> dict[str, Any]:
    """The exit code of ``sagagraph ARGS`` in a fresh process, and the modules it imported."""
    out = tmp_path / "probe.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    env |= {"PYTHONPATH": str(REPO), "SAGAGRAPH_LLM": "offline"}
    subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        check=True,
        timeout=120,
    )
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def imported(modules: list[str], package: str) -> bool:
    """True when ``package`` or one of its modules is among ``modules``."""
    return any(m == package or m.startswith(f"{package}.") for m in modules)
