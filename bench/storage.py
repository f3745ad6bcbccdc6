"""Bytes a saga stores in SQLite, before and after retention, beside plain LangGraph.

The workload is the issue's: the three-step saga with instant fake agents
(:mod:`bench.fake_saga`), one saga in five failing at its last step. sagagraph runs it with
``run_saga`` on the checkpointer a URL opens; plain LangGraph runs the like graph of
:func:`bench.fake_saga.plain_graph` on LangGraph's ``SqliteSaver`` with ``durability="sync"``.

Two measures a side, both per saga:

- ``payload``: the bytes of the rows' payloads (checkpoint, metadata and write values), read
  with ``sqlite3``; the tables of every saver sagagraph opens are listed in :data:`TABLES`;
- ``file``: the database file's size after ``VACUUM`` (pages, indexes and row overhead
  included), divided by the sagas.

Then ``SagaService.prune`` keeps each finished saga's last checkpoint, and both are measured
again. Run it as ``python -m bench.storage [--sagas 1000] [--url-scheme sqlite]``.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path
from typing import Any

TABLES = {
    "checkpoints": ("checkpoint", "metadata"),
    "writes": ("value",),
    "sg_checkpoints": ("checkpoint", "metadata"),
    "sg_blobs": ("blob",),
    "sg_writes": ("value",),
}
"""Each table a SQLite checkpointer may store a saga in, and its payload columns."""


def payload_bytes(db: Path) -> int:
    """The payload bytes of every checkpointer table the file holds."""
    total = 0
    with closing(sqlite3.connect(db)) as conn:
        present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        for table, columns in TABLES.items():
            if table not in present:
                continue
            sums = ", ".join(f"coalesce(sum(length({c})), 0)" for c in columns)
            total += sum(conn.execute(f"SELECT {sums} FROM {table}").fetchone())
    return total


def file_bytes(db: Path) -> int:
    """The file's size once ``VACUUM`` has dropped its free pages and the WAL is merged: its
    pages times the page size. (Not the file's size on disk: while another connection of this
    process is open, SQLite leaves the vacuumed file untruncated until that one closes.)"""
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
        pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
        size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    return pages * size


def row_counts(db: Path) -> dict[str, int]:
    """Rows per checkpointer table."""
    with closing(sqlite3.connect(db)) as conn:
        present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return {
            t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0])
            for t in TABLES
            if t in present
        }


def fail_at(i: int) -> str | None:
    """One saga in five fails at its last step."""
    return "summarizer" if i % 5 == 4 else None


def measure_sagagraph(db: Path, sagas: int, scheme: str) -> dict[str, Any]:
    """Run ``sagas`` sagas on sagagraph, measure, prune, measure again."""
    from bench.fake_saga import PAPER_INPUT, fake_agents, fake_definition
    from sagagraph import build_saga_graph, open_checkpointer, run_saga
    from sagagraph.service import SagaService

    url = f"{scheme}:///{db}"
    definition = fake_definition(fake_agents())
    with open_checkpointer(url) as saver:
        app = build_saga_graph(definition).compile(checkpointer=saver)
        for i in range(sagas):
            run_saga(app, PAPER_INPUT, saga_id=f"s{i:06d}", fail_at=fail_at(i))
    before = {"payload": payload_bytes(db), "file": file_bytes(db), "rows": row_counts(db)}
    pruned = SagaService.from_urls(url).prune(keep_last=True)
    after = {"payload": payload_bytes(db), "file": file_bytes(db), "rows": row_counts(db)}
    return {"before": before, "after": after, "pruned": pruned.counts()}


def measure_plain(db: Path, sagas: int) -> dict[str, Any]:
    """Run ``sagas`` sagas on plain LangGraph over ``SqliteSaver``, sync durability."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from bench.fake_saga import fake_agents, plain_graph, plain_input, thread

    with SqliteSaver.from_conn_string(str(db)) as saver:
        app = plain_graph(fake_agents()).compile(checkpointer=saver)
        for i in range(sagas):
            app.invoke(plain_input(fail_at(i)), thread(f"p{i:06d}"), durability="sync")
    return {"payload": payload_bytes(db), "file": file_bytes(db), "rows": row_counts(db)}


TARGET_BEFORE = 1.2
"""Bytes a saga before retention: at most 1.2× plain LangGraph with a like state."""
TARGET_AFTER_KB = 4.0
"""Bytes a finished saga after retention: at most 4 KB."""
SCHEMES = ("sqlite", "sqlite+group")


def measure(sagas: int, scheme: str) -> dict[str, Any]:
    """Bytes and rows a saga, sagagraph on ``scheme`` before and after ``prune``, and plain
    LangGraph, each on a fresh file."""
    with tempfile.TemporaryDirectory() as tmp:
        ours = measure_sagagraph(Path(tmp) / "ours.sqlite", sagas, scheme)
        plain = measure_plain(Path(tmp) / "plain.sqlite", sagas)
    return {
        "sagas": sagas,
        "scheme": scheme,
        "bytes_per_saga": {
            "sagagraph": {k: v / sagas for k, v in ours["before"].items() if k != "rows"},
            "sagagraph_after_prune": {
                k: v / sagas for k, v in ours["after"].items() if k != "rows"
            },
            "plain": {k: v / sagas for k, v in plain.items() if k != "rows"},
        },
        "rows_per_saga": {
            "sagagraph": {k: v / sagas for k, v in ours["before"]["rows"].items()},
            "sagagraph_after_prune": {k: v / sagas for k, v in ours["after"]["rows"].items()},
            "plain": {k: v / sagas for k, v in plain["rows"].items()},
        },
        "pruned": ours["pruned"],
    }


def run(*, sagas: int = 1000, quick: bool = False) -> list[dict[str, Any]]:
    """``make bench``'s storage item: :func:`measure` on every SQLite scheme (bytes do not
    depend on the machine's load: one run each)."""
    return [measure(100 if quick else sagas, scheme) for scheme in SCHEMES]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sagas", type=int, default=500)
    parser.add_argument("--url-scheme", default="sqlite", help="sqlite or sqlite+group")
    args = parser.parse_args()
    print(json.dumps(measure(args.sagas, args.url_scheme), indent=1))


if __name__ == "__main__":
    main()
