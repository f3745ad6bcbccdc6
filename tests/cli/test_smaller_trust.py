"""Issue 28 item 10: the smaller defects at the edges, each with its test.

- a query on a SQLite URL (``?mode=ro``) is refused, one line, instead of creating a file
  literally named ``x.sqlite?mode=ro``;
- a checkpoint disk full before a saga's first checkpoint: ``run`` says nothing was stored
  (run it again once there is space), not that ``recover`` finishes it;
- PostgreSQL connections get time limits (``connect_timeout``, keepalives) the URL may
  override (the stalled and cut connections are in ``test_postgres_edges.py``);
- a read-only outputs folder is named, with its cause, not "unable to open database file".

The worker's closing summary is in ``test_worker_tally.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.errors import ConfigurationError
from tests.checkpoints.test_disk_full import Mount, fill, tmpfs  # noqa: F401 (the fixture)

REPO = Path(__file__).resolve().parents[2]
SAGAGRAPH = Path(sys.executable).parent / "sagagraph"


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGAGRAPH_", "OPENAI_"))}
    return env | {"PYTHONPATH": str(REPO)}


@pytest.mark.parametrize("query", ["?mode=ro", "?cache=shared", "?", "#frag"])
def test_a_query_on_a_sqlite_url_is_refused_and_creates_no_file(tmp_path: Path, query: str) -> None:
    url = f"sqlite:///{tmp_path / 'x.sqlite'}{query}"
    with pytest.raises(ConfigurationError) as refused, open_checkpointer(url):
        pass
    message = str(refused.value)
    assert "\n" not in message and "x.sqlite" in message, message
    assert list(tmp_path.iterdir()) == []


def test_the_cli_refuses_a_sqlite_url_with_a_query(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.sqlite'}?mode=ro"
    proc = subprocess.run(
        [str(SAGAGRAPH), "run", str(REPO / "examples/papers/complete_paper.md"), "--db", url,
         "--outputs", str(tmp_path / "outputs")],
        cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("sagagraph: error:")]
    assert len(errors) == 1 and "mode=ro" in errors[0], proc.stderr
    assert not any(p.name.startswith("x.sqlite") for p in tmp_path.iterdir())


def test_a_checkpoint_disk_full_before_the_first_checkpoint_says_nothing_was_stored(
    tmp_path: Path,
    tmpfs: Mount,  # noqa: F811 (the fixture imported above)
) -> None:
    disk = tmpfs("1m")
    db = f"sqlite:///{disk / 'sagas.sqlite'}"
    # Held open, so the database's WAL files exist: opening it needs no room, the saga's
    # first checkpoint does.
    with open_checkpointer(db):
        fill(disk)
        proc = subprocess.run(
            [str(SAGAGRAPH), "run", str(REPO / "examples/papers/complete_paper.md"), "--db", db,
             "--outputs", str(tmp_path / "outputs"), "--saga-id", "nospace"],
            cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    errors = [line for line in proc.stderr.splitlines() if line.startswith("sagagraph: error:")]
    assert proc.returncode != 0 and len(errors) == 1, proc.stdout + proc.stderr
    assert "disk is full" in errors[0] and "nothing was stored" in errors[0], errors[0]
    assert "recover" not in errors[0], errors[0]


def test_postgres_connections_get_time_limits_the_url_can_override() -> None:
    from psycopg.conninfo import conninfo_to_dict

    from sagagraph.checkpoints.pg_limits import CONNECTION_LIMITS, with_connection_limits

    limited = conninfo_to_dict(with_connection_limits("postgresql://u:p@db.example:5433/sagas"))
    assert limited["host"] == "db.example" and limited["dbname"] == "sagas"
    assert {key: limited[key] for key in CONNECTION_LIMITS} == CONNECTION_LIMITS
    own = conninfo_to_dict(with_connection_limits("postgresql://u@h/d?connect_timeout=30"))
    assert own["connect_timeout"] == "30"
    malformed = "postgresql://user:pw@[::1/db"
    assert with_connection_limits(malformed) == malformed


def test_a_read_only_outputs_folder_is_named_with_its_cause(tmp_path: Path, tmpfs: Mount) -> None:  # noqa: F811
    from sagagraph.agents.store import OutputStore

    disk = tmpfs("1m")
    store = OutputStore(disk)
    store.write("s1:validator", "validation.txt", "ok\n")  # the ledger exists
    remounted = subprocess.run(
        ["mount", "-o", "remount,ro", str(disk)], capture_output=True, text=True
    )
    if remounted.returncode != 0:
        pytest.skip(f"cannot remount read-only: {remounted.stderr.strip()}")
    with pytest.raises(ConfigurationError) as refused:
        OutputStore(disk).write("s2:validator", "validation.txt", "ok\n")
    message = str(refused.value)
    assert "unable to open database file" not in message, message
    assert str(disk) in message and "read-only" in message.lower(), message
    assert "\n" not in message
