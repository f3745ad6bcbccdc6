"""8. Cost that does not grow with history: sagas already stored, then time per saga, list, recover.

For each durable backend (SQLite, PostgreSQL) one fresh database is filled step by step to
1k, 10k and 50k stored sagas. The rows are real: a few dozen sagas (success, and failure at
the summarizer with two compensations) run through ``run_saga``, then their rows (checkpoints,
blobs, writes, metadata with its summary) are copied by SQL under new thread ids until the
database holds the size wanted. Two sagas stopped half way (not copied) give ``recover``
something to find. At each size:

- time per saga: the median over batches of ``run_saga`` on top of that history;
- ``list``: the rows ``sagagraph list`` builds for the checkpointer (in process: no CLI
  start-up), against the old way, reading every saga's full state (``saga_status`` of each);
- ``recover``: finding what to recover (``open_sagas``: unfinished sagas and those waiting for
  an operator), against the same full read;
- blob reads: how many blobs ``list`` and ``recover`` deserialize (``loads_typed`` calls),
  which must not grow with the history (only the two stopped sagas are read in full).

Copied sagas' blobs still name the saga they were copied from; only the full-read baseline
ever opens them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from bench.common import median, postgres_database
from bench.fake_saga import PAPER_INPUT, fake_agents, fake_definition
from sagagraph import build_saga_graph, open_checkpointer, run_saga

Row = tuple[str, str, str, str, str, str]

SIZES = (1_000, 10_000, 50_000)
QUICK_SIZES = (100, 500, 1_000)
SEEDS = 40
"""Real sagas whose rows are copied; every fourth one fails at the summarizer."""
TARGET_FLAT = 1.10
"""Time per saga at each size at most this times the time at the smallest size."""
BASELINE_UP_TO = 50_000
"""Largest size at which the full-read baseline is timed (it is the slow part)."""


def _app(checkpointer: Any) -> Any:
    return build_saga_graph(fake_definition(fake_agents())).compile(checkpointer=checkpointer)


def _seed(app: Any) -> None:
    for i in range(SEEDS):
        fail_at = "summarizer" if i % 4 == 3 else None
        run_saga(app, PAPER_INPUT, saga_id=f"seed-{i:03d}", fail_at=fail_at)
    # Stopped before their second step, as a killed process leaves them: recover's work.
    for i in range(2):
        saga_id = f"stopped-{i}"
        config = {"configurable": {"thread_id": saga_id}}
        state = {"saga_id": saga_id, "input": dict(PAPER_INPUT), "fail_at": None}
        app.invoke(state, config, interrupt_before=["reviewer"])


_SQLITE_COPY = {
    "checkpoints": "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
    "checkpoint, metadata",
    "writes": "thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, "
    "type, value",
}
_POSTGRES_COPY = {
    "checkpoints": "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
    "checkpoint, metadata",
    "checkpoint_blobs": "thread_id, checkpoint_ns, channel, version, type, blob",
    "checkpoint_writes": "thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, "
    "channel, type, blob",
}


def _copy_sql(table: str, columns: str, numbers: str, new_id: str, mod: str = "%") -> str:
    rest = columns.split(", ", 1)[1]
    picked = ", ".join(f"c.{c}" for c in rest.split(", "))
    return (
        f"INSERT INTO {table} ({columns}) SELECT {new_id}, {picked} "
        f"FROM {numbers} JOIN seeds AS s ON s.i = n.k {mod} {SEEDS} "
        f"JOIN {table} AS c ON c.thread_id = s.thread_id"
    )


def _fill_sqlite(checkpointer: Any, start: int, stop: int) -> None:
    numbers = (
        "(WITH RECURSIVE r(k) AS (SELECT ? UNION ALL SELECT k + 1 FROM r WHERE k + 1 < ?) "
        "SELECT k FROM r) AS n"
    )
    with checkpointer.lock:
        conn = checkpointer.conn
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS seeds (i INTEGER, thread_id TEXT)")
        conn.execute("DELETE FROM seeds")
        conn.executemany(
            "INSERT INTO seeds VALUES (?, ?)", [(i, f"seed-{i:03d}") for i in range(SEEDS)]
        )
        for table, columns in _SQLITE_COPY.items():
            sql = _copy_sql(table, columns, numbers, "printf('hist-%06d', n.k)")
            conn.execute(sql, (start, stop))
        conn.commit()


def _fill_postgres(checkpointer: Any, start: int, stop: int) -> None:
    numbers = "generate_series(%s::int, %s::int - 1) AS n(k)"
    with checkpointer._cursor() as cur, cur.connection.transaction():
        cur.execute("CREATE TEMP TABLE IF NOT EXISTS seeds (i INTEGER, thread_id TEXT)")
        cur.execute("DELETE FROM seeds")
        cur.executemany(
            "INSERT INTO seeds VALUES (%s, %s)", [(i, f"seed-{i:03d}") for i in range(SEEDS)]
        )
        for table, columns in _POSTGRES_COPY.items():
            new_id = "'hist-' || lpad(n.k::text, 6, '0')"
            sql = _copy_sql(table, columns, numbers, new_id, mod="%%")
            cur.execute(sql, (start, stop))
    with checkpointer._cursor() as cur:
        cur.execute("ANALYZE")


class _Loads:
    """Counts the blobs and writes any saver deserializes while active."""

    def __init__(self) -> None:
        self.count = 0

    @contextmanager
    def counting(self) -> Iterator[None]:
        real = JsonPlusSerializer.loads_typed

        def loads_typed(serde: JsonPlusSerializer, data: tuple[str, bytes]) -> Any:
            self.count += 1
            return real(serde, data)

        JsonPlusSerializer.loads_typed = loads_typed  # type: ignore[method-assign,assignment]
        try:
            yield
        finally:
            JsonPlusSerializer.loads_typed = real  # type: ignore[method-assign]


def _timed(fn: Callable[[], Any]) -> tuple[float, int, Any]:
    loads = _Loads()
    with loads.counting():
        start = time.perf_counter()
        out = fn()
        elapsed = time.perf_counter() - start
    return elapsed, loads.count, out


def _per_saga(app: Any, tag: str, batches: int, per_batch: int) -> list[float]:
    samples = []
    for b in range(batches):
        start = time.perf_counter()
        for i in range(per_batch):
            fail_at = "summarizer" if i % 4 == 3 else None
            run_saga(app, PAPER_INPUT, saga_id=f"run-{tag}-{b}-{i}", fail_at=fail_at)
        samples.append((time.perf_counter() - start) / per_batch)
    return samples


def _measure_one(backend: str, url: str, size: int, app: Any) -> dict[str, Any]:
    """``list`` and ``recover`` (finding) on one filled database, and the full-read baseline."""
    from sagagraph.checkpoints.saga_index import saga_ids
    from sagagraph.graph.runner import saga_status
    from sagagraph.service import SagaService

    service = SagaService.from_urls(url, "memory://")
    list_s, list_loads, listed = _timed(service.orchestrated_rows)

    def recover_scan() -> list[dict[str, Any]]:
        pending, waiting = service.unfinished()
        return pending + waiting

    recover_s, recover_loads, opened = _timed(recover_scan)
    row: dict[str, Any] = {
        "backend": backend,
        "stored": size,
        "list_s": list_s,
        "list_rows": len(listed),
        "list_blob_reads": list_loads,
        "recover_s": recover_s,
        "recover_open": len(opened),
        "recover_blob_reads": recover_loads,
    }
    if size <= BASELINE_UP_TO:
        full_s, full_loads, _ = _timed(
            lambda: [saga_status(app, i) for i in saga_ids(app.checkpointer)]
        )
        row |= {"full_read_s": full_s, "full_read_blob_reads": full_loads}
    return row


def measure(backend: str, urls: dict[int, str], quick: bool) -> list[dict[str, Any]]:
    """One database per size, filled first; then batches of sagas on each, taking turns
    (the order rotating each round), so a busy machine weighs on every size alike."""
    batches, per_batch = (5, 10) if quick else (7, 20)
    fill = _fill_sqlite if backend == "sqlite" else _fill_postgres
    with ExitStack() as stack:
        apps: dict[int, Any] = {}
        for size, url in urls.items():
            checkpointer = stack.enter_context(open_checkpointer(url))
            apps[size] = _app(checkpointer)
            _seed(apps[size])
            fill(checkpointer, SEEDS + 2, size)
            _per_saga(apps[size], "warm", 1, 5)  # caches, connections
        sizes = list(urls)
        samples: dict[int, list[float]] = {size: [] for size in sizes}
        for b in range(batches):
            for size in sizes[b % len(sizes) :] + sizes[: b % len(sizes)]:
                samples[size] += _per_saga(apps[size], f"b{b}", 1, per_batch)
        rows = []
        for size, url in urls.items():
            row = _measure_one(backend, url, size, apps[size])
            row |= {"per_saga_s": median(samples[size]), "per_saga_samples": samples[size]}
            rows.append(row)
    base = rows[0]["per_saga_s"]
    for r in rows:
        r["vs_smallest"] = r["per_saga_s"] / base
        r["target"] = TARGET_FLAT
    return rows


def run(*, quick: bool = False) -> list[dict[str, Any]]:
    """SQLite, then PostgreSQL (skipped, and said so, when unreachable)."""
    sizes = QUICK_SIZES if quick else SIZES
    rows: list[dict[str, Any]] = []
    with TemporaryDirectory(prefix="sagagraph-history-") as tmp:
        urls = {n: f"sqlite:///{Path(tmp) / f'history-{n}.sqlite'}" for n in sizes}
        rows += measure("sqlite", urls, quick)
    with ExitStack() as stack:
        pg = {n: stack.enter_context(postgres_database()) for n in sizes}
        if any(url is None for url in pg.values()):
            rows.append({"backend": "postgres", "skipped": "PostgreSQL unreachable"})
        else:
            rows += measure("postgres", {n: str(url) for n, url in pg.items()}, quick)
    return rows


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def _s(seconds: float) -> str:
    return f"{seconds:.2f} s"


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def table_rows(rows: list[dict[str, Any]]) -> list[Row]:
    """(Measure, sagagraph, Baseline, Ratio, Target, Met) rows, as bench/report.py prints them."""
    out: list[Row] = []
    smallest: dict[str, dict[str, Any]] = {}
    for r in rows:
        store = "PostgreSQL" if r["backend"] == "postgres" else "SQLite"
        if "skipped" in r:
            out.append((f"8. History, {store}", "skipped", r["skipped"], "", "", ""))
            continue
        first = smallest.setdefault(r["backend"], r)
        n = f"{r['stored']:,}"
        ratio = r["vs_smallest"]
        flat = r is not first
        out.append(
            (
                f"8. Time per saga, {n} sagas stored, {store}",
                _ms(r["per_saga_s"]),
                f"{first['stored']:,} stored: {_ms(first['per_saga_s'])}",
                f"{ratio:.2f}×",
                f"≤ {r['target']:.2f}×" if flat else "",
                _met(ratio <= r["target"]) if flat else "",
            )
        )
        for verb, key in (("list", "list"), ("recover (finding)", "recover")):
            reads = r[f"{key}_blob_reads"]
            full = r.get("full_read_s")
            out.append(
                (
                    f"8. `{verb}`, {n} sagas stored, {store}",
                    f"{_s(r[f'{key}_s'])}, {reads} blobs read",
                    f"every state read: {_s(full)}, {r['full_read_blob_reads']} blobs"
                    if full is not None
                    else "",
                    f"{r[f'{key}_s'] / full:.3f}×" if full else "",
                    f"blobs read as at {first['stored']:,}",
                    _met(reads <= first[f"{key}_blob_reads"]),
                )
            )
    return out


if __name__ == "__main__":
    import json
    import sys

    found = run(quick="--quick" in sys.argv)
    print(json.dumps(found, indent=2))
    for line in table_rows(found):
        print(" | ".join(line))
