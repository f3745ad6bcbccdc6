"""A paper whose file name is not UTF-8 (a Latin-1 name from an old archive, say).

On Linux such a name reaches Python with surrogate escapes (``os.fsdecode(b"caf\\xe9.md")`` is
``"caf\\udce9.md"``). The file opens by that name, but LangGraph's checkpoint serializer
stores each such character as ``?``: an orchestrated saga ran (its first invoke reads the
input from memory), and a resumed one looked for ``caf?.md`` and rolled back; before that,
the validator's output named the paper and failed with ``UnicodeEncodeError``. Now:

- orchestration refuses such an input at once, with one line naming the field and the cause,
  and writes nothing (``run``, ``run_saga``, ``submit_sagas``);
- choreography, whose records are JSON (which keeps the name), reviews the paper, and its
  outputs show the character as U+FFFD.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from sagagraph import InputError, open_checkpointer, run_saga
from sagagraph.cli import main
from tests.support.toy_saga import Journal, Plan, saga_app, toy_saga

COMPLETE = Path(__file__).resolve().parents[2] / "examples" / "papers" / "complete_paper.md"
ODD = os.fsdecode(b"caf\xe9 paper.md")


pytestmark = pytest.mark.usefixtures("offline_cli")


def test_a_name_a_checkpoint_cannot_keep_is_refused_at_once_and_nothing_is_written(
    durable_checkpointer_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paper = tmp_path / ODD
    shutil.copyfile(COMPLETE, paper)
    saga_id = f"odd{uuid.uuid4().hex[:8]}"
    db = durable_checkpointer_url
    outputs = tmp_path / "outputs"
    code = main(["run", str(paper), "--saga-id", saga_id, "--db", db, "--outputs", str(outputs)])
    out, err = capsys.readouterr()
    assert code == 2, out + err
    [line] = err.strip().splitlines()
    assert "input.paper" in line and "caf\\udce9 paper.md" in line and "not UTF-8" in line
    assert not (outputs / saga_id).exists()
    assert main(["status", saga_id, "--db", db]) != 0, "nothing was stored"
    capsys.readouterr()


def test_the_python_api_refuses_it_before_writing(tmp_path: Path) -> None:
    definition = toy_saga(1, Journal(tmp_path / "journal.sqlite"), Plan())
    url = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    with saga_app(definition, url) as app:
        with pytest.raises(InputError, match=r"input\.files\.1: .* not UTF-8"):
            run_saga(app, {"files": ["a.md", ODD]}, saga_id="odd-api")
        with pytest.raises(InputError, match=r"input\.paper: .* not UTF-8"):
            from sagagraph.workers import SagaRequest, submit_sagas

            requests = [SagaRequest({"paper": "ok.md"}), SagaRequest({"paper": ODD})]
            submit_sagas(requests, app="sagagraph.agents.paper_app:paper_saga", db=url)
    with open_checkpointer(url) as checkpointer:
        assert list(checkpointer.list(None)) == []


def test_choreography_reviews_it_and_its_outputs_are_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paper = tmp_path / ODD
    shutil.copyfile(COMPLETE, paper)
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    outputs = tmp_path / "outputs"
    code = main(
        [
            "run",
            str(paper),
            "--mode",
            "choreography",
            "--saga-id",
            "odd-ch",
            "--db",
            db,
            "--outputs",
            str(outputs),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, out + err
    written = sorted((outputs / "odd-ch").iterdir())
    assert [p.name for p in written] == ["review.txt", "summary.txt", "validation.txt"]
    for path in written:
        path.read_text(encoding="utf-8")  # valid UTF-8
    assert "caf\ufffd paper.md" in (outputs / "odd-ch" / "validation.txt").read_text()
