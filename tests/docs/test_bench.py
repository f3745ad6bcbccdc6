"""The benchmark's plumbing: spreads, the peer harness's parsing and checks, the items' rows.

No timing is asserted: the figures below are made up, and the one real measurement only has
to run and produce a figure of every side.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from bench import peers
from bench.__main__ import _run_plugged
from bench.common import machine, show, spread
from bench.overhead import measure
from bench.report import markdown, missed, plugged_rows, table


def test_spread_and_show() -> None:
    figure = spread([3.0, 1.0, 2.0, 10.0, 4.0])
    assert (figure["median"], figure["min"], figure["max"], figure["runs"]) == (3.0, 1.0, 10.0, 5)
    assert show(figure, "{:.1f}", "ms") == "3.0 [1.0–10.0] ms"
    assert show(figure, "{:.0f}", "×") == "3 [1–10]×"
    assert show(spread([0.002]), unit="ms", scale=1e3) == "2.00 ms"
    with pytest.raises(ValueError):
        spread([])


def _seq(samples: list[float]) -> dict[str, Any]:
    return {"n": 500, "runs": len(samples), "median_sps": 0, "samples_sps": samples}


def _conc(samples: list[float]) -> dict[str, Any]:
    return {
        "n": 500,
        "runs": len(samples),
        "latency_ms": 50,
        "ideal_ms": 150,
        "samples_ms": samples,
    }


def _jsonl(ours_w1: list[float], ours_conc: list[float]) -> list[str]:
    records = [
        {"peer": peers.PLAIN_SYNC, "phase": "seq", "store": "SqliteSaver sync"}
        | {"W1": _seq([100, 110, 120, 90, 105]), "W2": _seq([80, 70, 75, 72, 90])},
        {"peer": peers.PLAIN_SYNC, "phase": "conc", "W1c": _conc([5000] * 5)}
        | {"W2c": _conc([5100] * 5)},
        {"peer": peers.OURS_SQLITE, "phase": "seq", "store": "sagagraph"}
        | {"W1": _seq(ours_w1), "W2": _seq([70, 71, 72, 73, 74])},
        {"peer": peers.OURS_SQLITE, "phase": "conc", "W1c": _conc(ours_conc)},
        {"peer": "P3 agent-saga FileWAL", "phase": "seq", "error": "rc=124: timed out"},
    ]
    return [json.dumps(r) for r in records] + [""]


def test_peer_results_become_rows_and_checks() -> None:
    rows = peers.parse(_jsonl([95, 99, 100, 101, 120], [3000, 3100, 2900, 3500, 3050]))
    by_peer = {r["peer"]: r for r in rows}
    assert by_peer[peers.PLAIN_SYNC]["seq_W1"]["median"] == 105
    assert by_peer[peers.PLAIN_SYNC]["conc_W1"]["ideal_ms"] == 150
    assert by_peer["P3 agent-saga FileWAL"]["errors"] == ["seq: rc=124: timed out"]
    result = {"peers": rows}
    checks = peers.table_rows(result)
    assert [row[-1] for row in checks] == ["yes", "yes", "yes"]  # 100/105, 72/75, 3050 < 5000
    text = peers.peer_table(result)
    assert "105 [90–120]" in text and "FAILED" in text and "×33.3 ideal" in text


def test_peer_checks_fail_when_sagagraph_is_behind() -> None:
    rows = peers.parse(_jsonl([50, 60, 70, 80, 90], [6000] * 5))
    checks = peers.table_rows({"peers": rows})
    assert [row[-1] for row in checks] == ["**no**", "yes", "**no**"]  # 70/105 < 0.9; 6000 > 5000
    assert len(missed({"peers": {"peers": rows}})) == 2


def test_peers_skipped_without_the_harness(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(peers, "HARNESS", tmp_path / "no-peers")
    result = peers.run(quick=True)
    assert "not found" in result["skipped"]
    rows = peers.table_rows(result)
    assert rows[0][1] == "skipped" and not missed({"peers": result})
    assert "9. Peer harness" in markdown({"peers": result}, machine(), "today", "make bench")


def test_peer_harness_knobs(tmp_path: Path) -> None:
    env = peers.harness_env(tmp_path, Path("/x/python"), quick=False)
    assert env["RUNS"] == env["CONC_RUNS"] == env["CONC_W2_RUNS"] == "5"
    assert env["ONLY"] == "P1|P3|PX" and env["PEERS_WORKDIR"].startswith(str(tmp_path))
    assert "PX-sagagraph-pg|/x/python|px_sagagraph.py|postgres" in env["EXTRA_PEERS"].split(";")
    assert "PYTHONPATH" not in env


def test_the_interleaved_peer_workloads_run_both_sides(tmp_path: Path) -> None:
    """bench.peers_interleaved: the harness's W2 on sagagraph SQLite and on plain LangGraph,
    every saga checked by the harness's own ``verify`` (no timing asserted)."""
    from bench.peers_interleaved import measure

    if not (peers.HARNESS / "common.py").is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"peer harness not found at {peers.HARNESS}")
        pytest.skip(f"peer harness not found at {peers.HARNESS}")
    result = measure("W2", rounds=1, sagas=3, folder=tmp_path)
    assert result["sagagraph_sps"]["runs"] == result["plain_sps"]["runs"] == 1
    assert result["ratio"]["median"] > 0


