"""The results as one markdown table (for the README), with the machine and the command."""

from __future__ import annotations

from typing import Any

from bench.common import show

Row = tuple[str, str, str, str, str, str]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def _s(seconds: float) -> str:
    return f"{seconds:.2f} s"


def _kb(n: float) -> str:
    return f"{n / 1024:.1f} KB"


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


STOCK = {
    ("memory", "sync"): "InMemorySaver",
    ("memory", "async"): "InMemorySaver",
    ("sqlite", "sync"): "SqliteSaver",
    ("sqlite", "async"): "AsyncSqliteSaver",
    ("postgres", "sync"): "PostgresSaver",
    ("postgres", "async"): "AsyncPostgresSaver",
}
"""LangGraph's stock saver for each backend and driver: the baseline of item 1."""


def _overhead_rows(rows: list[dict[str, Any]]) -> list[Row]:
    out: list[Row] = []
    for r in rows:
        driver = r.get("driver", "sync")
        what = f"1. Time per saga, instant agents, {r['backend']}, {driver}, {r['path']} path"
        if "skipped" in r:
            out.append((what, "skipped", r["skipped"], "", f"≤ {r['target']}×", ""))
            continue
        stock = STOCK[(r["backend"], driver)]
        baseline = f"plain LangGraph + {stock} {show(r['plain_stock_s'], unit='ms', scale=1e3)}"
        if "plain_own_s" in r:
            own = show(r["plain_own_s"], unit="ms", scale=1e3)
            baseline += f"; on sagagraph's saver {own} ({show(r['ratio_own'], unit='×')})"
        ratio = r["ratio_stock"]
        out.append(
            (
                what,
                show(r["sagagraph_s"], unit="ms", scale=1e3),
                baseline,
                show(ratio, unit="×"),
                f"≤ {r['target']}×",
                _met(ratio["median"] <= r["target"]),
            )
        )
    return out


def _concurrency_rows(rows: list[dict[str, Any]]) -> list[Row]:
    from bench.concurrency import (
        BASELINES,
        TARGET_IDEAL_AT_1S,
        TARGET_MEMORY_AT_50MS,
        TARGET_PLAIN_AT_1S,
        TARGET_PLAIN_AT_50MS,
        TARGET_POSTGRES,
    )

    out: list[Row] = []
    for r in rows:
        latency = r["latency_s"]
        label = f"{latency * 1000:.0f} ms" if latency < 1 else f"{latency:g} s"
        store = "PostgreSQL" if r["backend"] == "postgres" else "SQLite"
        what = f"2. {r['sagas']:,} sagas at once, {label} per step, {store}: wall time"
        if "skipped" in r:
            out.append((what, "skipped", r["skipped"], "", "", ""))
            continue
        ours = show(r["sagagraph_s"], unit="s")
        ideal_target = TARGET_IDEAL_AT_1S if latency >= 1 else None
        ideal: Row = (what, ours, f"ideal (3 × latency) {_s(r['ideal_s'])}", "", "", "")
        ideal = (*ideal[:3], f"{r['vs_ideal']:.2f}×", *_target(r["vs_ideal"], ideal_target))
        out.append(ideal)
        for engine, b in r["baselines"].items():
            target = None
            if r["backend"] == "postgres":
                target = TARGET_POSTGRES
            elif latency < 1:
                target = TARGET_PLAIN_AT_50MS if engine == "plain-sqlite" else TARGET_MEMORY_AT_50MS
            elif engine == "plain-sqlite":
                target = TARGET_PLAIN_AT_1S
            baseline = f"{BASELINES[engine]} {show(b['wall_s'], unit='s')}"
            out.append((what, ours, baseline, f"{b['ratio']:.2f}×", *_target(b["ratio"], target)))
        for engine, v in (r.get("variants") or {}).items():  # sagagraph on another saver
            theirs = show(v["wall_s"], unit="s")
            for base, ratio in v["ratios"].items():
                baseline = f"{BASELINES[base]} {show(r['baselines'][base]['wall_s'], unit='s')}"
                out.append((f"{what} ({engine})", theirs, baseline, f"{ratio:.2f}×", "", ""))
    return out


def _target(ratio: float, target: float | None) -> tuple[str, str]:
    if target is None:
        return "", ""
    return f"≤ {target}×", _met(ratio <= target)


def _memory(run: dict[str, Any]) -> str:
    per_saga = show(run["per_saga_kb"], "{:.0f}", "KB a saga")
    return f"{show(run['peak_rss_mb'], '{:.0f}', 'MB')} (+{per_saga})"


