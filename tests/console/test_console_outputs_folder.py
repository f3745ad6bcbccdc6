"""The console shows only files under the saga's own outputs folder (issue 38, item 6).

An event log anyone can write to (an unsigned one) may name any file as a step's output;
the saga page then shows the path, never the file's text, unless the file lies in
``<the saga's recorded outputs folder>/<saga id>/`` (symlinks resolved)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sagagraph.console.app import output_texts

SECRET = "root:x:0:0:the secret line"


def view(outputs: Path, **paths: Path) -> dict[str, Any]:
    return {
        "saga_id": "s1",
        "input": {"settings": {"outputs": str(outputs)}},
        "outputs": {step: str(path) for step, path in paths.items()},
    }


def test_a_file_outside_the_sagas_folder_is_not_shown(tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    (outputs / "s1").mkdir(parents=True)
    (outputs / "s1" / "review.txt").write_text("the review")
    (outputs / "s2").mkdir()
    (outputs / "s2" / "review.txt").write_text(SECRET)  # another saga's file
    secret = tmp_path / "passwd"
    secret.write_text(SECRET)
    (outputs / "s1" / "link.txt").symlink_to(secret)
    shown = output_texts(
        view(
            outputs,
            reviewer=outputs / "s1" / "review.txt",
            validator=secret,
            summarizer=outputs / "s1" / ".." / "s2" / "review.txt",
            other=outputs / "s1" / "link.txt",
        )
    )
    texts = {s["step"]: s["text"] for s in shown}
    assert texts["reviewer"] == "the review"
    for step in ("validator", "summarizer", "other"):
        assert SECRET not in texts[step]
        assert "outside the saga's outputs folder" in texts[step]


def test_a_saga_that_records_no_outputs_folder_shows_no_file(tmp_path: Path) -> None:
    secret = tmp_path / "passwd"
    secret.write_text(SECRET)
    shown = output_texts({"saga_id": "s1", "input": {}, "outputs": {"validator": str(secret)}})
    assert SECRET not in shown[0]["text"]
