"""The orphan probe only looks at a saga's lease, never takes it (issue 38): a ``recover``
at the moment ``list`` or the console probes is not turned away as busy. A live process
(a real one, SIGKILLed) holding the lease makes the saga not orphaned; once it is killed, the
saga is orphaned. On SQLite and PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.graph import leases
from sagagraph.graph.leases import lease_is_held, saga_lease
from sagagraph.graph.stored import is_orphaned
from tests.support.child_processes import reaped
from tests.support.services import saga_database

REPO = Path(__file__).resolve().parents[2]


def never(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the probe took a lock")


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "postgres+group"])
def test_the_probe_takes_no_lock_and_sees_a_live_holder_until_it_is_killed(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = {"saga_id": "probed", "status": "running", "mode": "orchestration"}
    env = os.environ | {"PYTHONPATH": str(REPO)}
    with saga_database(backend, tmp_path) as db, open_checkpointer(db) as checkpointer:
        command = [sys.executable, "-m", "tests.support.lease_holder", db, "probed"]
        with reaped(subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)) as p:
            assert p.stdout is not None
            assert p.stdout.readline().strip() == "HELD"
            with monkeypatch.context() as patched:
                patched.setattr(leases, "_lock_byte", never)
                patched.setattr(leases, "_advisory_lock", never)
                assert lease_is_held(checkpointer, "probed")
                assert not is_orphaned(checkpointer, view)
            p.send_signal(signal.SIGKILL)
            assert p.wait(timeout=30) == -signal.SIGKILL
            p.stdout.close()
        with monkeypatch.context() as patched:
            patched.setattr(leases, "_lock_byte", never)
            patched.setattr(leases, "_advisory_lock", never)
            assert is_orphaned(checkpointer, view)
        # This process's own lease is seen too, and the probe leaves it whole.
        with saga_lease(checkpointer, "probed"):
            assert lease_is_held(checkpointer, "probed")
        assert not lease_is_held(checkpointer, "probed")
