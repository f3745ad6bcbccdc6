"""``python -m bench`` (``make bench``): run the benchmarks, print the table, write the JSON.

    python -m bench                 # everything (the better part of an hour on two cores)
    python -m bench --only 1,2      # engine overhead and concurrency only
    python -m bench --only 9        # the peer harness (../shared/peers) only
    python -m bench --only 10       # bytes a saga, before and after retention
    python -m bench --only 2 --backend postgres   # item 2's PostgreSQL rows only
    python -m bench --quick         # smaller runs, to check that the benchmarks work

Every figure is the median of at least five runs with its range (``--quick``: fewer, smaller).

Results go to ``bench/results/`` (git-ignored): ``bench-<UTC time>.json`` with every sample,
``latest.json`` and ``latest.md`` (the table for the README).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from typing import Any

from bench.common import ROOT, machine
from bench.report import markdown, missed

RESULTS = ROOT / "bench" / "results"
COMMAND = "make bench"
ITEMS = {
    "1": "overhead",
    "2": "concurrency",
    "3": "footprint",
    "4": "tokens",
    "5": "big_input",
    "6": "workers",
    "7": "startup",
    "8": "history",
    "9": "peers",
    "10": "storage",
}
PLUGGED = ("startup", "history")
"""Items whose module may be absent from this checkout: reported "not available", not an error."""


def _run_plugged(name: str, quick: bool) -> Any:
    import importlib

    try:
        module = importlib.import_module(f"bench.{name}")
    except ImportError as error:
        return {"unavailable": f"bench.{name} not available ({error})"}
    return module.run(quick=quick)


def _run_item(name: str, quick: bool, args: argparse.Namespace) -> Any:
    if name == "overhead":
        from bench import overhead

        return overhead.run(rounds=args.rounds, quick=quick)
    if name == "concurrency":
        from bench import concurrency

        backends = (args.backend,) if args.backend else concurrency.BACKENDS
        return concurrency.run(runs=args.runs, sagas=args.sagas, quick=quick, backends=backends)
    if name == "footprint":
        from bench import footprint

        return footprint.run(quick=quick)
    if name == "tokens":
        from bench import tokens

        return tokens.run(quick=quick)
    if name == "workers":
        from bench import workers

        return workers.run(sagas=args.sagas, quick=quick)
    if name in PLUGGED:
        return _run_plugged(name, quick)
    if name == "storage":
        from bench import storage

        return storage.run(quick=quick)
    if name == "peers":
        from bench import peers

        return peers.run(quick=quick)
    from bench import big_input

    return big_input.run(quick=quick)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=",".join(ITEMS), help="items to run, e.g. 1,2")
    parser.add_argument("--quick", action="store_true", help="small runs, to check the setup")
    parser.add_argument(
        "--rounds", type=int, default=9, help="rounds of item 1 (median, at least 5)"
    )
    parser.add_argument(
        "--runs", type=int, default=5, help="runs per engine of item 2 (median, at least 5)"
    )
    parser.add_argument(
        "--sagas",
        type=int,
        default=500,
        help="sagas at once in item 2 (PostgreSQL also 10×); sagas submitted in item 6",
    )
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgres"),
        help="item 2: only the scenarios on this database (default: both)",
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in ITEMS]
    if unknown:
        parser.error(f"--only: unknown item(s) {', '.join(unknown)} (choose from 1-10)")

    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    results: dict[str, Any] = {}
    for key in chosen:
        name = ITEMS[key]
        print(f"bench: {key}. {name} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            results[name] = _run_item(name, args.quick, args)
        except Exception as error:  # one item's failure is reported; the others still run
            lines = str(error).strip().splitlines()
            results[name] = {"failed": f"{type(error).__name__}: {lines[-1] if lines else ''}"}
            print(f"bench: {key}. {name} failed: {results[name]['failed']}", file=sys.stderr)
        print(f"bench: {key}. {name} done in {time.perf_counter() - start:.0f} s", file=sys.stderr)

    about = machine()
    command = (
        COMMAND if not argv and sys.argv[1:] == [] else f"{COMMAND} ({' '.join(sys.argv[1:])})"
    )
    text = markdown(results, about, date, command)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    record = {"date": date, "command": command, "machine": about, "results": results}
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for name in (f"bench-{stamp}.json", "latest.json"):
        (RESULTS / name).write_text(json.dumps(record, indent=2) + "\n")
    (RESULTS / "latest.md").write_text(text + "\n")
    print(f"\nbench: wrote {RESULTS / f'bench-{stamp}.json'} and latest.md", file=sys.stderr)
    misses = missed(results)
    if misses:
        print(f"bench: {len(misses)} target(s) missed: {'; '.join(misses)}", file=sys.stderr)
    return 1 if misses and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