def _footprint_rows(result: dict[str, Any]) -> list[Row]:
    b = result["checkpoint_bytes"]
    text_kb = _kb(b["paper_text_bytes"])
    ours, theirs = result["in_flight_sagagraph"], result["in_flight_plain"]
    in_text = "in every checkpoint" if b["plain_text_in_checkpoints"] else "not stored"
    return [
        (
            f"3. Checkpoint bytes per saga, real paper ({text_kb} of text), SQLite",
            f"{_kb(b['sagagraph_bytes'])}, text never stored",
            f"plain graph with the text in its state {_kb(b['plain_bytes'])} (text {in_text})",
            f"{b['sagagraph_bytes'] / b['plain_bytes']:.2f}×",
            "text not rewritten",
            _met(not b["sagagraph_text_in_checkpoints"]),
        ),
        (
            f"3. Peak memory, {ours['sagas']:,} sagas in flight (SQLite)",
            _memory(ours),
            f"plain LangGraph {_memory(theirs)}",
            f"{ours['peak_rss_mb']['median'] / theirs['peak_rss_mb']['median']:.2f}×",
            "",
            "",
        ),
    ]


def _token_rows(result: dict[str, Any]) -> list[Row]:
    resume = result["resume"]
    return [
        (
            f"4. Tokens per valid paper ({result['papers']} papers), openai engine",
            f"{result['sagagraph_tokens_per_paper']:,.0f}",
            f"whole paper to all three agents {result['naive_tokens_per_paper']:,.0f}",
            f"{result['ratio']:.2f}×",
            f"≤ {result['target']}×",
            _met(result["ratio"] <= result["target"]),
        ),
        (
            "4. Tokens spent again on committed steps, resume after a crash",
            f"{resume['respent_on_committed_steps']}",
            f"(the step in flight ran once: {resume['summarizer_tokens_on_resume']:,})",
            "",
            "0",
            _met(resume["respent_on_committed_steps"] == 0),
        ),
    ]


def _big_input_rows(result: dict[str, Any]) -> list[Row]:
    peak = result["peak_rss_mb"]
    return [
        (
            f"5. {result['pages']}-page PDF ({result['pdf_mb']:.1f} MB), offline pipeline",
            f"saga {show(result['saga_s'], unit='s')}; loading "
            f"{show(result['pages_per_s'], '{:.0f}', 'pages/s')}; "
            f"peak {show(peak, '{:.0f}', 'MB')}",
            "",
            "",
            f"< {result['target_mb']} MB",
            _met(peak["max"] < result["target_mb"] and result["status"] == "completed"),
        )
    ]


def _workers_rows(rows: list[dict[str, Any]]) -> list[Row]:
    out: list[Row] = []
    for r in rows:
        store = "PostgreSQL" if r["backend"] == "postgres" else "one SQLite file"
        if "skipped" in r:
            out.append((f"6. Workers, {store}", "skipped", r["skipped"], "", "", ""))
            continue
        what = (
            f"6. {r['sagas']} submitted sagas, {r['latency_s'] * 1000:.0f} ms per step, "
            f"{r['workers']} worker process(es) × {r['concurrency']}, {store}: wall time"
        )
        ideal = f"ideal (slots only) {_s(r['ideal_s'])}"
        out.append((what, show(r["wall_s"], unit="s"), ideal, f"{r['vs_ideal']:.2f}×", "", ""))
    return out


def _storage_rows(result: Any) -> list[Row]:
    from bench.storage import TARGET_AFTER_KB, TARGET_BEFORE

    if not isinstance(result, list):
        return [("10. Bytes a saga, SQLite", "failed", str(result.get("failed", "")), "", "", "")]
    out: list[Row] = []
    for r in result:
        what = f"10. Bytes a saga, `{r['scheme']}:///`, {r['sagas']:,} sagas, one in five failing"
        per = r["bytes_per_saga"]
        ours, plain, after = per["sagagraph"], per["plain"], per["sagagraph_after_prune"]
        ratio = ours["file"] / plain["file"]
        baseline = f"plain LangGraph + SqliteSaver {_kb(plain['file'])}"
        out.append(
            (
                f"{what}: file",
                _kb(ours["file"]),
                baseline,
                f"{ratio:.2f}×",
                *_target(ratio, TARGET_BEFORE),
            )
        )
        kb = after["file"] / 1024
        out.append(
            (
                f"{what}: file after prune",
                _kb(after["file"]),
                "",
                "",
                f"≤ {TARGET_AFTER_KB:g} KB",
                _met(kb <= TARGET_AFTER_KB),
            )
        )
    return out


def plugged_rows(key: str, name: str, result: Any) -> list[Row]:
    """Rows of an item whose module another branch provides; "not available" without it."""
    if isinstance(result, dict) and "unavailable" in result:
        return [(f"{key}. {name}", "not available", str(result["unavailable"]), "", "", "")]
    import importlib

    try:
        module = importlib.import_module(f"bench.{name}")
    except ImportError as error:
        return [(f"{key}. {name}", "not available", f"bench.{name}: {error}", "", "", "")]
    rows: list[Row] = module.table_rows(result)
    return rows


