"""What the benchmarks share: spreads, child processes, a fresh PostgreSQL database, the machine."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if (
    str(ROOT) not in sys.path
):  # tests.support.openai_server and tests.support.services live at the root
    sys.path.insert(0, str(ROOT))


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def spread(values: Sequence[float]) -> dict[str, Any]:
    """A figure as ``make bench`` reports it: the median, the range and every sample."""
    if not values:
        raise ValueError("spread of no samples")
    samples = [float(v) for v in values]
    return {
        "median": median(samples),
        "min": min(samples),
        "max": max(samples),
        "runs": len(samples),
        "samples": samples,
    }


def show(figure: dict[str, Any], fmt: str = "{:.2f}", unit: str = "", scale: float = 1.0) -> str:
    """``median [min–max] unit`` of a :func:`spread` (the range only with more than one run)."""
    text = fmt.format(figure["median"] * scale)
    if figure.get("runs", 1) > 1:
        low, high = fmt.format(figure["min"] * scale), fmt.format(figure["max"] * scale)
        text += f" [{low}–{high}]"
    return text + unit if unit == "×" else f"{text} {unit}".rstrip()


def run_child(module: str, *args: str, timeout: float = 600.0) -> dict[str, Any]:
    """Run ``python -m bench.<module> args`` in a fresh process; return the JSON it prints last.

    A fresh process per measurement: peak memory (``ru_maxrss``) is then the measurement's
    own, and no garbage from an earlier run weighs on the next.
    """
    proc = subprocess.run(
        [sys.executable, "-m", f"bench.{module}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"bench.{module} {' '.join(args)} failed ({proc.returncode}):\n{tail}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def emit(result: dict[str, Any]) -> None:
    """A child's answer: one JSON line on stdout."""
    print(json.dumps(result), flush=True)


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB.

    ``VmHWM`` from /proc: ``ru_maxrss`` survives ``exec``, so a child started by a big
    benchmark process would report the parent's size as its own.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    """Resident memory of this process now, in MB."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return float("nan")
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


@contextmanager
def postgres_database() -> Iterator[str | None]:
    """A fresh PostgreSQL database for this run (dropped afterwards); None when unreachable."""
    from tests.support.services import fresh_postgres_database, port_open

    if port_open("127.0.0.1", 5432) is not None:
        yield None
        return
    with fresh_postgres_database() as url:
        yield url


def machine() -> dict[str, Any]:
    """Where the numbers come from: CPU, cores, memory, Python and the library versions."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gb = float("nan")
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_gb = int(line.split()[1]) / 2**20
                break
    except OSError:
        pass
    versions = {}
    for package in ("langgraph", "langgraph-checkpoint-sqlite", "langgraph-checkpoint-postgres"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(memory_gb, 1),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        **versions,
    }
