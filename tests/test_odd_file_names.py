"""A paper whose file name is not UTF-8 (a Latin-1 name from an old archive, say) is reviewed.

On Linux such a name reaches Python with surrogate escapes (``os.fsdecode(b"caf\\xe9.md")`` is
``"caf\\udce9.md"``). The file opens by that name, but text holding it cannot be written as
UTF-8: the validator's output named the paper and failed with ``UnicodeEncodeError``, rolling
a good paper back. Outputs now show such a character as U+FFFD, and the saga keeps the name it
was given, so a resume still opens the file.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest

from sagagraph.cli import main

COMPLETE = Path(__file__).resolve().parents[1] / "examples" / "papers" / "complete_paper.md"


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("SAGAGRAPH_DB", "SAGAGRAPH_BUS", "SAGAGRAPH_AMQP_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SAGAGRAPH_LLM", "offline")
    monkeypatch.chdir(tmp_path)


def test_a_paper_whose_name_is_not_utf8_is_reviewed_on_every_durable_backend(
    durable_checkpointer_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = os.fsdecode(b"caf\xe9 paper.md")
    paper = tmp_path / name
    shutil.copyfile(COMPLETE, paper)
    saga_id = f"odd{uuid.uuid4().hex[:8]}"
    db = durable_checkpointer_url
    outputs = tmp_path / "outputs"
    code = main(["run", str(paper), "--saga-id", saga_id, "--db", db, "--outputs", str(outputs)])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    written = sorted((outputs / saga_id).iterdir())
    assert [p.name for p in written] == ["review.txt", "summary.txt", "validation.txt"]
    for path in written:
        path.read_text(encoding="utf-8")  # valid UTF-8
    assert "caf\ufffd paper.md" in (outputs / saga_id / "validation.txt").read_text()
    assert main(["status", saga_id, "--db", db, "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["status"] == "completed"
    assert main(["list", "--db", db]) == 0
    listed = capsys.readouterr().out
    assert saga_id in listed and "caf\ufffd paper.md" in listed
