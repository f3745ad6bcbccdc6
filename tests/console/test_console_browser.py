"""The console in a real browser: Playwright driving Debian's Chromium.

Open the list, open a saga waiting for an operator, resolve it, see its status change; and
see the operator's queue and a saga's page update by themselves when another operator acts.
Skips (fails under CI=true) when Playwright or Chromium is missing: ``.ci/run`` installs
Chromium with apt-get.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sagagraph.console.actions import ACTIONS, ActionRequest
from sagagraph.console.serve import console_in_thread
from sagagraph.console.source import SagaSource
from tests.support.console_sagas import Stores
from tests.support.services import unavailable

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.serial]

CHROMIUM = os.environ.get("SAGAGRAPH_CHROMIUM", "/usr/bin/chromium")
WAIT_MS = 20_000
"""How long an expectation waits for the page (a live update comes every 3 s)."""


def chromium_path() -> str:
    found = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if not found:
        unavailable(f"Chromium at {CHROMIUM}", "not installed (apt-get install -y chromium)")
    assert found is not None
    return found


@pytest.fixture
def browser_page() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as missing:
        unavailable("Playwright", f"{missing} (pip install playwright)")
    path = chromium_path()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path)
        try:
            page = browser.new_page()
            page.set_default_timeout(WAIT_MS)
            yield page
        finally:
            browser.close()


def test_an_operator_resolves_a_saga_in_the_browser(acted_on: Stores, browser_page: Any) -> None:
    from playwright.sync_api import expect

    page = browser_page
    source = SagaSource.from_urls(acted_on.db, acted_on.bus)
    with console_in_thread(source) as url:
        page.goto(url + "/")
        stuck_row = page.locator('tr[data-saga="stuck"]')
        expect(stuck_row).to_contain_text("compensation_failed")
        expect(stuck_row).to_contain_text("operator")

        stuck_row.get_by_role("link", name="stuck").click()
        expect(page).to_have_url(url + "/sagas/stuck")
        expect(page.locator("#saga-status")).to_have_text("compensation_failed")
        expect(page.locator("svg.timeline g.event")).to_have_count(8)

        form = page.locator("#action-retry")
        form.locator("input[name=why]").fill("store is back, ticket 7")
        form.get_by_role("button", name="Retry the compensation").click()

        expect(page.locator("#saga-status")).to_have_text("rolled_back")
        expect(page.locator(".notice")).to_contain_text("Retry the compensation: done")
        expect(page.locator("table.events")).to_contain_text("operator: retry: store is back")

        page.get_by_role("link", name="Sagas", exact=True).click()
        expect(page.locator('tr[data-saga="stuck"]')).to_contain_text("rolled_back")


def test_the_queue_and_a_saga_page_update_themselves(acted_on: Stores, browser_page: Any) -> None:
    from playwright.sync_api import expect

    page = browser_page
    source = SagaSource.from_urls(acted_on.db, acted_on.bus)
    with console_in_thread(source) as url:
        page.goto(url + "/queue")
        expect(page.locator('tr[data-saga="stuck2"]')).to_have_count(1)
        # Another operator skips it meanwhile (the CLI, a script): the page is not reloaded.
        view = source.view("stuck2")
        assert view is not None
        ACTIONS["skip"].run(ActionRequest(source, view, "bo", "kept for the audit"))
        expect(page.locator('tr[data-saga="stuck2"]')).to_have_count(0)
        expect(page.locator('tr[data-saga="stuck"]')).to_have_count(1)

        # A saga's page reloads itself when the saga moves on.
        page.goto(url + "/sagas/stuck")
        expect(page.locator("#saga-status")).to_have_text("compensation_failed")
        view = source.view("stuck")
        assert view is not None
        ACTIONS["retry"].run(ActionRequest(source, view, "cy", "the store is back"))
        expect(page.locator("#saga-status")).to_have_text("rolled_back")


def test_the_timeline_has_a_time_axis_and_each_attempt_its_duration(
    acted_on: Stores, browser_page: Any
) -> None:
    from playwright.sync_api import expect

    page = browser_page
    source = SagaSource.from_urls(acted_on.db, acted_on.bus)
    view = source.view("undone")
    assert view is not None
    attempts = [e for e in view["events"] if e["action"] in ("execute", "compensate")]
    with console_in_thread(source) as url:
        page.goto(url + "/sagas/undone")
        # The events table says how long each attempt took.
        expect(page.locator("table.events td.took")).to_have_count(len(view["events"]))
        took = page.locator("table.events td.took").all_inner_texts()
        assert [t for t in took if t] == [f"{e['duration_ms'] / 1000:.3f} s" for e in attempts]
        # The x axis is elapsed time: ticks from 0 s, evenly spaced in time and in pixels.
        ticks = page.locator("svg.timeline g.axis g.tick")
        assert ticks.count() >= 3
        expect(ticks.first).to_contain_text("0")
        expect(page.locator("svg.timeline g.axis")).to_contain_text("elapsed")
        first, second = (ticks.nth(i) for i in (0, 1))
        ms = int(second.get_attribute("data-ms") or 0) - int(first.get_attribute("data-ms") or 0)
        px = tick_x(second) - tick_x(first)
        per_ms = px / ms
        # Each attempt's bar spans its duration on that scale (a short one is drawn 4 px
        # wide, ending where it ended), and begins after the attempt before it ended.
        bars = page.locator("svg.timeline g.event[data-duration-ms] rect")
        assert bars.count() == len(attempts)
        ends = []
        for index, event in enumerate(attempts):
            box = bars.nth(index).bounding_box()
            expected = max(event["duration_ms"] * per_ms, 4)
            assert abs(box["width"] - expected) <= 1.5, (event, box, per_ms)
            ends.append((box["x"], box["x"] + box["width"]))
        for (_, end), (begin, later_end) in itertools.pairwise(ends):
            assert later_end >= end - 0.5 and begin >= end - 4.5, ends
        tip = page.locator("svg.timeline g.event[data-duration-ms] title").first.inner_html()
        assert f"took {attempts[0]['duration_ms'] / 1000:.3f} s" in tip


def test_a_saga_past_its_pivot_goes_forward_in_the_browser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser_page: Any
) -> None:
    """The page says the saga is past its pivot and holds its lock; it offers the step's retry
    and no rollback; the retry completes the saga and its lock is gone from the page."""
    from playwright.sync_api import expect

    from tests.console.test_console_pivot import APP, stuck_past_the_pivot

    monkeypatch.setenv("SAGAGRAPH_APP", APP)
    stores = Stores(
        db=f"sqlite:///{tmp_path / 'sagas.sqlite'}",
        bus=f"sqlite:///{tmp_path / 'events.sqlite'}",
        outputs=tmp_path / "outputs",
    )
    saga_id = stuck_past_the_pivot(stores, "lamp")
    page = browser_page
    with console_in_thread(SagaSource.from_urls(stores.db, stores.bus)) as url:
        page.goto(f"{url}/sagas/{saga_id}")
        expect(page.locator("#saga-status")).to_have_text("waiting_for_operator")
        expect(page.locator("#saga-pivot")).to_have_text(
            "Pivot: charge · past it: the saga only goes forward"
        )
        expect(page.locator("p.lock")).to_contain_text("Holds lock: stock:lamp (step reserve")
        expect(page.locator("p.reason.forward")).to_contain_text("ship after 4 attempt(s)")
        expect(page.locator("form.action")).to_have_count(2)
        expect(page.locator("#action-rollback")).to_have_count(0)
        expect(page.locator("#action-retry")).to_have_count(0)

        form = page.locator("#action-retry_step")
        form.locator("input[name=why]").fill("carrier is back")
        form.get_by_role("button", name="Retry the step").click()

        expect(page.locator("#saga-status")).to_have_text("completed")
        expect(page.locator(".notice")).to_contain_text("Retry the step: done")
        expect(page.locator("p.lock")).to_have_count(0)
        expect(page.locator("table.events")).to_contain_text("operator: retry: carrier is back")


def tick_x(tick: Any) -> float:
    """Where a tick of the time axis stands, in the page's pixels."""
    box = tick.locator("line").nth(1).bounding_box()
    assert box is not None
    return float(box["x"])
