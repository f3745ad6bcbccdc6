"""9. Peer harness: plain LangGraph, agent-saga and sagagraph side by side, in one run.

Runs ``../shared/peers/run_all.sh`` (read-only; its README says how) on the rows that matter
here: P1 (plain LangGraph on SqliteSaver, async and sync durability, and on InMemorySaver),
P3 (agent-saga, file WAL) and the project's own rows (``px_sagagraph.py`` on SQLite and on
PostgreSQL), all on the same workload in the same run. Every figure is the median of
``RUNS`` batches (seq: sagas/s) or runs (500 at once, 50 ms per step: wall ms) with its
range. The harness's output (``results.jsonl``, ``table.md`` and logs) is kept under
``bench/results/peers-<UTC time>/``.

When the harness or its venvs (``~/.cache/peer-venvs``) are missing, the item says so and is
skipped. The project's rows run this checkout (``PYTHONPATH``) on this interpreter.

    python -m bench.peers            # the harness alone, then its rows as JSON
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import ROOT, emit, spread

HARNESS = Path(os.environ.get("SAGAGRAPH_PEERS", ROOT.parent / "shared" / "peers"))
VENVS = Path.home() / ".cache" / "peer-venvs"
NEEDED_VENVS = {"probe": "plain LangGraph (P1)", "agentsagaenv": "agent-saga (P3)"}
ONLY = "P1|P3|PX"
PLAIN_SYNC = "P1 LangGraph sqlite-sync"
OURS_SQLITE = "PX sagagraph sqlite"
TARGET_SEQ = 0.9
"""sagagraph SQLite's seq throughput, at least this times plain LangGraph sqlite-sync's."""

Row = tuple[str, str, str, str, str, str]


def missing() -> str | None:
    """Why the harness cannot run here, or None."""
    if not (HARNESS / "run_all.sh").is_file():
        return f"peer harness not found at {HARNESS}"
    absent = [what for venv, what in NEEDED_VENVS.items() if not (VENVS / venv / "bin").is_dir()]
    if absent:
        return f"peer venvs missing under {VENVS}: {', '.join(absent)}"
    if shutil.which("bash") is None:
        return "bash not found"
    return None


def _interpreter(folder: Path) -> Path:
    """This interpreter with this checkout first on the path: the project's rows run it."""
    script = folder / "python-sagagraph"
    script.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" "$@"\n')
    script.chmod(0o755)
    return script


def harness_env(out: Path, python: Path, quick: bool) -> dict[str, str]:
    """The harness's knobs: every row 5 runs (2 small ones with ``quick``)."""
    extra = ";".join(
        f"{label}|{python}|px_sagagraph.py|{variant}"
        for label, variant in (("PX-sagagraph", "sqlite"), ("PX-sagagraph-pg", "postgres"))
    )
    runs = "2" if quick else "5"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "PYTHONPATH"))}
    env |= {
        "PEERS_OUT": str(out),
        "PEERS_WORKDIR": str(out / "work"),
        "ONLY": ONLY,
        "EXTRA_PEERS": extra,
        "RUNS": runs,
        "CONC_RUNS": runs,
        "CONC_W2_RUNS": runs,
        "PEER_TIMEOUT": "900",
    }
    if quick:
        env |= {"P1_N": "50", "P3_N": "50", "PX_N": "50", "CONC_N": "100"}
    return env


def parse(lines: list[str]) -> list[dict[str, Any]]:
    """The harness's ``results.jsonl`` as one row per peer: store, seq and conc figures."""
    peers: dict[str, dict[str, Any]] = {}
    for line in lines:
        if not line.strip():
            continue
        record = json.loads(line)
        peer = peers.setdefault(record["peer"], {"peer": record["peer"], "errors": []})
        if "error" in record:
            peer["errors"].append(f"{record.get('phase', '?')}: {record['error']}")
            continue
        peer.setdefault("store", record.get("store", ""))
        for key in ("W1", "W2"):
            if key in record:
                peer[f"seq_{key}"] = spread(record[key]["samples_sps"]) | {"n": record[key]["n"]}
        for key in ("W1c", "W2c"):
            if key in record:
                d = record[key]
                peer[f"conc_{key[:2]}"] = spread(d["samples_ms"]) | {
                    "n": d["n"],
                    "ideal_ms": d["ideal_ms"],
                }
    return list(peers.values())


