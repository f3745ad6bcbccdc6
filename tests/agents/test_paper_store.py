"""The output store: atomic writes per idempotency key, durable tombstones, isolation."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sagagraph.agents.store import LEDGER_DIR, OutputStore, split_key
from sagagraph.errors import CompensatedKeyError, ConfigurationError, InvalidSagaIdError


def files_under(root: Path) -> list[str]:
    """Every file under ``root`` except the hidden ledger, as sorted relative paths."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and LEDGER_DIR not in p.parts
    )


def test_write_lands_atomically_in_the_saga_folder(tmp_path: Path) -> None:
    store = OutputStore(tmp_path / "out")
    path = store.write("saga-1:reviewer", "review.txt", "a review\n")
    assert path == tmp_path / "out" / "saga-1" / "review.txt"
    assert path.read_text() == "a review\n"
    assert files_under(tmp_path / "out") == ["saga-1/review.txt"]  # no temp file left over
    assert store.written("saga-1:reviewer") == [path]
    assert store.ledger_path.exists()


def test_writing_the_same_key_again_replaces_the_file(tmp_path: Path) -> None:
    store = OutputStore(tmp_path)
    store.write("s1:summarizer", "summary.txt", "first")
    path = store.write("s1:summarizer", "summary.txt", "second")
    assert path.read_text() == "second"
    assert files_under(tmp_path) == ["s1/summary.txt"]


def test_compensate_deletes_the_file_and_the_empty_folder(tmp_path: Path) -> None:
    store = OutputStore(tmp_path)
    path = store.write("s1:validator", "validation.txt", "ok")
    assert store.compensate("s1:validator") == [path]
    assert not path.exists()
    assert not (tmp_path / "s1").exists()
    assert store.is_compensated("s1:validator")


def test_compensate_is_idempotent(tmp_path: Path) -> None:
    store = OutputStore(tmp_path)
    store.write("s1:validator", "validation.txt", "ok")
    store.compensate("s1:validator")
    assert store.compensate("s1:validator") == []
    assert store.compensate("s1:validator", names=["validation.txt"]) == []
    assert files_under(tmp_path) == []


def test_compensating_a_never_written_key_succeeds_and_blocks_later_writes(
    tmp_path: Path,
) -> None:
    store = OutputStore(tmp_path)
    assert store.compensate("s1:summarizer", names=["summary.txt"]) == []
    with pytest.raises(CompensatedKeyError, match="s1:summarizer"):
        store.write("s1:summarizer", "summary.txt", "too late")
    assert files_under(tmp_path) == []
    assert not (tmp_path / "s1").exists()


def test_compensate_leaves_the_other_steps_files(tmp_path: Path) -> None:
    store = OutputStore(tmp_path)
    kept = store.write("s1:validator", "validation.txt", "v")
    store.write("s1:reviewer", "review.txt", "r")
    store.compensate("s1:reviewer", names=["review.txt"])
    assert kept.exists()
    assert files_under(tmp_path) == ["s1/validation.txt"]


def test_compensate_deletes_the_step_file_even_without_a_ledger_record(tmp_path: Path) -> None:
    store = OutputStore(tmp_path)
    stray = tmp_path / "s1" / "review.txt"
    stray.parent.mkdir()
    stray.write_text("written by an older version")
    store.compensate("s1:reviewer", names=["review.txt"])
    assert not stray.exists()


def test_compensate_removes_temp_files_of_a_write_that_died(tmp_path: Path) -> None:
    store = OutputStore(tmp_path)
    store.write("s1:reviewer", "review.txt", "r")
    leftover = tmp_path / "s1" / ".review.txt.0123abcd.tmp"
    leftover.write_text("half")
    store.compensate("s1:reviewer")
    assert files_under(tmp_path) == []


class RacingStore(OutputStore):
    """A store whose compensation (by another store object) runs in the middle of a write."""

    def _atomic_write(self, target: Path, text: str) -> None:
        # The write passed its first check and recorded its intent; now the compensation runs,
        # finds no file yet, and the rename below lands after it.
        OutputStore(self.root).compensate("s1:reviewer")
        super()._atomic_write(target, text)


