"""A full disk, for real: a small tmpfs mounted for the test and filled to the last byte.

- Full outputs disk: the validator cannot write, and its compensation, which has nothing to
  undo, needs no free space: the saga ends ``rolled_back`` (exit 3), not waiting for an
  operator, and no file is left half-written.
- Full checkpoint disk: ``resume`` of a saga killed mid-way fails with one line that says the
  checkpointer's disk is full and that ``sagagraph recover`` finishes it (exit 1, no
  "unexpected error"); once space is freed, ``recover`` completes it with its three files.

Mounting needs root (tests run as root here); where it is refused the tests skip, saying so.
"""

from __future__ import annotations

import errno
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli.test_recovery_cli import (
    PAPER,
    PAPER_FILES,
    assert_one_line_error,
    faulty_run,
    files_under,
    sagagraph,
)

pytestmark = pytest.mark.slow

Mount = Callable[[str], Path]


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Mount]:
    """``tmpfs(size)``: a fresh tmpfs of that size (``"256k"``), unmounted after the test."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        point = tmp_path / f"disk{len(mounted)}"
        point.mkdir()
        made = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)],
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs to fill (needs root): {made.stderr.strip()}")
        mounted.append(point)
        return point

    yield mount
    for point in reversed(mounted):
        subprocess.run(["umount", str(point)], check=True)


def fill(disk: Path) -> Path:
    """Write a filler file until the disk refuses one more byte; return it."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError as error:
            assert error.errno == errno.ENOSPC
    return filler


def test_a_full_outputs_disk_rolls_back_without_paging_anyone(tmp_path: Path, tmpfs: Mount) -> None:
    disk = tmpfs("256k")
    fill(disk)
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    proc = sagagraph(tmp_path, "run", str(PAPER), "--db", db, "--outputs", str(disk / "out"))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "rolled_back" in proc.stdout
    assert "outputs folder" in proc.stdout and "the disk is full" in proc.stdout
    assert "needs an operator" not in proc.stdout + proc.stderr
    assert files_under(disk / "out") == [], "nothing half-written"
    assert not [p for p in (disk / "out").rglob("*.tmp")]


def test_a_full_checkpoint_disk_is_one_line_and_recover_finishes_the_saga(
    tmp_path: Path, tmpfs: Mount
) -> None:
    disk = tmpfs("2m")
    db = f"sqlite:///{disk / 'sagas.sqlite'}"
    outputs = tmp_path / "outputs"
    died = faulty_run(
        tmp_path,
        ["--crash", "reviewer:execute:after:sigkill"],
        str(PAPER), "--saga-id", "full", "--db", db, "--outputs", str(outputs),
    )  # fmt: skip
    assert died.returncode == -9, died.stderr
    filler = fill(disk)

    stopped = sagagraph(tmp_path, "resume", "full", "--db", db)
    line = assert_one_line_error(stopped, 1)
    assert "the checkpointer's disk is full" in line and "sagagraph recover" in line
    assert "unexpected error" not in line

    filler.unlink()
    recovered = sagagraph(tmp_path, "recover", "--db", db)
    assert recovered.returncode == 0, recovered.stderr
    assert files_under(outputs) == sorted(f"full/{name}" for name in PAPER_FILES.values())
