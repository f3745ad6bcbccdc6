"""The console's pages over real sagas: the list, the queue, one saga, its timeline."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sagagraph.console.app import create_app
from sagagraph.console.security import Guard
from sagagraph.console.source import SagaSource
from tests.console.conftest import HOST, ORIGIN, PORT, console
from tests.support.console_sagas import Stores, run

SVG = "{http://www.w3.org/2000/svg}"


def saga_ids(html: str) -> list[str]:
    return re.findall(r'<tr data-saga="([^"]+)">', html)


def test_the_list_shows_every_saga_newest_first_with_its_status(shown: Stores) -> None:
    page = console(shown).get("/")
    assert page.status_code == 200
    assert saga_ids(page.text) == ["lettered", "orphan", "stuck", "undone", "done"]
    assert "status-compensation_failed" in page.text and ">operator<" in page.text
    assert ">orphaned<" in page.text
    assert 'href="/?status=completed">completed 1<' in page.text


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?status=rolled_back", ["undone"]),
        ("?status=operator", ["stuck"]),
        ("?status=orphaned", ["orphan"]),  # a dead-lettered saga is not orphaned
        ("?status=dead_letter", ["lettered"]),
        ("?q=STUCK", ["stuck"]),
        ("?q=complete_paper", ["lettered", "orphan", "stuck", "undone", "done"]),
        ("?q=no-such-text", []),
        ("?status=completed&q=und", []),
    ],
)
def test_the_list_filters_by_status_and_searches_ids_and_inputs(
    shown: Stores, query: str, expected: list[str]
) -> None:
    assert saga_ids(console(shown).get("/" + query).text) == expected


def test_the_live_fragment_is_the_rows_alone(shown: Stores) -> None:
    rows = console(shown).get("/?fragment=rows&status=completed").text
    assert saga_ids(rows) == ["done"]
    assert "<html" not in rows and "<table" not in rows


def test_the_queue_holds_the_sagas_waiting_for_someone(shown: Stores) -> None:
    page = console(shown).get("/queue")
    assert page.status_code == 200
    assert saga_ids(page.text) == ["lettered", "orphan", "stuck"]
    assert page.text.count(">dead-lettered<") == 1


def test_a_saga_page_shows_its_timeline_events_outputs_reason_and_actions(shown: Stores) -> None:
    page = console(shown).get("/sagas/stuck").text
    assert 'id="saga-status">compensation_failed<' in page
    assert "Compensation gave up:</strong> reviewer after 3 attempt(s)" in page
    assert "undo refused (injected by the test)" in page
    assert 'id="action-retry"' in page and 'id="action-skip"' in page
    assert 'id="action-rollback"' not in page  # waiting for an operator: resolve, not rollback
    assert str(shown.outputs / "stuck" / "review.txt") in page
    assert page.count('<g class="event"') == 8  # one mark per event
    assert page.count('<tr class="outcome-') == 8


def test_a_finished_saga_offers_no_action_and_an_orphan_offers_rollback(shown: Stores) -> None:
    client = console(shown)
    done = client.get("/sagas/done").text
    assert 'class="action"' not in done
    assert "summary.txt" in done  # its outputs, with their text
    orphan = client.get("/sagas/orphan").text
    assert 'id="action-rollback"' in orphan and 'id="action-retry"' not in orphan


def test_a_dead_lettered_saga_says_so_and_may_be_rolled_back(shown: Stores) -> None:
    page = console(shown).get("/sagas/lettered").text
    assert "<strong>Dead letter:</strong> dead-lettered by queue sagas after 3 deliveries" in page
    assert 'id="action-rollback"' in page


@pytest.mark.parametrize("saga_id", ["nope", "a%20b", "%3Cscript%3E", "x" * 300])
def test_an_unknown_or_impossible_saga_id_is_404(shown: Stores, saga_id: str) -> None:
    client = console(shown)
    page = client.get(f"/sagas/{saga_id}")
    assert page.status_code == 404 and "No saga " in page.text
    assert "<script>" not in page.text
    assert client.get(f"/sagas/{saga_id}/stamp").status_code == 404
    assert client.get(f"/sagas/{saga_id}/timeline.svg").status_code == 404


def test_the_timeline_is_an_svg_with_a_mark_per_event_and_a_row_per_step(shown: Stores) -> None:
    client = console(shown)
    reply = client.get("/sagas/undone/timeline.svg")
    assert reply.headers["content-type"].startswith("image/svg+xml")
    svg = ET.fromstring(reply.text)
    events = svg.findall(f"{SVG}g[@class='event']")
    view = client.get("/sagas/undone/stamp").json()
    assert len(events) == view["events"]
    actions = [(g.get("data-action"), g.get("data-outcome")) for g in events]
    assert actions[:3] == [("execute", "ok"), ("execute", "ok"), ("execute", "error")]
    assert actions.count(("compensate", "ok")) == 3
    labels = {t.text for t in svg.findall(f"{SVG}text")}
    assert {"validator", "reviewer", "summarizer", "execute", "compensate"} <= labels
    # Each mark says what its event was when hovered.
    assert "InjectedFailure" in (events[2].findtext(f"{SVG}title") or "")


def test_the_stamp_says_status_and_event_count(shown: Stores) -> None:
    stamp = console(shown).get("/sagas/stuck/stamp").json()
    assert stamp == {
        "found": True,
        "status": "compensation_failed",
        "events": 8,
        "waiting_for_operator": True,
    }


def test_a_store_that_cannot_be_read_is_one_line_on_the_page(tmp_path: Path) -> None:
    # A checkpointer path that is a folder: SQLite cannot open it as a database.
    (tmp_path / "db.sqlite").mkdir()
    stores = Stores(
        db=f"sqlite:///{tmp_path / 'db.sqlite'}",
        bus=f"sqlite:///{tmp_path / 'e.sqlite'}",
        outputs=tmp_path,
    )
    app = create_app(SagaSource.from_urls(stores.db, stores.bus), Guard(HOST, PORT))
    client = TestClient(app, base_url=ORIGIN, raise_server_exceptions=False)
    page = client.get("/")
    assert page.status_code == 500
    assert "Could not read the sagas" in page.text
    assert "Traceback" not in page.text


def test_a_blackboard_saga_shows_its_board_and_its_versions_on_the_timeline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGAGRAPH_LLM", "offline")
    stores = Stores(
        db=f"sqlite:///{tmp_path / 's.sqlite'}",
        bus=f"sqlite:///{tmp_path / 'e.sqlite'}",
        outputs=tmp_path / "out",
    )
    assert run(stores, "board", "--mode", "blackboard", "--fail-at", "summarizer") == 3
    page = console(stores).get("/sagas/board").text
    board = re.findall(r'<table class="board">.*?</table>', page, re.S)
    assert board, "no board table"
    assert board[0].count("<tr><td>") == 4
    assert "<td>reviewer</td><td>v2</td><td>reviewer</td><td>withdrawn</td>" in board[0]
    assert page.count('<g class="board-version">') == 4


def test_the_live_table_keeps_the_filters_it_was_given(shown: Stores) -> None:
    page = console(shown).get("/?status=rolled_back&q=a%26b%20c").text
    live = re.search(r'data-live="([^"]+)"', page)
    assert live is not None
    assert live.group(1) == "/?fragment=rows&amp;status=rolled_back&amp;q=a%26b%20c"


def test_the_status_chips_count_statuses_and_set_the_flags_apart(shown: Stores) -> None:
    page = console(shown).get("/").text
    counts = page.split('<p class="counts">', 1)[1].split("</p>", 1)[0]
    statuses, _, flags = counts.partition('<span class="flags">')
    assert flags, "no separate group of flags"
    status_numbers = [
        int(n) for n in re.findall(r'class="status status-[^"]+"[^>]*>[^<]* (\d+)<', statuses)
    ]
    assert sum(status_numbers) == len(saga_ids(page))  # each saga counted once, by its status
    assert ">operator 1<" in flags and ">orphaned 1<" in flags
    assert "operator" not in statuses and "orphaned" not in statuses


def test_a_choreographed_saga_is_not_labelled_with_a_router(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGAGRAPH_LLM", "offline")
    stores = Stores(
        db=f"sqlite:///{tmp_path / 's.sqlite'}",
        bus=f"sqlite:///{tmp_path / 'e.sqlite'}",
        outputs=tmp_path / "out",
    )
    assert run(stores, "choreo", "--mode", "choreography") == 0
    page = console(stores).get("/sagas/choreo").text
    assert "choreography" in page
    assert "router" not in page.split("<h1", 1)[1].split("</p>", 1)[0]