def table(results: dict[str, Any]) -> str:
    """The markdown table of every measurement present in ``results``."""
    rows: list[Row] = []
    failed = {name: r for name, r in results.items() if isinstance(r, dict) and "failed" in r}
    for name, r in failed.items():
        rows.append((f"{name}: the item failed", "failed", str(r["failed"]), "", "", "**no**"))
    results = {name: r for name, r in results.items() if name not in failed}
    if "overhead" in results:
        rows += _overhead_rows(results["overhead"])
    if "concurrency" in results:
        rows += _concurrency_rows(results["concurrency"])
    if "footprint" in results:
        rows += _footprint_rows(results["footprint"])
    if "tokens" in results:
        rows += _token_rows(results["tokens"])
    if "big_input" in results:
        rows += _big_input_rows(results["big_input"])
    if "workers" in results:
        rows += _workers_rows(results["workers"])
    for key, name in (("7", "startup"), ("8", "history")):
        if name in results:
            rows += plugged_rows(key, name, results[name])
    if "storage" in results:
        rows += _storage_rows(results["storage"])
    if "peers" in results:
        from bench.peers import table_rows

        rows += table_rows(results["peers"])
    header: Row = ("Measure", "sagagraph", "Baseline", "Ratio", "Target", "Met")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def machine_line(machine: dict[str, Any], date: str) -> str:
    return (
        f"Measured {date} on {machine['cpu']}, {machine['cores']} cores, "
        f"{machine['memory_gb']:g} GB RAM, {machine['os']}; Python {machine['python']}, "
        f"langgraph {machine['langgraph']}, langgraph-checkpoint-sqlite "
        f"{machine['langgraph-checkpoint-sqlite']}, langgraph-checkpoint-postgres "
        f"{machine['langgraph-checkpoint-postgres']}."
    )


NOTES = {
    "overhead": "1: sagas run one after another, sync (`run_saga` against `invoke`) and "
    "async (`arun_saga` against `ainvoke`), on a plain graph with the same three nodes and "
    "one compensation node; the baseline is plain LangGraph on LangGraph's stock saver for "
    "the same database (what a LangGraph user runs), and the same plain graph on sagagraph's "
    'own saver is shown beside it; `durability="sync"` everywhere, fresh databases per row; '
    "the ratio is taken per round (median [range] over the rounds). On the failure path "
    "sagagraph checkpoints each compensation on its own (a crash re-runs at most one of "
    "them), where the plain graph's one compensation node undoes everything in one superstep.",
    "concurrency": "2: `arun_saga` on `open_async_checkpointer` (LangGraph's async SQLite or "
    "PostgreSQL saver, adding the saga summary) against `ainvoke` with async nodes and "
    "edges on LangGraph's `AsyncSqliteSaver`, `AsyncPostgresSaver`, or `InMemorySaver` "
    "(not durable: LangGraph's own floor); a fresh process and database per run, the "
    "engines alternating; ratios of the medians.",
    "footprint": "3: the paper saga with the offline engine; the plain graph keeps the "
    "paper's text in its state, as LangGraph tutorials do. Memory: peak resident set of a "
    "fresh process per run, 2 s per step so that every saga is in flight at once.",
    "tokens": "4: counts, the same on every run (one run); counted by the local "
    "OpenAI-compatible test server (about 4 characters a token), replies scripted alike "
    "for both sides; sagagraph's validator reads the outline, the first page and the "
    "reference evidence, the naive pipeline sends the whole paper to all three agents.",
    "storage": "10: `bench/storage.py`: the three-step saga with instant fake agents, one in "
    "five failing at its last step, on a fresh SQLite file; the file after `VACUUM` divided "
    "by the sagas, before and after `SagaService.prune` (finished sagas keep their last "
    "checkpoint), beside plain LangGraph's like graph on `SqliteSaver`.",
    "big_input": "5: a generated text PDF, loaded with pypdf, then the whole offline saga.",
    "peers": "9: `../shared/peers/run_all.sh` run once with every row together (P1 plain "
    "LangGraph, P3 agent-saga, PX sagagraph on SQLite and PostgreSQL), the same number of "
    "batches or runs for every row; its own workload, so its figures compare rows, not "
    "items 1-2; the full output is kept under bench/results/peers-*/.",
    "workers": "6: `sagagraph submit` then `sagagraph worker --concurrency 16` processes on "
    "this machine, the paper pipeline with the openai engine against the scripted server "
    "(one call per step, 200 ms each); from the first saga taken to the last one finished. "
    "PostgreSQL is the shared state workers on several machines use; the SQLite rows are "
    "the same runs on one file (one machine only). The ideal counts only the workers' slots: "
    "ceil(sagas / (workers × 16)) × 3 × 200 ms.",
}


SPREAD = "Figures are medians with their range [min–max] over the runs each item names."


def markdown(results: dict[str, Any], machine: dict[str, Any], date: str, command: str) -> str:
    notes = " ".join([SPREAD] + [NOTES[name] for name in NOTES if name in results])
    parts = [table(results)]
    if "peers" in results:
        from bench.peers import peer_table

        peers = peer_table(results["peers"])
        if peers:
            runs, where = results["peers"]["runs"], results["peers"]["dir"]
            intro = f"Peer harness, one run, all rows together ({runs} runs a figure; {where}):"
            parts.append(f"{intro}\n\n{peers}")
    parts += [notes, machine_line(machine, date), f"Reproduce with `{command}`."]
    return "\n\n".join(parts)


def missed(results: dict[str, Any]) -> list[str]:
    """The measures whose target was not met."""
    return [line.split("|")[1].strip() for line in table(results).splitlines() if "**no**" in line]
