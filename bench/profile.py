"""Where a saga's time goes: the profile behind docs/performance.md.

    python -m bench.profile                   # 200 sequential sagas, success and failure,
                                              # SQLite and PostgreSQL, sagagraph and plain
    python -m bench.profile --sagas 50        # quicker
    python -m bench.profile --backends memory --sagas 2000   # CPU only: no disk hides it

For each backend and path it runs the sagas one after another (instant agents), sagagraph
through ``run_saga`` and the plain LangGraph graph of :mod:`bench.fake_saga` through
``invoke`` on LangGraph's stock saver, both ``durability="sync"``, and splits each saga's wall
time into: durable writes (``put`` / ``put_writes`` calls and the time inside them, measured
on the thread that runs them), reads (``get_tuple``), and the rest (LangGraph's loop, the
nodes, sagagraph's own code). It then prints the functions that take most of the time under
cProfile, grouped by package. Figures vary between runs by about ±15% on a busy machine; read
the shares and the ratios.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from bench.common import postgres_database
from bench.fake_saga import (
    PAPER_INPUT,
    fake_agents,
    fake_definition,
    plain_graph,
    plain_input,
    thread,
)

METHODS = ("put", "put_writes", "get_tuple")


class _Meter:
    """Counts the saver's calls and the seconds spent in them (thread-safe)."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = defaultdict(int)
        self.seconds: dict[str, float] = defaultdict(float)
        self._lock = threading.Lock()

    def wrap(self, saver: Any) -> None:
        for name in METHODS:
            inner = getattr(saver, name)
            setattr(saver, name, self._timed(name, inner))

    def _timed(self, name: str, inner: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                spent = time.perf_counter() - start
                with self._lock:
                    self.calls[name] += 1
                    self.seconds[name] += spent

        return timed

    def reset(self) -> None:
        self.calls.clear()
        self.seconds.clear()


@contextmanager
def _stock_saver(url: str) -> Iterator[Any]:
    """LangGraph's own saver for the URL, as a plain LangGraph user opens it."""
    if url == "memory://":
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
    elif url.startswith("sqlite:///"):
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(url[len("sqlite:///") :], check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
        try:
            yield saver
        finally:
            conn.close()
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
            yield saver


def _split(meter: _Meter, wall: float, n: int) -> dict[str, Any]:
    writes = meter.seconds["put"] + meter.seconds["put_writes"]
    reads = meter.seconds["get_tuple"]
    return {
        "ms_per_saga": wall / n * 1000,
        "puts": meter.calls["put"] / n,
        "put_writes": meter.calls["put_writes"] / n,
        "reads": meter.calls["get_tuple"] / n,
        # Time inside the saver's calls, on the threads that make them (LangGraph runs a
        # checkpoint's put beside the next task's put_writes: the two may overlap).
        "write_ms": writes / n * 1000,
        "read_ms": reads / n * 1000,
    }


def _packages(profile: cProfile.Profile, top: int = 8) -> list[tuple[str, float]]:
    """Own time (tottime) by package, largest first."""
    stats = pstats.Stats(profile)
    by: dict[str, float] = defaultdict(float)
    for (file, _, func), row in stats.stats.items():  # type: ignore[attr-defined]
        tottime = row[2]
        if "site-packages/" in file:
            key = file.split("site-packages/", 1)[1].split("/", 1)[0]
        elif "/sagagraph/" in file:
            key = "sagagraph"
        elif file == "~":
            key = f"builtin {func.split(' of ')[0].strip('<>')}"
        else:
            key = "python stdlib"
        by[key] += tottime
    return sorted(by.items(), key=lambda kv: -kv[1])[:top]


def profile_backend(url: str, fail_at: str | None, sagas: int) -> dict[str, Any]:
    from sagagraph import build_saga_graph, open_checkpointer, run_saga

    out: dict[str, Any] = {}
    agents = fake_agents()
    tag = fail_at or "ok"
    with open_checkpointer(url) as saver:
        meter = _Meter()
        meter.wrap(saver)
        app = build_saga_graph(fake_definition(agents)).compile(checkpointer=saver)
        for i in range(10):
            run_saga(app, PAPER_INPUT, saga_id=f"warm-{tag}-{i}", fail_at=fail_at)
        meter.reset()
        profile = cProfile.Profile()
        start = time.perf_counter()
        for i in range(sagas):
            run_saga(app, PAPER_INPUT, saga_id=f"sg-{tag}-{i}", fail_at=fail_at)
        out["sagagraph"] = _split(meter, time.perf_counter() - start, sagas)
        profile.enable()
        for i in range(sagas):
            run_saga(app, PAPER_INPUT, saga_id=f"pr-{tag}-{i}", fail_at=fail_at)
        profile.disable()
        out["sagagraph"]["by_package_s"] = _packages(profile)
    with _stock_saver(url) as saver:
        meter = _Meter()
        meter.wrap(saver)
        plain = plain_graph(agents).compile(checkpointer=saver)
        for i in range(10):
            plain.invoke(plain_input(fail_at), thread(f"pw-{tag}-{i}"), durability="sync")
        meter.reset()
        start = time.perf_counter()
        for i in range(sagas):
            plain.invoke(plain_input(fail_at), thread(f"pl-{tag}-{i}"), durability="sync")
        out["plain"] = _split(meter, time.perf_counter() - start, sagas)
    return out


BACKENDS = ("memory", "sqlite", "postgres")


def run(
    *, sagas: int = 200, backends: tuple[str, ...] = ("sqlite", "postgres")
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    database = postgres_database() if "postgres" in backends else nullcontext(None)
    with TemporaryDirectory(prefix="sagagraph-profile-") as tmp, database as pg:
        every = {
            "memory": "memory://",
            "sqlite": f"sqlite:///{Path(tmp) / 'profile.sqlite'}",
            "postgres": pg,
        }
        urls = {backend: every[backend] for backend in backends}
        for backend, url in urls.items():
            for path, fail_at in (("success", None), ("failure", "summarizer")):
                row: dict[str, Any] = {"backend": backend, "path": path}
                if url is None:
                    row["skipped"] = "PostgreSQL unreachable at 127.0.0.1:5432"
                else:
                    row |= profile_backend(url, fail_at, sagas)
                rows.append(row)
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| backend, path | side | ms/saga | put + put_writes | writes ms | reads | reads ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['backend']}, {r['path']} | skipped: {r['skipped']} ||||||")
            continue
        for side in ("sagagraph", "plain"):
            s = r[side]
            lines.append(
                f"| {r['backend']}, {r['path']} | {side} | {s['ms_per_saga']:.2f} "
                f"| {s['puts']:.0f} + {s['put_writes']:.0f} | {s['write_ms']:.2f} "
                f"| {s['reads']:.0f} | {s['read_ms']:.2f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sagas", type=int, default=200)
    parser.add_argument(
        "--backends",
        default="sqlite,postgres",
        help=f"comma-separated, among {', '.join(BACKENDS)} (default: sqlite,postgres)",
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    backends = tuple(b.strip() for b in args.backends.split(",") if b.strip())
    unknown = sorted(set(backends) - set(BACKENDS))
    if unknown:
        parser.error(f"--backends: unknown {', '.join(unknown)} (known: {', '.join(BACKENDS)})")
    rows = run(sagas=args.sagas, backends=backends)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(markdown(rows))
    for r in rows:
        if "skipped" not in r:
            shares = ", ".join(f"{k} {v:.2f} s" for k, v in r["sagagraph"]["by_package_s"])
            print(f"\n{r['backend']} {r['path']}, own time by package (cProfile): {shares}")


if __name__ == "__main__":
    main()
