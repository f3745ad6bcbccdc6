"""Submitting, without a worker: a saga is ``queued`` in PostgreSQL and its task on RabbitMQ
at once; an id submitted twice makes one saga; bad input and a dead broker leave nothing; a
queued saga is cancelled on the spot, with who and why in its events.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from sagagraph.cli.entry import main as sagagraph
from sagagraph.errors import BusError, ConfigurationError
from sagagraph.workers.address import queue_address
from sagagraph.workers.broker import queue_counts
from sagagraph.workers.control import NOTHING_STARTED
from tests.support.queue_support import files_of, write_papers

pytestmark = [pytest.mark.postgres, pytest.mark.rabbitmq]


def cli_json(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> Any:
    capsys.readouterr()
    got = sagagraph(list(args))
    captured = capsys.readouterr()
    assert got == code, captured.err
    return json.loads(captured.out)


def submit(capsys: pytest.CaptureFixture[str], env: dict[str, Any], *args: str) -> list[Any]:
    rows: list[Any] = cli_json(capsys, "submit", *args, *env["flags"], "--json")
    return rows


def status(capsys: pytest.CaptureFixture[str], env: dict[str, Any], saga_id: str) -> Any:
    capsys.readouterr()
    sagagraph(["status", saga_id, *env["flags"][:2], "--json"])
    return json.loads(capsys.readouterr().out)


def test_a_submitted_saga_is_queued_before_any_worker_sees_it(
    tmp_path: Path, env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    papers = write_papers(tmp_path / "papers", 2)
    ids = [row["saga_id"] for row in submit(capsys, env, *map(str, papers))]
    assert len(set(ids)) == 2
    for saga_id in ids:
        view = status(capsys, env, saga_id)
        assert view["status"] == "queued" and view["completed"] == [] and view["next"]
    listed = cli_json(capsys, "list", *env["flags"][:2], "--json")
    assert {v["saga_id"]: v["status"] for v in listed if v["saga_id"] in ids} == dict.fromkeys(
        ids, "queued"
    )
    counts = queue_counts(queue_address(env["queue"]))
    assert (counts.ready, counts.consumers) == (2, 0)
    summary = cli_json(capsys, "workers", *env["flags"][:4], "--json")
    assert (summary["queued"], summary["running"], summary["finished"]) == (2, 0, 0)


def test_submitting_one_id_twice_makes_one_saga_and_says_so(
    tmp_path: Path, env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    (paper,) = write_papers(tmp_path / "papers", 1)
    first = submit(capsys, env, str(paper), "--saga-id", "trip-once")
    assert [(r["saga_id"], r["created"]) for r in first] == [("trip-once", True)]
    capsys.readouterr()
    code = sagagraph(["submit", str(paper), "--saga-id", "trip-once", *env["flags"]])
    err = capsys.readouterr().err
    assert code == 0 and "saga trip-once: already exists (queued); not submitted again" in err
    again = submit(capsys, env, str(paper), "--saga-id", "trip-once")
    assert [(r["saga_id"], r["created"]) for r in again] == [("trip-once", False)]
    assert queue_counts(queue_address(env["queue"])).ready == 1


def test_an_unreadable_paper_submits_nothing(
    tmp_path: Path, env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    (good,) = write_papers(tmp_path / "papers", 1)
    capsys.readouterr()
    code = sagagraph(["submit", str(good), str(tmp_path / "missing.pdf"), *env["flags"]])
    err = capsys.readouterr().err
    assert code == 2 and "missing.pdf" in err and len(err.strip().splitlines()) == 1
    assert queue_counts(queue_address(env["queue"])).ready == 0


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
    capsys.readouterr()
    assert (
        sagagraph(["submit", str(paper), "--saga-id", "never-there", *flags]) == BusError.exit_code
    )
    err = capsys.readouterr().err
    assert "cannot publish" in err and "s3cr3t-pw" not in err and len(err.strip().splitlines()) == 1
    capsys.readouterr()
    assert sagagraph(["status", "never-there", *env["flags"][:2]]) != 0


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


@pytest.mark.parametrize(
    ("app", "says"),
    [("no colon", "expected module:factory"), ("examples.nowhere:saga", "No module named")],
)
def test_a_bad_app_reference_is_one_line(
    app: str, says: str, env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code = sagagraph(["submit", "--app", app, "--input", "{}", *env["flags"]])
    err = capsys.readouterr().err
    assert code == ConfigurationError.exit_code and says in err, err
    assert len(err.strip().splitlines()) == 1


def test_a_queued_saga_is_cancelled_at_once_with_who_and_why_in_its_events(
    tmp_path: Path, env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    (paper,) = write_papers(tmp_path / "papers", 1)
    (row,) = submit(capsys, env, str(paper))
    saga_id = row["saga_id"]
    view = cli_json(
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
    assert view["status"] == "rolled_back" and view["cancel"] == NOTHING_STARTED
    assert any(
        e.get("by") == "alice" and "cancelled: wrong paper" in e["detail"] for e in view["events"]
    )
    assert view["completed"] == [] and files_of(env["outputs"], saga_id) == []
    # Cancelling it again: it is already final, one line, nothing changes.
    capsys.readouterr()
    code = sagagraph(["cancel", saga_id, "--by", "bob", "--reason", "again", *env["flags"][:4]])
    assert code == 2 and "already rolled_back" in capsys.readouterr().err


def test_a_queued_saga_that_never_ran_is_cancelled_with_nothing_compensated(
    tmp_path: Path, env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    # No worker ever took it: no step started, so no step is compensated and the cancel is
    # filed under the saga, not under its first step; `status` says it stopped on purpose.
    (paper,) = write_papers(tmp_path / "papers", 1)
    (row,) = submit(capsys, env, str(paper))
    saga_id = row["saga_id"]
    args = ["cancel", saga_id, "--by", "alice", "--reason", "wrong paper", *env["flags"][:4]]
    view = cli_json(capsys, *args, "--json")
    assert view["status"] == "rolled_back" and view["compensated"] == []
    assert view["cancel"] == NOTHING_STARTED
    assert view["failure"] is None and view["halted"]["reason"] == "cancelled: wrong paper"
    assert {e["step"] for e in view["events"]} == {"saga"}
    cancel = view["events"][0]
    assert (cancel["action"], cancel["outcome"], cancel["by"]) == ("resolve", "rollback", "alice")
    capsys.readouterr()
    code = sagagraph(["status", saga_id, *env["flags"][:2]])
    shown = capsys.readouterr().out
    assert code == 5, shown
    assert "compensated" not in shown and "idempotency key" not in shown
    assert "cancelled: wrong paper" in shown


def test_a_dead_letter_shows_in_the_view_until_anything_runs_for_the_saga_again() -> None:
    from sagagraph.saga.view import make_event, saga_view
    from sagagraph.workers.dead_letters import DEAD_LETTER, WORKER_STEP

    dead = make_event(WORKER_STEP, "escalate", DEAD_LETTER, detail="after 3 deliveries")
    assert saga_view({"events": [dead]})["dead_letter"] == dead
    later = make_event("validator", "execute", "ok")
    assert saga_view({"events": [dead, later]})["dead_letter"] is None
    assert saga_view({"events": [later]})["dead_letter"] is None


def test_cancel_needs_only_the_saga_id(
    tmp_path: Path,
    env: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `--by` defaults to the login name, `--reason` to "no reason given".
    monkeypatch.setenv("LOGNAME", "carol")
    monkeypatch.setenv("USER", "carol")
    (paper,) = write_papers(tmp_path / "papers", 1)
    (row,) = submit(capsys, env, str(paper))
    view = cli_json(capsys, "cancel", row["saga_id"], *env["flags"][:4], "--json")
    assert view["status"] == "rolled_back" and view["cancel"] == NOTHING_STARTED
    cancels = [e for e in view["events"] if e.get("by") == "carol"]
    assert cancels and all("cancelled: no reason given" in e["detail"] for e in cancels)
