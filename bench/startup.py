"""Start-up: wall time of ``sagagraph --help``, ``list``, ``status ID``, ``events ID`` and
``graph``.

Each command runs in a fresh process, as a user types it: the interpreter starts, imports
what the command needs, answers and exits; the wall time covers all of it. ``list`` and
``status`` read a SQLite checkpointer holding three sagas (completed, halted by the
validator, rolled back after a failure), made once beforehand with the offline engine.
The commands take turns, round after round, so that a burst of load on the machine falls
on all of them alike; each figure is the median of the rounds, with the fastest and the
slowest, and the median CPU time (user + system), which a busy machine inflates less.
The baseline is a process that only imports ``langgraph.graph``: the floor of any
command that builds the saga's graph. ``list``, ``status`` and ``events`` of these finished
sagas, and ``graph``, load no LangGraph (they read the stamped index and the fields kept
when each saga ended with the database driver, or print a kept drawing).

    python -m bench.startup            # 11 rounds
    python -m bench.startup --quick    # 5 rounds
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from bench.common import ROOT, emit, median

TARGET_S = 0.5
"""Each command starts, answers and exits within this (issue 18, item 5)."""

COMMANDS: dict[str, tuple[str, ...]] = {
    "--help": ("--help",),
    "list": ("list",),
    "status": ("status", "s-completed"),
    "events": ("events", "s-rolled-back"),
    "graph": ("graph",),
}
"""What is measured: the label, and the arguments after ``sagagraph``."""

CONSOLE_SCRIPT = "import sys; from sagagraph.cli import main; sys.exit(main())"
"""What the installed ``sagagraph`` script runs (entry point ``sagagraph.cli:main``)."""
BASELINE = "import langgraph.graph"

PAPERS = ROOT / "examples" / "papers"
SAGAS = (
    ("s-completed", "complete_paper.md", (), 0),
    ("s-halted", "incomplete_paper.md", (), 5),
    ("s-rolled-back", "complete_paper.md", ("--fail-at", "summarizer"), 3),
)
"""The sagas ``list`` and ``status`` read: id, paper, extra flags, the exit code ``run`` gives."""


def _env() -> dict[str, str]:
    """This checkout first on the path; offline; the checkpointer and event log of the folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["SAGAGRAPH_LLM"] = "offline"
    return env


def _sagagraph(*args: str) -> list[str]:
    return [sys.executable, "-c", CONSOLE_SCRIPT, *args]


def make_sagas(folder: Path) -> None:
    """Three finished sagas in ``folder/sagagraph.sqlite`` (outputs under ``folder``)."""
    for saga_id, paper, flags, code in SAGAS:
        argv = _sagagraph("run", str(PAPERS / paper), "--saga-id", saga_id, *flags)
        proc = subprocess.run(argv, cwd=folder, env=_env(), capture_output=True, check=False)
        if proc.returncode != code:
            raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode}\n{proc.stderr!r}")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], folder: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of ``argv`` from start to exit; RuntimeError when
    it fails. The CPU time is the steadier of the two on a busy machine."""
    cpu, start = _children_cpu(), time.perf_counter()
    proc = subprocess.run(
        argv, cwd=folder, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode}\n{proc.stderr!r}")
    return elapsed, _children_cpu() - cpu


def _spread(times: list[float]) -> dict[str, float]:
    return {"median_s": median(times), "min_s": min(times), "max_s": max(times)}


def measure(folder: Path, rounds: int) -> list[dict[str, Any]]:
    """Every command and the baseline once per round, in turns; one row per command."""
    argvs = {name: _sagagraph(*args) for name, args in COMMANDS.items()}
    argvs["baseline"] = [sys.executable, "-c", BASELINE]
    for argv in argvs.values():  # warm-up: bytecode compiled, files in the page cache
        timed(argv, folder)
    walls: dict[str, list[float]] = {name: [] for name in argvs}
    cpus: dict[str, list[float]] = {name: [] for name in argvs}
    for _ in range(rounds):
        for name, argv in argvs.items():
            wall, cpu = timed(argv, folder)
            walls[name].append(wall)
            cpus[name].append(cpu)
    baseline = _spread(walls.pop("baseline"))
    return [
        {
            "command": f"sagagraph {' '.join(COMMANDS[name])}",
            "runs": rounds,
            **_spread(runs),
            "cpu_median_s": median(cpus[name]),
            "baseline": BASELINE,
            **{f"baseline_{key}": value for key, value in baseline.items()},
            "baseline_cpu_median_s": median(cpus["baseline"]),
            "target_s": TARGET_S,
        }
        for name, runs in walls.items()
    ]


def run(*, quick: bool = False) -> list[dict[str, Any]]:
    """One row per command: median, min and max wall time over the rounds (5 quick, else 11)."""
    with TemporaryDirectory(prefix="sagagraph-bench-startup-") as tmp:
        make_sagas(Path(tmp))
        return measure(Path(tmp), 5 if quick else 11)


def _s(seconds: float) -> str:
    return f"{seconds:.2f} s"


def table_rows(rows: list[dict[str, Any]]) -> list[tuple[str, str, str, str, str, str]]:
    """Measure, sagagraph, Baseline, Ratio, Target, Met (the style of bench/report.py)."""
    out = []
    for r in rows:
        spread = (
            f"{_s(r['median_s'])} ({_s(r['min_s'])}–{_s(r['max_s'])}); CPU {_s(r['cpu_median_s'])}"
        )
        baseline = (
            f"`python -c '{r['baseline']}'` {_s(r['baseline_median_s'])} "
            f"({_s(r['baseline_min_s'])}–{_s(r['baseline_max_s'])}); "
            f"CPU {_s(r['baseline_cpu_median_s'])}"
        )
        met = r["median_s"] < r["target_s"]
        out.append(
            (
                f"Start-up: `{r['command']}`, fresh process, median of {r['runs']} runs (range)",
                spread,
                baseline,
                f"{r['median_s'] / r['baseline_median_s']:.2f}×",
                f"< {_s(r['target_s'])}",
                "yes" if met else "**no**",
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 rounds instead of 11")
    emit({"startup": run(quick=parser.parse_args().quick)})


if __name__ == "__main__":
    main()
