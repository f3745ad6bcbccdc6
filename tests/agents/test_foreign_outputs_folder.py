"""A store never writes into or deletes from a saga folder it did not make for that saga."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from sagagraph.agents.store import OutputStore
from sagagraph.errors import ForeignOutputsError


def contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


def test_a_folder_another_deployment_made_is_never_written_or_deleted_on_compensation_too(
    tmp_path: Path,
) -> None:
    first = OutputStore(tmp_path / "first")
    first.write("rel1:validator", "validation.txt", "first's validation\n")
    first.write("rel1:reviewer", "review.txt", "first's review\n")
    # The first deployment's completed folder reaches the second one's outputs (copied in, or
    # a shared folder); the second runs a saga of the same id there.
    second = OutputStore(tmp_path / "second")
    second.write("other:validator", "validation.txt", "the second's own saga\n")
    folder = tmp_path / "second" / "rel1"
    shutil.copytree(tmp_path / "first" / "rel1", folder)
    before = contents(folder)

    with pytest.raises(ForeignOutputsError, match=r"rel1.*not made by this store"):
        second.write("rel1:validator", "validation.txt", "overwritten\n")
    with pytest.raises(ForeignOutputsError, match="refusing to write or delete"):
        second.compensate("rel1:reviewer", names=("review.txt",))
    with pytest.raises(ForeignOutputsError):
        second.compensate("rel1:validator", names=("validation.txt",))

    assert contents(folder) == before
    assert not second.is_compensated("rel1:reviewer")  # nothing was marked either
    # The second store's own saga and the first deployment's folder are untouched.
    assert (tmp_path / "second" / "other" / "validation.txt").exists()
    assert contents(tmp_path / "first" / "rel1") == before


def test_a_symlinked_saga_folder_is_foreign(tmp_path: Path) -> None:
    first = OutputStore(tmp_path / "first")
    first.write("rel2:validator", "validation.txt", "kept\n")
    (tmp_path / "second").mkdir()
    (tmp_path / "second" / "rel2").symlink_to(tmp_path / "first" / "rel2")
    second = OutputStore(tmp_path / "second")
    with pytest.raises(ForeignOutputsError):
        second.compensate("rel2:validator", names=("validation.txt",))
    assert (tmp_path / "first" / "rel2" / "validation.txt").read_text() == "kept\n"


def test_an_older_sagas_folder_holding_only_its_own_files_is_adopted(tmp_path: Path) -> None:
    store = OutputStore(tmp_path / "out")
    store.write("old:validator", "validation.txt", "v\n")
    # As a store before folders were recorded left it: the files and their writes, no record.
    with sqlite3.connect(store.ledger_path) as conn:
        conn.execute("DELETE FROM folders")
    store = OutputStore(tmp_path / "out")
    store.write("old:reviewer", "review.txt", "r\n")
    assert store.compensate("old:reviewer", names=("review.txt",)) == [
        tmp_path / "out" / "old" / "review.txt"
    ]
    store.compensate("old:validator", names=("validation.txt",))
    assert not (tmp_path / "out" / "old").exists()


def test_an_existing_empty_folder_is_taken(tmp_path: Path) -> None:
    (tmp_path / "out" / "fresh").mkdir(parents=True)
    store = OutputStore(tmp_path / "out")
    store.write("fresh:validator", "validation.txt", "v\n")
    assert store.compensate("fresh:validator", names=("validation.txt",))
