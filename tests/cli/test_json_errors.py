"""``--json`` always prints one JSON object on stdout, also when the input is refused.

A script reading ``sagagraph run PAPER --json`` parses ``{"error": ..., "exit": N}`` when the
command fails, never an empty document; the one-line error still goes to stderr. Without
``--json`` stdout stays empty on an error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sagagraph.cli import main

pytestmark = pytest.mark.usefixtures("offline_cli")


def one_object(out: str) -> dict[str, object]:
    value = json.loads(out)  # the whole of stdout is one JSON document
    assert isinstance(value, dict)
    return value


def test_a_missing_paper_prints_its_error_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere.pdf"
    assert main(["run", str(missing), "--json"]) == 2
    captured = capsys.readouterr()
    error = one_object(captured.out)
    assert error == {"error": f"{missing}: no such file", "exit": 2}
    assert f"sagagraph: error: {missing}: no such file" in captured.err


def test_an_unreadable_paper_prints_its_error_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    assert main(["run", str(empty), "--json"]) == 2
    error = one_object(capsys.readouterr().out)
    assert error["exit"] == 2 and "empty file" in str(error["error"])


def test_an_unknown_saga_prints_its_error_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "no-such-saga", "--json"]) == 2
    error = one_object(capsys.readouterr().out)
    assert error["exit"] == 2 and "no-such-saga" in str(error["error"])


@pytest.mark.parametrize(
    ("argv", "cause"),
    [
        (["run", "--json"], "the following arguments are required: PAPER"),
        (["list", "--json", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_usage_prints_its_error_as_json(
    argv: list[str], cause: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert one_object(captured.out) == {"error": cause, "exit": 2}
    assert cause in captured.err  # argparse's usage and message, as without --json


def test_without_json_stdout_stays_empty_on_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(tmp_path / "nowhere.pdf")]) == 2
    assert capsys.readouterr().out == ""
    with pytest.raises(SystemExit):
        main(["run"])
    assert capsys.readouterr().out == ""
