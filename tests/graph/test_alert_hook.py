"""``SAGAGRAPH_ALERT_HOOK``: the CLI calls a user's function when a compensation gives up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sagagraph import ConfigurationError
from sagagraph.saga.records import load_alert_hook
from tests.cli.test_recovery_cli import PAPER, clean_env

REPO = Path(__file__).resolve().parents[2]
FAIL = ["--fail-at", "summarizer", "--saga-id", "paged"]


def test_no_hook_unless_one_is_named() -> None:
    assert load_alert_hook("") is None
    assert load_alert_hook("json:dumps") is json.dumps


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("json", "expected package.module:function"),
        ("no_such_module_xyz:alert", "No module named 'no_such_module_xyz'"),
        ("json:no_such_function", "no_such_function"),
        ("json:__name__", "is not callable"),
    ],
)
def test_a_bad_hook_is_one_clear_line(spec: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message) as caught:
        load_alert_hook(spec)
    assert "SAGAGRAPH_ALERT_HOOK" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_cli_calls_the_hook_once_when_a_compensation_gives_up(tmp_path: Path) -> None:
    (tmp_path / "pager.py").write_text(
        "import json, pathlib\n"
        "def page(failure):\n"
        "    with open(pathlib.Path(__file__).with_name('pages.jsonl'), 'a') as f:\n"
        "        f.write(json.dumps(failure) + '\\n')\n"
    )
    env = clean_env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(REPO), env.get("PYTHONPATH", "")])
    env["SAGAGRAPH_ALERT_HOOK"] = "pager:page"
    db = f"sqlite:///{tmp_path / 'sagas.sqlite'}"
    args = [str(PAPER), "--db", db, "--outputs", str(tmp_path / "out"), "--llm", "offline"]
    faults = ["cli", "--break-undo", "reviewer", "--"]
    run = subprocess.run(
        [sys.executable, "-m", "tests.support.crash_worker", *faults, "run", *args, *FAIL],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 4, run.stderr
    pages = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    assert pages == [
        {
            "saga_id": "paged",
            "step": "reviewer",
            "phase": "compensate",
            "error": "ConnectionError: reviewer: undo refused (injected by the test)",
            "attempts": 3,
        }
    ]