def test_items_of_other_branches_are_reported_missing() -> None:
    result = _run_plugged("no_such_item", quick=True)
    assert "not available" in result["unavailable"]
    rows = plugged_rows("7", "no_such_item", result)
    assert rows[0][:2] == ("7. no_such_item", "not available")
    assert "not available" in table({"startup": result})


def test_an_item_that_fails_is_reported_missed_and_the_next_items_still_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """One item's error (item 6 once lost a worker) does not cost the run its later items."""
    import bench.__main__ as bench_main

    ran: list[str] = []

    def run_item(name: str, quick: bool, args: Any) -> Any:
        ran.append(name)
        if name == "footprint":
            raise RuntimeError("first line\nworker: database is locked")
        return {"unavailable": "made up"}

    monkeypatch.setattr(bench_main, "_run_item", run_item)
    monkeypatch.setattr(bench_main, "RESULTS", tmp_path)
    monkeypatch.setattr(bench_main, "machine", lambda: {"cpu": "cpu", "cores": 2})
    monkeypatch.setattr(bench_main, "markdown", lambda results, *a: json.dumps(results))
    assert bench_main.main(["--only", "3,7", "--strict"]) == 1
    assert ran == ["footprint", "startup"]
    rows = table({"footprint": {"failed": "RuntimeError: worker: database is locked"}})
    assert "failed" in rows and "**no**" in rows
    assert missed({"footprint": {"failed": "RuntimeError: x"}}) == ["footprint: the item failed"]


@pytest.mark.parametrize("driver", ["sync", "async"])
@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_overhead_measures_every_side(backend: str, driver: str, tmp_path: Path) -> None:
    row = measure(backend, driver, "summarizer", rounds=2, per_round=1, tmp=tmp_path)
    sides = {"sagagraph_s", "plain_stock_s"} | ({"plain_own_s"} if backend == "sqlite" else set())
    assert sides <= set(row)
    assert all(row[side]["runs"] == 2 and row[side]["median"] > 0 for side in sides)
    rendered = table(
        {
            "overhead": [
                row | {"backend": backend, "driver": driver, "path": "failure", "target": 1.3}
            ]
        }
    )
    assert ("AsyncSqliteSaver" if (backend, driver) == ("sqlite", "async") else "Saver") in rendered


def _scenario(backend: str, latency: float, ours: float, baselines: dict[str, float]) -> Any:
    return {
        "backend": backend,
        "latency_s": latency,
        "sagas": 500,
        "ideal_s": 3 * latency,
        "sagagraph_s": spread([ours] * 5),
        "vs_ideal": ours / (3 * latency),
        "baselines": {
            engine: {"wall_s": spread([wall] * 5), "ratio": ours / wall}
            for engine, wall in baselines.items()
        },
    }


def test_concurrency_targets() -> None:
    rows = [
        _scenario("sqlite", 0.05, 1.0, {"plain-sqlite": 2.5, "plain-memory": 0.8}),
        _scenario("sqlite", 1.0, 4.0, {"plain-sqlite": 4.4}),
        _scenario("postgres", 0.05, 6.0, {"plain-postgres": 5.0}),
    ]
    lines = table({"concurrency": rows}).splitlines()[2:]
    assert [line.rsplit("|", 2)[-2].strip() for line in lines] == [
        "",  # 50 ms: the ideal is shown, not a target
        "yes",  # 1.0 / 2.5 <= 0.5
        "**no**",  # 1.0 / 0.8 > 1.2
        "**no**",  # 4.0 / 3.0 > 1.3
        "yes",  # 4.0 / 4.4 <= 1.02: plain LangGraph on the same saver at 1 s a step
        "",
        "**no**",  # 6.0 / 5.0 > 1.0 on PostgreSQL
    ]
    assert "AsyncPostgresSaver 5.00 [5.00–5.00] s" in lines[-1]