def test_a_write_that_races_past_the_check_undoes_itself(tmp_path: Path) -> None:
    store = RacingStore(tmp_path)
    with pytest.raises(CompensatedKeyError, match="write undone"):
        store.write("s1:reviewer", "review.txt", "late review")
    assert files_under(tmp_path) == []
    assert not (tmp_path / "s1").exists()


def test_tombstones_survive_a_new_store_object(tmp_path: Path) -> None:
    OutputStore(tmp_path).compensate("s1:reviewer")
    with pytest.raises(CompensatedKeyError):
        OutputStore(tmp_path).write("s1:reviewer", "review.txt", "late")


def test_tombstones_are_shared_between_processes(tmp_path: Path) -> None:
    code = (
        "import sys; from sagagraph.agents.store import OutputStore; "
        "OutputStore(sys.argv[1]).compensate('s9:summarizer')"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, timeout=60)
    with pytest.raises(CompensatedKeyError):
        OutputStore(tmp_path).write("s9:summarizer", "summary.txt", "late")


def test_concurrent_sagas_are_isolated(tmp_path: Path) -> None:
    store = OutputStore(tmp_path)
    sagas = [f"saga-{i}" for i in range(8)]
    errors: list[BaseException] = []

    def run(saga_id: str, undo: bool) -> None:
        try:
            for step, name in (("validator", "validation.txt"), ("reviewer", "review.txt")):
                store.write(f"{saga_id}:{step}", name, f"{saga_id} {step}")
            if undo:
                for step in ("reviewer", "validator"):
                    store.compensate(f"{saga_id}:{step}")
        except BaseException as error:
            errors.append(error)

    threads = [
        threading.Thread(target=run, args=(saga_id, i % 2 == 1)) for i, saga_id in enumerate(sagas)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    expected = [
        f"{saga_id}/{name}"
        for i, saga_id in enumerate(sagas)
        if i % 2 == 0
        for name in ("review.txt", "validation.txt")
    ]
    assert files_under(tmp_path) == sorted(expected)
    for i, saga_id in enumerate(sagas):
        assert store.is_compensated(f"{saga_id}:reviewer") == (i % 2 == 1)
        if i % 2 == 0:
            assert (tmp_path / saga_id / "review.txt").read_text() == f"{saga_id} reviewer"


def test_relative_root_gives_relative_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = OutputStore("outputs").write("s1:reviewer", "review.txt", "r")
    assert path.as_posix() == "outputs/s1/review.txt"


@pytest.mark.parametrize(
    ("key", "name", "error"),
    [
        ("no-step-here", "review.txt", ConfigurationError),
        ("s1:Reviewer", "review.txt", ConfigurationError),
        ("../etc:reviewer", "review.txt", InvalidSagaIdError),
        (".sagagraph:reviewer", "review.txt", InvalidSagaIdError),
        ("s1:reviewer", "../review.txt", ConfigurationError),
        ("s1:reviewer", ".hidden", ConfigurationError),
    ],
)
def test_bad_keys_and_names_are_refused(
    tmp_path: Path, key: str, name: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        OutputStore(tmp_path).write(key, name, "x")
    assert files_under(tmp_path) == []


def test_split_key() -> None:
    assert split_key("saga-1.a:summarizer") == ("saga-1.a", "summarizer")


def test_the_first_write_waits_while_another_process_writes_the_new_ledger(
    tmp_path: Path,
) -> None:
    """Bench item 6 lost a saga to ``OperationalError: database is locked`` in its validator:
    sixteen sagas' first writes to a fresh ledger at once, and SQLite refuses ``PRAGMA
    journal_mode=WAL`` without waiting while another connection writes a rollback-journal
    file. The write waits for the other writer instead."""
    from tests.checkpoints.test_sqlite_opening import _another_process_writing

    store = OutputStore(tmp_path / "out")
    store.ledger_path.parent.mkdir(parents=True)
    with _another_process_writing(store.ledger_path):
        path = store.write("saga-1:validator", "validation.txt", "valid\n")
    assert path.read_text() == "valid\n"
    assert store.written("saga-1:validator") == [path]
