"""Celery worker processes on real RabbitMQ and PostgreSQL: sagas run to their final state,
priorities, cancel of a running saga, the poison saga and its requeue, and a saga of another
factory (the travel booking) from its recorded reference.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from sagagraph.cli.entry import main as sagagraph
from sagagraph.graph.runner import saga_status
from sagagraph.workers.control import NOTHING_STARTED
from tests.support.queue_support import (
    DIE_EXIT_CODE,
    PAPER_FILES,
    WorkerProcess,
    commit_times,
    counting_server,
    files_of,
    wait_for,
    worker_env,
    write_papers,
)

pytestmark = [pytest.mark.postgres, pytest.mark.rabbitmq, pytest.mark.slow]

INCOMPLETE = Path(__file__).resolve().parents[2] / "examples" / "papers" / "incomplete_paper.md"
TRAVEL = "examples.travel_booking.worker:travel_saga"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    capsys.readouterr()
    code = sagagraph(list(args))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def submit(capsys: pytest.CaptureFixture[str], env: dict[str, Any], *args: str) -> list[str]:
    return [r["saga_id"] for r in cli(capsys, "submit", *args, *env["flags"], "--json")]


def worker(env: dict[str, Any], tmp_path: Path, *extra: str, **kw: Any) -> WorkerProcess:
    flags = ["--db", env["db"], "--queue", env["queue"], *extra]
    return WorkerProcess(flags, cwd=tmp_path, env=kw.pop("process_env", worker_env()), **kw)


def final(readers: Any, ids: list[str]) -> bool:
    return all(saga_status(readers, i)["status"] in ("completed", "rolled_back") for i in ids)


def test_a_worker_runs_queued_sagas_to_their_final_state_and_sigterm_stops_it(
    tmp_path: Path, env: dict[str, Any], readers: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    complete, other = write_papers(tmp_path / "papers", 2)
    good, short = submit(capsys, env, str(complete), str(INCOMPLETE))
    (failing,) = submit(capsys, env, str(other), "--fail-at", "summarizer")
    ids = [good, short, failing]
    pool = worker(env, tmp_path, "--concurrency", "2")
    try:
        wait_for(lambda: final(readers, ids), timeout=120, what="every saga final")
    finally:
        assert pool.terminate() == 0, "\n".join(pool.lines)
    views = {i: saga_status(readers, i) for i in ids}
    assert views[good]["status"] == "completed"
    assert sorted(files_of(env["outputs"], good)) == sorted(PAPER_FILES.values())
    assert views[short]["status"] == "rolled_back" and views[short]["reason"]
    assert views[failing]["compensated"] == ["summarizer", "reviewer", "validator"]
    assert files_of(env["outputs"], short) == files_of(env["outputs"], failing) == []
    # One line per saga taken and one per saga ended.
    assert [sum(1 for line in pool.lines if i in line) for i in ids] == [2, 2, 2]
    summary = cli(capsys, "workers", *env["flags"][:4], "--json")
    assert summary["finished_by_status"] == {"completed": 1, "rolled_back": 2}
    assert (summary["queued"], summary["messages_waiting"]) == (0, 0)


def test_waiting_sagas_start_in_priority_order(
    tmp_path: Path, env: dict[str, Any], readers: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    papers = write_papers(tmp_path / "papers", 4)
    priorities = [0, 9, 3, 6]
    ids = []
    for paper, priority in zip(papers, priorities, strict=True):
        ids += submit(capsys, env, str(paper), "--priority", str(priority))
    pool = worker(env, tmp_path, "--concurrency", "1")
    try:
        wait_for(lambda: final(readers, ids), timeout=120, what="every saga final")
    finally:
        assert pool.terminate() == 0
    started = {i: commit_times(readers, i)["validator"] for i in ids}
    by_start = sorted(ids, key=started.__getitem__)
    by_priority = [i for _, i in sorted(zip(priorities, ids, strict=True), reverse=True)]
    assert by_start == by_priority


def test_a_running_saga_cancelled_compensates_at_its_next_step_boundary(
    tmp_path: Path,
    env: dict[str, Any],
    readers: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (paper,) = write_papers(tmp_path / "papers", 1)
    with counting_server(1, delay=1.5) as (server, model):
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-submitter")
        flags = [*env["flags"][:6], "--llm", "openai"]
        (saga_id,) = [r["saga_id"] for r in cli(capsys, "submit", str(paper), *flags, "--json")]
        pool = worker(env, tmp_path, process_env=worker_env(server.base_url))
        try:
            wait_for(lambda: model.calls.get((0, "validator")), timeout=60, what="the validator")
            view = cli(
                capsys,
                "cancel",
                saga_id,
                "--by",
                "alice",
                "--reason",
                "wrong paper",
                *env["flags"][:4],
                "--json",
            )
            assert view["cancel"].startswith("requested")
            wait_for(lambda: final(readers, [saga_id]), timeout=60, what="the saga final")
        finally:
            assert pool.terminate() == 0
    view = saga_status(readers, saga_id)
    assert view["status"] == "rolled_back" and view["completed"] == []
    assert view["compensated"][-1] == "validator"
    assert any(
        e.get("by") == "alice" and "cancelled: wrong paper" in e["detail"] for e in view["events"]
    )
    assert files_of(env["outputs"], saga_id) == []
    # It stopped at a step boundary: the summarizer never asked the model.
    assert (0, "summarizer") not in model.calls


def test_a_saga_that_kills_its_worker_three_times_is_dead_lettered_then_requeued(
    tmp_path: Path, env: dict[str, Any], readers: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    papers = write_papers(tmp_path / "papers", 3)
    poison = f"saga-poison-{uuid.uuid4().hex[:8]}"
    (first, second) = submit(capsys, env, str(papers[1]), str(papers[2]))
    submit(capsys, env, str(papers[0]), "--saga-id", poison)
    others = [first, second]
    workers = [worker(env, tmp_path, die_on=poison) for _ in range(2)]
    deaths = 0

    def settled() -> bool:
        nonlocal deaths
        done = final(readers, others) and saga_status(readers, poison)["dead_letter"]
        for i, w in enumerate(workers):
            if not w.alive():
                assert w.reap() == DIE_EXIT_CODE, "\n".join(w.lines)
                deaths += 1
                workers[i] = worker(env, tmp_path, die_on=poison)
        return bool(done)

    try:
        wait_for(settled, timeout=240, what="the poison dead-lettered", every=0.5)
    finally:
        codes = [w.terminate() for w in workers]
    assert codes == [0, 0]
    assert deaths == 3  # one per delivery, and no more
    view = saga_status(readers, poison)
    assert "after 3 deliveries" in view["dead_letter"]["detail"]
    summary = cli(capsys, "workers", *env["flags"][:4], "--json")
    assert [s["saga_id"] for s in summary["needs_operator"]] == [poison]
    listed = {r["saga_id"]: r for r in cli(capsys, "list", *env["flags"][:2], "--json")}
    assert listed[poison]["dead_lettered"] and not listed[poison]["orphaned"]

    requeued = cli(
        capsys, "requeue", poison, "--note", "fixed the store", *env["flags"][:4], "--json"
    )
    assert requeued["dead_letter"] is None
    healthy = worker(env, tmp_path)
    try:
        wait_for(lambda: final(readers, [poison]), timeout=120, what="the requeued saga")
    finally:
        assert healthy.terminate() == 0
    assert saga_status(readers, poison)["status"] == "completed"


def test_a_worker_runs_the_travel_booking_from_its_recorded_reference(
    tmp_path: Path, env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from examples.travel_booking.run import FLIGHT, open_demo_stores
    from examples.travel_booking.worker import travel_saga
    from sagagraph import build_saga_graph, open_checkpointer

    data = tmp_path / "travel"
    stores = open_demo_stores(data)
    trip = {"flight": FLIGHT, "hotel": "harbour-view", "nights": 3, "data": str(data)}
    inputs = [json.dumps(trip | {"traveller": who}) for who in ("ada", "bob")]
    flags = ["--app", TRAVEL, *env["flags"][:4]]
    ada, bob = [
        r["saga_id"]
        for r in cli(capsys, "submit", "--input", inputs[0], "--input", inputs[1], *flags, "--json")
    ]
    pool = worker(env, tmp_path, "--app", TRAVEL, "--concurrency", "2")
    with open_checkpointer(env["db"]) as checkpointer:
        app = build_saga_graph(travel_saga(trip)).compile(checkpointer=checkpointer)

        def done() -> bool:
            return all(
                saga_status(app, i)["status"] in ("completed", "rolled_back") for i in (ada, bob)
            )

        try:
            wait_for(done, timeout=120, what="both trips final")
        finally:
            assert pool.terminate() == 0
        assert saga_status(app, ada)["status"] == "completed"
        assert saga_status(app, bob)["status"] == "rolled_back"
        assert saga_status(app, bob)["compensated"][-2:] == ["reserve_hotel", "book_flight"]
    # Bob's seat came back; Ada's is taken once.
    assert stores.airline.seats_free(FLIGHT) == 119


def test_a_hung_saga_goes_back_to_the_queue_after_the_time_limit(
    tmp_path: Path, env: dict[str, Any], readers: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    (paper,) = write_papers(tmp_path / "papers", 1)
    (saga_id,) = submit(capsys, env, str(paper))
    marker = tmp_path / "hung"
    pool = worker(
        env,
        tmp_path,
        "--pool",
        "prefork",
        "--time-limit",
        "6",
        die_once=f"{saga_id}:reviewer:hang-write:{marker}",
    )
    try:
        wait_for(lambda: final(readers, [saga_id]), timeout=120, what="the saga final")
    finally:
        assert pool.terminate() == 0
    assert marker.exists(), "the reviewer never hung"
    view = saga_status(readers, saga_id)
    assert view["status"] == "completed"
    assert pool.count(f"took saga {saga_id} (delivery 2 of") == 1
    assert sorted(files_of(env["outputs"], saga_id)) == sorted(PAPER_FILES.values())


def test_a_delayed_saga_waits_and_a_cancel_reaches_it_in_the_worker(
    tmp_path: Path, env: dict[str, Any], readers: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    later, now = write_papers(tmp_path / "papers", 2)
    (delayed,) = submit(capsys, env, str(later), "--countdown", "3600")
    (prompt,) = submit(capsys, env, str(now))
    pool = worker(env, tmp_path, "--concurrency", "2")
    try:
        wait_for(lambda: final(readers, [prompt]), timeout=120, what="the prompt saga")
        # The delayed one waits in the worker (Celery holds it until its time), untouched.
        assert saga_status(readers, delayed)["status"] == "queued"
        view = cli(
            capsys,
            "cancel",
            delayed,
            "--by",
            "bob",
            "--reason",
            "not needed",
            *env["flags"][:4],
            "--json",
        )
        assert view["status"] == "rolled_back" and view["cancel"] == NOTHING_STARTED
    finally:
        assert pool.terminate() == 0
    assert pool.count(f"took saga {delayed}") == 0
    assert saga_status(readers, prompt)["status"] == "completed"
    assert files_of(env["outputs"], delayed) == []
