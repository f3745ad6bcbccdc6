"""The work queue in one process: submit records ``queued`` first, a worker finishes sagas and
acknowledges them, leases keep a held saga waiting, bad input and a dead broker leave nothing.

Real RabbitMQ (a queue of its own per test) and real PostgreSQL; the paper saga with the
offline engine. Worker processes, SIGKILL and SIGTERM are in ``test_workers_fleet.py``.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.cli.apps import paper_app
from sagagraph.cli.entry import main as sagagraph
from sagagraph.config import Settings
from sagagraph.errors import BusError, ConfigurationError, SagaBusyError
from sagagraph.graph import worker as worker_module
from sagagraph.graph.leases import saga_lease
from sagagraph.graph.work_queue import delete_queues, queue_address, queue_counts
from sagagraph.graph.worker import arun_worker
from tests.support.queue_support import PAPER_FILES, files_of, unique_queue, write_papers

pytestmark = [pytest.mark.postgres, pytest.mark.rabbitmq]


@pytest.fixture
def queue(amqp_url: str) -> Iterator[str]:
    url = unique_queue(amqp_url)
    yield url
    asyncio.run(delete_queues(queue_address(url)))


@pytest.fixture
def env(
    tmp_path: Path, postgres_url: str, queue: str, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """Flags of every command: this test's queue, the session's database, offline engine."""
    monkeypatch.chdir(tmp_path)
    outputs = tmp_path / "outputs"
    flags = ["--db", postgres_url, "--queue", queue, "--outputs", str(outputs), "--llm", "offline"]
    return {"flags": flags, "db": postgres_url, "queue": queue, "outputs": outputs}


SAGA_CODES = {"completed": 0, "rolled_back": 3, "queued": 75, "running": 75}
"""Exit codes of `status` by the saga's status (the code `run` would give, 75: not finished)."""


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    capsys.readouterr()
    code = sagagraph(list(args))
    out = json.loads(capsys.readouterr().out)
    if args[0] == "status":
        assert code == SAGA_CODES.get(out["status"], 0) or (code == 5 and out["halted"]), out
    else:
        assert code == 0, out
    return out


def submit(capsys: pytest.CaptureFixture[str], env: dict[str, Any], *args: str) -> list[str]:
    return [s["saga_id"] for s in cli_json(capsys, "submit", *args, *env["flags"], "--json")]


def run_until(env: dict[str, Any], done: Any, **kw: Any) -> Any:
    """Run an in-process worker until ``done()`` holds; its tally."""
    from sagagraph.cli.parser import build_parser
    from sagagraph.cli.workers import paper_graph_for

    args = build_parser().parse_args(["worker", *env["flags"]])

    async def main() -> Any:
        stop = asyncio.Event()
        worker = asyncio.create_task(
            arun_worker(paper_graph_for(args), queue=env["queue"], db=env["db"], stop=stop, **kw)
        )
        while not done():
            if worker.done():
                return worker.result()
            await asyncio.sleep(0.1)
        stop.set()
        return await worker

    return asyncio.run(main())


INCOMPLETE = Path(__file__).resolve().parents[2] / "examples" / "papers" / "incomplete_paper.md"


def ended(lines: list[str]) -> int:
    """Sagas a worker's log says ended (``worker: saga ID STATUS in 0.2 s``)."""
    return sum(1 for line in lines if line.startswith("worker: saga ") and line.endswith(" s"))


def status(capsys: pytest.CaptureFixture[str], env: dict[str, Any], saga_id: str) -> Any:
    return cli_json(capsys, "status", saga_id, *env["flags"][:2], "--json")


