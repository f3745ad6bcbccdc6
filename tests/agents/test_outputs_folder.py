"""The outputs folder through the real ``sagagraph`` command: kept absolute, refused if unusable.

A saga started with a relative ``--outputs`` in folder A and recovered from folder B must keep
every file in A's folder (issue 12 item 2); an outputs folder that cannot hold files is
refused before the saga starts, exit 2, nothing written (item 3).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_recovery_cli import (
    PAPER,
    PAPER_FILES,
    assert_one_line_error,
    faulty_run,
    files_under,
    json_lines,
    sagagraph,
)

pytestmark = pytest.mark.slow

FILES = sorted(PAPER_FILES.values())


def killed_in(folder: Path, db: str, saga_id: str) -> None:
    """Start a saga in ``folder`` with ``--outputs out`` (relative) and SIGKILL it mid-way."""
    folder.mkdir()
    died = faulty_run(
        folder,
        ["--crash", "reviewer:execute:after:sigkill"],
        str(PAPER), "--saga-id", saga_id, "--db", db, "--outputs", "out",
    )  # fmt: skip
    assert died.returncode == -9, died.stderr


@pytest.mark.parametrize("compensate", [False, True], ids=["forward", "compensate"])
def test_a_saga_recovered_from_another_folder_keeps_its_files_in_the_first(
    tmp_path: Path, compensate: bool
) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    a, b = tmp_path / "A", tmp_path / "B"
    killed_in(a, db, "moved")
    assert files_under(a / "out") == ["moved/review.txt", "moved/validation.txt"]
    b.mkdir()
    flags = ["--compensate"] if compensate else []
    recovered = sagagraph(b, "recover", "--db", db, "--json", *flags)
    view = json_lines(recovered.stdout)["moved"]
    assert not (b / "out").exists(), "nothing is written relative to the new folder"
    if compensate:
        assert recovered.returncode == 0, recovered.stderr  # recover: every saga is finished
        assert view["status"] == "rolled_back"
        assert files_under(a / "out") == []
    else:
        assert recovered.returncode == 0, recovered.stderr
        assert view["status"] == "completed"
        assert files_under(a / "out") == [f"moved/{name}" for name in FILES]
        assert view["outputs"]["summarizer"] == str(a / "out" / "moved" / "summary.txt")


def test_resume_with_another_outputs_folder_is_refused(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    a = tmp_path / "A"
    killed_in(a, db, "pinned")
    refused = sagagraph(tmp_path, "resume", "pinned", "--db", db, "--outputs", "elsewhere")
    line = assert_one_line_error(refused, 2)
    assert f"writes to {a / 'out'}" in line and "drop --outputs" in line
    assert not (tmp_path / "elsewhere").exists()
    # The same folder given absolutely is the same folder: accepted.
    done = sagagraph(tmp_path, "resume", "pinned", "--db", db, "--outputs", str(a / "out"))
    assert done.returncode == 0, done.stderr
    assert files_under(a / "out") == [f"pinned/{name}" for name in FILES]


@pytest.fixture
def read_only_mount(tmp_path: Path) -> Iterator[Path]:
    """A real read-only file system: refuses root too, which permission bits would not."""
    mount = tmp_path / "ro"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def _unusable(tmp_path: Path, kind: str, read_only: Path | None) -> tuple[Path, str]:
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    if kind == "a-file":
        return a_file, "is a file, not a folder"
    if kind == "under-a-file":
        return a_file / "out", f"is under a file ({a_file})"
    assert read_only is not None
    return read_only / "out", "Read-only file system"


@pytest.mark.parametrize("kind", ["a-file", "under-a-file", "read-only"])
def test_an_unusable_outputs_folder_is_refused_before_the_saga_starts(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    read_only = request.getfixturevalue("read_only_mount") if kind == "read-only" else None
    outputs, cause = _unusable(tmp_path, kind, read_only)
    db = tmp_path / "sagas.sqlite"
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = sagagraph(
        tmp_path, "run", str(PAPER), "--db", f"sqlite:///{db}", "--outputs", str(outputs)
    )
    line = assert_one_line_error(proc, 2)
    assert line.startswith(f"sagagraph: error: --outputs {outputs}: ") and cause in line
    # Nothing written: no checkpoint database, no folder, no saga to page anyone about.
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert not db.exists()


def test_the_recorded_outputs_folder_is_absolute(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    run = sagagraph(
        tmp_path, "run", str(PAPER), "--saga-id", "abs", "--db", db, "--outputs", "out", "--json"
    )
    assert run.returncode == 0, run.stderr
    view = json.loads(run.stdout)
    assert view["outputs"]["validator"] == str(tmp_path / "out" / "abs" / "validation.txt")
