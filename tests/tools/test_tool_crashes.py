"""Kill -9 at every tool-call boundary, then recover from a new process.

Boundaries: right before and right after each partner call an agent's tool makes (forward),
and right before and right after each undo. After the recovery every partner is exactly as
it began (rollback) or holds one booking per call (completion); a call whose result was
checkpointed is never made again, and nothing is undone twice (each cancel or refund gives
something back once). The saga runs on SQLite and PostgreSQL; the middleware alone on SQLite.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from examples.travel_swarm.partners import TravelStores, holdings, open_partners

# Each case kills a real worker process at a boundary and resumes it from a new one.
pytestmark = pytest.mark.kill_fleet

TRIP_COST = 42_000 + 3 * 9_500


def worker(*args: str, expect_kill: bool = False) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.tool_crash_worker", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if expect_kill:
        assert done.returncode == -9, done.stderr[-2000:]
        return None
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def journal(folder: Path) -> list[dict[str, str]]:
    path = folder / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def calls(entries: list[dict[str, str]], *ops: str) -> Counter[str]:
    return Counter(e["key"] for e in entries if e["op"] in ops)


FORWARD = ("airline.book", "hotel.reserve", "wallet.charge")
UNDO = ("airline.cancel", "hotel.cancel", "wallet.refund")

# Ada can pay: crashes on the way forward.
FORWARD_BOUNDARIES = [
    "airline.book:call-1:before",
    "airline.book:call-1:after",
    "hotel.reserve:call-1:before",  # the call that finds the first hotel FULL
    "hotel.reserve:call-2:before",
    "hotel.reserve:call-2:after",
    "wallet.charge:call-1:before",
    "wallet.charge:call-1:after",
]
# Bob cannot pay: crashes while the saga undoes, newest first.
UNDO_BOUNDARIES = [
    "wallet.charge:call-1:before",
    "wallet.refund:call-1:before",
    "wallet.refund:call-1:after",
    "hotel.cancel:call-2:before",
    "hotel.cancel:call-2:after",
    "airline.cancel:call-1:before",
    "airline.cancel:call-1:after",
]


def with_backends(boundaries: list[str]) -> list[tuple[str, str]]:
    """Every boundary on SQLite, and those of ``POSTGRES_CASES`` on PostgreSQL too.

    Each case starts two interpreters; the whole matrix on both backends would take minutes
    on a small machine, and the backends differ only in where the checkpoints go.
    """
    return [(b, "sqlite") for b in boundaries] + [
        (b, "postgres") for b in boundaries if b in POSTGRES_CASES
    ]


@pytest.fixture
def db(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if backend == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        return url
    return f"sqlite:///{tmp_path / 'sagas.sqlite'}"


POSTGRES_CASES = {"hotel.reserve:call-2:after", "hotel.cancel:call-2:after"}


def fresh(folder: Path, traveller: str) -> dict[str, Any]:
    stores: TravelStores = open_partners(folder)
    return holdings(stores, traveller)


def crashed_key(boundary: str, saga_id: str) -> str:
    op, call, _ = boundary.split(":")
    step = {"airline": "flight", "hotel": "hotel", "wallet": "billing"}[op.split(".")[0]]
    return f"{saga_id}:{step}:{call}"


def assert_forward_calls_not_repeated(entries: list[dict[str, str]], crashed: str) -> None:
    """Each forward call once; only the one the crash cut short may have run again."""
    for key, count in calls(entries, *FORWARD).items():
        assert count == (count if key == crashed else 1), (key, entries)
        assert count <= 2


@pytest.mark.parametrize(("boundary", "backend"), with_backends(FORWARD_BOUNDARIES))
@pytest.mark.parametrize("recovery", ["forward", "compensate"])
def test_a_swarm_killed_on_the_way_forward_recovers_all_or_nothing(
    boundary: str, recovery: str, db: str, tmp_path: Path
) -> None:
    data = tmp_path / "partners"
    before = fresh(data, "ada")
    sid = f"trip-{abs(hash((boundary, recovery, db))) % 10**8}"
    worker(
        "saga-run",
        "--data",
        str(data),
        "--db",
        db,
        "--saga-id",
        sid,
        "--traveller",
        "ada",
        "--crash",
        boundary,
        expect_kill=True,
    )

    extra = ["--compensate"] if recovery == "compensate" else []
    views = worker("saga-recover", "--data", str(data), "--db", db, *extra)

    view = next(v for v in views if v["saga_id"] == sid)
    after = holdings(open_partners(data), "ada")
    entries = journal(data)
    assert_forward_calls_not_repeated(entries, crashed_key(boundary, sid))
    assert all(
        n == 1 for n in calls([e for e in entries if e["outcome"] == "gave_back"], *UNDO).values()
    )
    if recovery == "forward":
        assert view["status"] == "completed", view["reason"]
        assert after["live"] == {
            "airline": [f"{sid}:flight:call-1"],
            "hotel": [f"{sid}:hotel:call-2"],
            "wallet": [f"{sid}:billing:call-1"],
        }
        assert after["seats_free"] == before["seats_free"] - 1
        assert after["balance_cents"] == before["balance_cents"] - TRIP_COST
    else:
        assert view["status"] == "rolled_back", view["reason"]
        assert after == before
        # Whatever took effect was undone once, by its key (also a call whose result was lost).
        effects = {e["key"] for e in entries if e["op"] in FORWARD and e["outcome"] == "ok"}
        given_back = calls([e for e in entries if e["outcome"] == "gave_back"], *UNDO)
        assert set(given_back) == effects


@pytest.mark.parametrize(("boundary", "backend"), with_backends(UNDO_BOUNDARIES))
def test_a_swarm_killed_while_undoing_finishes_its_rollback(
    boundary: str, db: str, tmp_path: Path
) -> None:
    data = tmp_path / "partners"
    before = fresh(data, "bob")
    sid = f"trip-{abs(hash((boundary, db))) % 10**8}"
    worker(
        "saga-run",
        "--data",
        str(data),
        "--db",
        db,
        "--saga-id",
        sid,
        "--traveller",
        "bob",
        "--crash",
        boundary,
        expect_kill=True,
    )

    views = worker("saga-recover", "--data", str(data), "--db", db)

    view = next(v for v in views if v["saga_id"] == sid)
    assert view["status"] == "rolled_back", view["reason"]
    assert view["compensated"] == ["billing", "hotel", "flight"]
    assert holdings(open_partners(data), "bob") == before
    entries = journal(data)
    assert_forward_calls_not_repeated(entries, crashed_key(boundary, sid))
    given_back = calls([e for e in entries if e["outcome"] == "gave_back"], *UNDO)
    assert given_back == {f"{sid}:flight:call-1": 1, f"{sid}:hotel:call-2": 1}
    # The trail names each call once (a run cut short has its calls recorded by the
    # compensation), and each undo once, newest first, whatever the crash cut.
    made = [e["key"] for e in view["events"] if e["action"] == "tool_call"]
    assert sorted(made) == sorted(
        [
            f"{sid}:flight:call-1",
            f"{sid}:hotel:call-1",
            f"{sid}:hotel:call-2",
            f"{sid}:billing:call-1",
        ]
    )
    undone = [
        e["key"] for e in view["events"] if e["action"] == "tool_undo" and e["outcome"] == "ok"
    ]
    assert undone == [f"{sid}:billing:call-1", f"{sid}:hotel:call-2", f"{sid}:flight:call-1"]


AGENT_FORWARD = [
    "airline.book:call-1:before",
    "airline.book:call-1:after",
    "hotel.reserve:call-2:after",
    "wallet.charge:call-3:after",
]
AGENT_UNDO = [
    "hotel.cancel:call-2:before",
    "hotel.cancel:call-2:after",
    "airline.cancel:call-1:after",
]


@pytest.mark.parametrize("boundary", AGENT_FORWARD)
@pytest.mark.parametrize("recovery", ["agent-resume", "agent-rollback"])
def test_the_middleware_alone_recovers_a_killed_agent(
    boundary: str, recovery: str, tmp_path: Path
) -> None:
    data, db = tmp_path / "partners", str(tmp_path / "agent.sqlite")
    before = fresh(data, "ada")
    worker(
        "agent-run",
        "--data",
        str(data),
        "--db",
        db,
        "--thread",
        "t1",
        "--traveller",
        "ada",
        "--crash",
        boundary,
        expect_kill=True,
    )

    outcome = worker(recovery, "--data", str(data), "--db", db, "--thread", "t1")

    assert outcome == {"outcome": "ok", "error": None}
    after = holdings(open_partners(data), "ada")
    entries = journal(data)
    crashed = f"t1:agent:{boundary.split(':')[1]}"
    assert_forward_calls_not_repeated(entries, crashed)
    if recovery == "agent-resume":
        assert after["live"] == {
            "airline": ["t1:agent:call-1"],
            "hotel": ["t1:agent:call-2"],
            "wallet": ["t1:agent:call-3"],
        }
        assert after["balance_cents"] == before["balance_cents"] - TRIP_COST
    else:
        assert after == before
        given_back = calls([e for e in entries if e["outcome"] == "gave_back"], *UNDO)
        assert all(n == 1 for n in given_back.values())


@pytest.mark.parametrize("boundary", AGENT_UNDO)
def test_the_middleware_alone_finishes_a_rollback_killed_half_way(
    boundary: str, tmp_path: Path
) -> None:
    data, db = tmp_path / "partners", str(tmp_path / "agent.sqlite")
    before = fresh(data, "bob")
    worker(
        "agent-run",
        "--data",
        str(data),
        "--db",
        db,
        "--thread",
        "t1",
        "--traveller",
        "bob",
        "--crash",
        boundary,
        expect_kill=True,
    )

    # Resuming re-runs the failed call: it fails again, and the run's calls are undone.
    outcome = worker("agent-resume", "--data", str(data), "--db", db, "--thread", "t1")

    assert outcome["outcome"] == "error" and "INSUFFICIENT_FUNDS" in outcome["error"]
    assert holdings(open_partners(data), "bob") == before
    given_back = calls([e for e in journal(data) if e["outcome"] == "gave_back"], *UNDO)
    assert given_back == {"t1:agent:call-1": 1, "t1:agent:call-2": 1}
    # A second resume raises again without undoing anything again.
    again = worker("agent-resume", "--data", str(data), "--db", db, "--thread", "t1")
    assert again["outcome"] == "error"
    assert calls([e for e in journal(data) if e["outcome"] == "gave_back"], *UNDO) == given_back