def test_a_submitted_saga_is_queued_in_postgres_before_any_worker_sees_it(
    tmp_path: Path, env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    papers = write_papers(tmp_path / "papers", 2)
    ids = submit(capsys, env, *map(str, papers))
    assert len(set(ids)) == 2
    for saga_id in ids:
        view = status(capsys, env, saga_id)
        assert view["status"] == "queued" and view["completed"] == [] and view["next"]
    listed = cli_json(capsys, "list", *env["flags"][:2], "--json")
    assert {v["saga_id"]: v["status"] for v in listed if v["saga_id"] in ids} == dict.fromkeys(
        ids, "queued"
    )
    counts = asyncio.run(queue_counts(queue_address(env["queue"])))
    assert (counts.ready, counts.consumers) == (2, 0)
    summary = cli_json(capsys, "workers", *env["flags"][:4], "--json")
    assert (summary["queued"], summary["running"], summary["finished"]) == (2, 0, 0)
    # Queued sagas wait for a worker: recover, run elsewhere by an operator, leaves them.
    from sagagraph.graph.recover import unfinished_sagas

    with paper_app(Settings.resolve(db=env["db"], llm="offline"), "deterministic") as app:
        assert not set(ids) & set(unfinished_sagas(app))


def test_a_worker_runs_queued_sagas_to_their_final_state_and_empties_the_queue(
    tmp_path: Path, env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    complete, other = write_papers(tmp_path / "papers", 2)
    good, short = submit(capsys, env, str(complete), str(INCOMPLETE))
    (failing,) = submit(capsys, env, str(other), "--fail-at", "summarizer")
    lines: list[str] = []
    ids = (good, short, failing)
    tally = run_until(env, lambda: ended(lines) == 3, say=lines.append)
    assert tally.ended == {"completed": 1, "rolled_back": 2}
    views = {i: status(capsys, env, i) for i in ids}
    assert views[good]["status"] == "completed"
    # Queued, then stamped by its first node like any new saga.
    assert (views[good]["saga"], views[good]["mode"]) == ("paper_review", "orchestration")
    assert sorted(files_of(env["outputs"], good)) == sorted(PAPER_FILES.values())
    assert views[short]["status"] == "rolled_back" and views[short]["reason"]
    assert views[failing]["compensated"] == ["summarizer", "reviewer", "validator"]
    assert files_of(env["outputs"], short) == files_of(env["outputs"], failing) == []
    # One line per saga taken and one per saga ended.
    assert [sum(1 for line in lines if i in line) for i in ids] == [2, 2, 2]
    counts = asyncio.run(queue_counts(queue_address(env["queue"])))
    assert (counts.ready, counts.dead) == (0, 0)
    summary = cli_json(capsys, "workers", *env["flags"][:4], "--json")
    assert summary["finished_by_status"] == {"completed": 1, "rolled_back": 2}


def test_a_worker_waits_for_a_saga_whose_lease_another_process_holds(
    tmp_path: Path,
    env: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (paper,) = write_papers(tmp_path / "papers", 1)
    (saga_id,) = submit(capsys, env, str(paper))
    refused: list[str] = []
    real_hold = worker_module.WorkerLeases.hold

    def spying_hold(self: Any, held_id: str) -> Any:
        refused.append(held_id)  # every attempt; all but the last are refused below
        return real_hold(self, held_id)

    monkeypatch.setattr(worker_module.WorkerLeases, "hold", spying_hold)
    with open_checkpointer(env["db"]) as checkpointer:
        lease = saga_lease(checkpointer, saga_id)  # what `sagagraph resume` takes
        lease.__enter__()
        try:
            tally = run_until(env, lambda: len(refused) >= 3)
            assert tally.ended == {}
            assert status(capsys, env, saga_id)["status"] == "queued"
        finally:
            lease.__exit__(None, None, None)
    lines: list[str] = []
    tally = run_until(env, lambda: ended(lines) == 1, say=lines.append)
    assert tally.ended == {"completed": 1}
    assert status(capsys, env, saga_id)["status"] == "completed"


def test_an_unreadable_paper_submits_nothing(
    tmp_path: Path, env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    (good,) = write_papers(tmp_path / "papers", 1)
    capsys.readouterr()
    code = sagagraph(["submit", str(good), str(tmp_path / "missing.pdf"), *env["flags"]])
    err = capsys.readouterr().err
    assert code == 2 and "missing.pdf" in err and len(err.strip().splitlines()) == 1
    summary = cli_json(capsys, "workers", *env["flags"][:4], "--json")
    assert (summary["queued"], summary["messages_waiting"]) == (0, 0)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_broker_leaves_no_queued_saga_and_no_password(
    tmp_path: Path, env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    (paper,) = write_papers(tmp_path / "papers", 1)
    dead = f"amqp://guest:s3cr3t-pw@127.0.0.1:{closed_port()}/?queue=nowhere"
    flags = [*env["flags"][:2], "--queue", dead, *env["flags"][4:]]
    before = cli_json(capsys, "list", *env["flags"][:2], "--json")
    capsys.readouterr()
    assert sagagraph(["submit", str(paper), *flags]) == BusError.exit_code
    err = capsys.readouterr().err
    assert "cannot" in err and "s3cr3t-pw" not in err and len(err.strip().splitlines()) == 1
    assert cli_json(capsys, "list", *env["flags"][:2], "--json") == before


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://127.0.0.1/", "expected amqp://"),
        ("amqp://u:pw-9@127.0.0.1/?queue=a/b", "queue name"),
        ("amqp://u:pw-9@127.0.0.1/?max_deliveries=0", "max_deliveries"),
    ],
)
def test_a_bad_queue_url_is_one_line_naming_the_field(url: str, says: str) -> None:
    with pytest.raises(ConfigurationError) as error:
        queue_address(url)
    assert says in str(error.value) and "pw-9" not in str(error.value)


def test_a_busy_lease_is_refused_not_waited_for_by_the_lease_itself(env: dict[str, Any]) -> None:
    from sagagraph.graph.worker_lease import worker_leases

    async def main() -> None:
        async with worker_leases(env["db"]) as mine, worker_leases(env["db"]) as theirs:
            async with mine.hold("saga-lease-probe"):
                with pytest.raises(SagaBusyError):
                    async with theirs.hold("saga-lease-probe"):
                        pass
            async with theirs.hold("saga-lease-probe"):
                pass

    asyncio.run(main())


def test_a_dead_letter_shows_in_the_view_until_anything_runs_for_the_saga_again() -> None:
    from sagagraph.graph.dead_letters import DEAD_LETTER, WORKER_STEP
    from sagagraph.saga.view import make_event, saga_view

    dead = make_event(WORKER_STEP, "escalate", DEAD_LETTER, detail="after 5 deliveries")
    assert saga_view({"events": [dead]})["dead_letter"] == dead
    later = make_event("validator", "execute", "ok")
    assert saga_view({"events": [dead, later]})["dead_letter"] is None
    assert saga_view({"events": [later]})["dead_letter"] is None