def run(*, quick: bool = False) -> dict[str, Any]:
    """Run the harness once, all rows together; its rows, or why it was skipped."""
    why = missing()
    if why:
        return {"skipped": why}
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = ROOT / "bench" / "results" / f"peers-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    env = harness_env(out, _interpreter(out), quick)
    with (out / "run.log").open("w") as log:
        proc = subprocess.run(
            ["bash", str(HARNESS / "run_all.sh")],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=3 * 3600,
            check=False,
        )
    shutil.rmtree(out / "work", ignore_errors=True)  # the peers' databases: large, not results
    jsonl = out / "results.jsonl"
    if not jsonl.is_file():
        return {"skipped": f"the harness wrote no results (exit {proc.returncode}); see {out}"}
    return {
        "dir": str(out.relative_to(ROOT)),
        "exit_code": proc.returncode,
        "runs": int(env["RUNS"]),
        "peers": parse(jsonl.read_text().splitlines()),
    }


def _cell(figure: dict[str, Any] | None, fmt: str = "{:.0f}") -> str:
    if not figure:
        return "-"
    text = fmt.format(figure["median"])
    return text + (f" [{fmt.format(figure['min'])}–{fmt.format(figure['max'])}]")


def peer_table(result: dict[str, Any]) -> str:
    """The harness's rows as their own markdown table (empty when it was skipped)."""
    if "peers" not in result:
        return ""
    n = next((p["conc_W1"]["n"] for p in result["peers"] if "conc_W1" in p), 500)
    header = f"| peer | durable state | seq W1 sagas/s | seq W2 sagas/s | {n} at once W1, wall ms |"
    lines = [header, "|---|---|---|---|---|"]
    for p in result["peers"]:
        conc = _cell(p.get("conc_W1"))
        if "conc_W1" in p:
            conc += f" (×{p['conc_W1']['median'] / p['conc_W1']['ideal_ms']:.1f} ideal)"
        if p["errors"]:
            conc += " — FAILED: " + "; ".join(e[:120] for e in p["errors"])
        seq = [_cell(p.get(f"seq_{w}")) for w in ("W1", "W2")]
        lines.append(f"| {p['peer']} | {p.get('store', '')} | {seq[0]} | {seq[1]} | {conc} |")
    return "\n".join(lines)


def table_rows(result: dict[str, Any]) -> list[Row]:
    """The acceptance checks: sagagraph SQLite against plain LangGraph sqlite-sync."""
    what = "9. Peer harness"
    if "skipped" in result:
        return [(what, "skipped", result["skipped"], "", "", "")]
    by_peer = {p["peer"]: p for p in result["peers"]}
    ours, plain = by_peer.get(OURS_SQLITE, {}), by_peer.get(PLAIN_SYNC, {})
    rows: list[Row] = []
    for w in ("W1", "W2"):
        a, b = ours.get(f"seq_{w}"), plain.get(f"seq_{w}")
        label = f"{what}, seq {w}: sagagraph SQLite throughput"
        if not a or not b:
            rows.append(
                (label, _cell(a), f"plain LangGraph sqlite-sync {_cell(b)}", "", "", "**no**")
            )
            continue
        ratio = a["median"] / b["median"]
        rows.append(
            (
                label,
                f"{_cell(a)} sagas/s",
                f"plain LangGraph + SqliteSaver (sync) {_cell(b)} sagas/s",
                f"{ratio:.2f}×",
                f"≥ {TARGET_SEQ}×",
                "yes" if ratio >= TARGET_SEQ else "**no**",
            )
        )
    a, b = ours.get("conc_W1"), plain.get("conc_W1")
    n = (a or b or {}).get("n", 500)
    label = f"{what}, {n} at once, 50 ms per step: sagagraph SQLite wall time"
    if not a or not b:
        rows.append((label, _cell(a), f"plain LangGraph sqlite-sync {_cell(b)}", "", "", "**no**"))
    else:
        ratio = a["median"] / b["median"]
        rows.append(
            (
                label,
                f"{_cell(a)} ms",
                f"plain LangGraph + SqliteSaver (sync) {_cell(b)} ms",
                f"{ratio:.2f}×",
                "< 1× (ahead)",
                "yes" if ratio < 1 else "**no**",
            )
        )
    return rows


def main() -> None:
    emit(run(quick="--quick" in sys.argv[1:]))


if __name__ == "__main__":
    main()
