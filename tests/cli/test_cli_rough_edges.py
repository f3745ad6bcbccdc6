"""The CLI's rough edges that a new user and an operator met (issue 31), each pinned down.

Every test drives the real ``sagagraph`` entry point in-process, offline, in an empty folder.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfWriter

from sagagraph.cli import main
from sagagraph.cli.flags import MODES, run_label, short_name
from sagagraph.cli.output import format_event
from sagagraph.cli.parser import build_parser
from sagagraph.service import SagaStore

REPO = Path(__file__).resolve().parents[2]
PAPERS = REPO / "examples" / "papers"
COMPLETE = PAPERS / "complete_paper.md"
STARTED = re.compile(r"^  ([<>]) (\S+)\s+(execute|compensate) started")
EVENT = re.compile(r"^  [-+!x~?] ")

pytestmark = pytest.mark.usefixtures("offline_cli")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def view_of(capsys: pytest.CaptureFixture[str], saga_id: str) -> dict[str, Any]:
    run(capsys, "status", saga_id, "--json")  # the exit code is the saga's own
    code = main(["status", saga_id, "--json"])
    assert code in (0, 3, 5)
    view: dict[str, Any] = json.loads(capsys.readouterr().out)
    return view


# --- mode labels: one table -------------------------------------------------------------------


def test_run_announces_and_list_shows_each_mode_by_its_own_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert MODES == ("orchestration", "choreography", "blackboard")
    for mode in MODES:
        code, _, err = run(capsys, "run", str(COMPLETE), "--mode", mode, "--saga-id", mode)
        assert code == 0, err
        first = next(line for line in err.splitlines() if line.startswith("saga "))
        assert first.endswith(f"({run_label(mode, 'deterministic')})"), first
    assert run_label("blackboard", "deterministic") == "blackboard, deterministic controller"
    assert "choreography" not in run_label("blackboard", "llm")

    code, out, _ = run(capsys, "list")
    assert code == 0
    shown = {line.split()[0]: line.split()[2] for line in out.splitlines()[1:]}
    assert shown == {m: short_name(m) for m in MODES}
    assert shown == {"orchestration": "orch", "choreography": "choreo", "blackboard": "board"}


# --- progress lines: the recorded events, in their recorded order -----------------------------


@pytest.mark.parametrize(
    "flags",
    [[], ["--parallel"], ["--mode", "blackboard"], ["--mode", "choreography"]],
    ids=["chain", "parallel", "blackboard", "choreography"],
)
def test_progress_lines_are_the_recorded_events_in_order_with_starts_before_outcomes(
    capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    code, _, err = run(
        capsys, "run", str(COMPLETE), "--saga-id", "undone", "--fail-at", "summarizer", *flags
    )
    assert code == 3, err
    lines = err.splitlines()
    events = view_of(capsys, "undone")["events"]
    assert [line for line in lines if EVENT.match(line)] == [format_event(e) for e in events]

    # A start line comes after every event recorded before that step began, and the next
    # event line is that step's own (the report was `< reviewer compensate started` before
    # `+ summarizer compensate ok`).
    started = [(i, STARTED.match(line)) for i, line in enumerate(lines)]
    starts = [(i, m.group(2), m.group(3)) for i, m in started if m]
    assert any(action == "compensate" for _, _, action in starts)
    for i, step, action in starts:
        following = [line for line in lines[i + 1 :] if EVENT.match(line)]
        if "--parallel" in flags:  # side by side: its outcome comes later, maybe not next
            assert any(line.split()[1:3] == [step, action] for line in following), lines[i]
        else:
            assert following[0].split()[1:3] == [step, action], (lines[i], following[0])
    if "--mode" in flags and "choreography" in flags:  # starts read back from the events
        assert [(s, a) for _, s, a in starts] == [
            ("validator", "execute"),
            ("reviewer", "execute"),
            ("summarizer", "execute"),
            ("summarizer", "compensate"),
            ("reviewer", "compensate"),
            ("validator", "compensate"),
        ]


# --- the saga id: announced only once a saga can exist ----------------------------------------


@pytest.mark.parametrize(
    ("args", "cause"),
    [
        (["missing.pdf"], "no such file"),
        ([str(COMPLETE), "--router", "llm"], "needs a chat model"),
        ([str(COMPLETE), "--llm", "openai"], "OPENAI_API_KEY"),
        ([str(COMPLETE), "--llm", "openai", "--mode", "choreography"], "OPENAI_API_KEY"),
    ],
    ids=["missing-paper", "router-without-model", "engine-without-key", "choreography-no-key"],
)
def test_a_refused_run_announces_no_saga_id(
    capsys: pytest.CaptureFixture[str], args: list[str], cause: str
) -> None:
    code, out, err = run(capsys, "run", *args, "--saga-id", "never")
    assert code == 2
    assert cause in err
    assert "never" not in out + err
    assert not [line for line in err.splitlines() if line.startswith("saga ")]
    assert run(capsys, "status", "never")[0] == 2


@pytest.mark.parametrize(
    ("flags", "cause"),
    [
        (["--router", "llm"], "needs a chat model"),
        (["--llm", "openai"], "OPENAI_API_KEY"),
        (["--llm", "openai", "--mode", "choreography"], "OPENAI_API_KEY"),
    ],
    ids=["router-without-model", "engine-without-key", "choreography-no-key"],
)
def test_a_missing_model_is_refused_before_the_paper_is_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flags: list[str], cause: str
) -> None:
    """The model check comes first: a paper the loader would refuse (or take long to read)
    is never opened when no model can run the saga."""
    paper = tmp_path / "unreadable.pdf"
    paper.write_bytes(b"not a PDF at all")
    code, _, err = run(capsys, "run", str(paper), *flags)
    assert code == 2
    assert cause in err
    assert "not a PDF" not in err


# --- help --------------------------------------------------------------------------------------


def test_top_level_help_lists_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    help_text = " ".join(build_parser().format_help().split())
    for code in ("0 completed", "3 rolled back", "5 halted", "4 needs an operator", "75 not"):
        assert code in help_text
    assert "2 bad usage" in help_text and "130 interrupted" in help_text


def test_compare_help_says_the_llm_router_needs_a_chat_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "needs a chat model" in text or "asks a chat model" in text
    assert "OPENAI_API_KEY" in text and "OPENAI_BASE_URL" in text


# --- events ------------------------------------------------------------------------------------


def test_events_of_an_orchestrated_saga_are_its_recorded_events(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(capsys, "run", str(COMPLETE), "--saga-id", "orch")[0] == 0
    recorded = view_of(capsys, "orch")["events"]

    code, out, _ = run(capsys, "events", "orch")
    assert code == 0
    lines = [f"{e['ts']}  {format_event(e, timed=True).strip()}" for e in recorded]
    assert out.splitlines() == lines
    code, out, _ = run(capsys, "events", "orch", "--json")
    assert (code, json.loads(out)) == (0, recorded)

    code, out, err = run(capsys, "events", "unknown")
    assert (code, out) == (2, "")
    assert "saga 'unknown': not found in sqlite:///sagagraph.sqlite" in err


# --- list: newest first, --limit, --since ------------------------------------------------------


def test_list_is_newest_first_and_takes_limit_and_since(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Ids in the opposite order of their runs: sorting by id would reverse the listing.
    for saga_id in ("c-first", "b-second", "a-third"):
        assert run(capsys, "run", str(COMPLETE), "--saga-id", saga_id)[0] == 0

    def listed(*args: str) -> list[str]:
        code, out, _ = run(capsys, "list", "--json", *args)
        assert code == 0
        return [r["saga_id"] for r in json.loads(out)]

    assert listed() == ["a-third", "b-second", "c-first"]
    assert listed("--limit", "2") == ["a-third", "b-second"]
    assert listed("--since", "1h") == ["a-third", "b-second", "c-first"]
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    assert listed("--since", tomorrow) == []
    code, out, _ = run(capsys, "list", "--limit", "1")
    assert out.splitlines()[1].startswith("a-third")

    code, _, err = run(capsys, "list", "--since", "last tuesday")
    assert code == 2 and "--since 'last tuesday'" in err
    with pytest.raises(SystemExit) as refused:
        main(["list", "--limit", "0"])
    assert refused.value.code == 2


# --- not found: where it looked ----------------------------------------------------------------


def test_not_found_names_the_database_and_bus_it_looked_in_without_passwords(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'elsewhere.sqlite'}"
    assert run(capsys, "run", str(COMPLETE), "--saga-id", "there", "--db", db)[0] == 0
    code, _, err = run(capsys, "status", "there")  # the default database: not where it is
    assert code == 2
    assert err.strip() == (
        "sagagraph: error: saga 'there': not found in sqlite:///sagagraph.sqlite (checkpointer) "
        "nor on sqlite:///sagagraph-events.sqlite (event log)"
    )
    store = SagaStore.from_env(
        db="postgresql://ops:pg-s3cret@db.internal:5432/sagas",
        bus="amqp://ops:mq-s3cret@mq.internal:5672/?namespace=prod",
    )
    message = store.not_found("x")
    assert "s3cret" not in message
    assert "postgresql://ops:***@db.internal:5432/sagas" in message
    assert "amqp://ops:***@mq.internal:5672/?namespace=prod" in message


# --- an encrypted PDF --------------------------------------------------------------------------


def test_an_encrypted_pdf_suggests_the_environment_or_a_file_not_the_flag(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    writer.encrypt(user_password="open-sesame", algorithm="AES-128")
    locked = tmp_path / "locked.pdf"
    with locked.open("wb") as f:
        writer.write(f)

    code, _, err = run(capsys, "run", str(locked))
    assert code == 2
    (line,) = [line for line in err.splitlines() if line.startswith("sagagraph: error:")]
    assert "password is needed" in line
    assert "$SAGAGRAPH_PDF_PASSWORD" in line and "--password-file" in line
    assert "(--password)" not in line and "--password " not in line
