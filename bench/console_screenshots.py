"""Screenshots of the console for the README and docs/console.md (Playwright, Chromium).

    python bench/console_screenshots.py [--out docs/images] [--chromium /usr/bin/chromium]

Makes a few sagas with the real CLI in a temporary folder (completed, rolled back, halted on
an invalid paper, choreographed, waiting for an operator, orphaned), serves the console over
them in this process, and saves ``console-sagas.png`` (the list) and ``console-saga.png``
(the saga waiting for an operator) under ``--out``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support builds the sagas

from sagagraph.console.serve import console_in_thread  # noqa: E402
from sagagraph.console.source import SagaSource  # noqa: E402
from tests.support.console_sagas import make_orphan, make_sagas, run  # noqa: E402

PAPERS = ROOT / "examples" / "papers"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    os.environ["SAGAGRAPH_LLM"] = "offline"
    os.environ.pop("OPENAI_API_KEY", None)
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)  # the CLI's default files, if any, land here
        stores = make_sagas(Path(folder), stuck=("paper-7f3a",))
        import tests.support.console_sagas as sagas

        sagas.PAPER = PAPERS / "incomplete_paper.md"
        run(stores, "invalid-paper")
        sagas.PAPER = PAPERS / "complete_paper.md"
        run(stores, "choreo-1", "--mode", "choreography")
        run(stores, "blackboard-1", "--mode", "blackboard")
        make_orphan(stores, "orphan-2c91")
        args.out.mkdir(parents=True, exist_ok=True)
        with (
            console_in_thread(SagaSource.from_urls(stores.db, stores.bus)) as url,
            sync_playwright() as playwright,
        ):
            browser = playwright.chromium.launch(executable_path=args.chromium)
            page = browser.new_page(viewport={"width": 1280, "height": 760})
            page.goto(url + "/")
            page.screenshot(path=args.out / "console-sagas.png")
            page.goto(url + "/sagas/paper-7f3a")
            page.locator("#action-retry input[name=why]").fill("the store is back (ticket 7)")
            page.set_viewport_size({"width": 1280, "height": 1000})
            page.screenshot(path=args.out / "console-saga.png")
            browser.close()
    for name in ("console-sagas.png", "console-saga.png"):
        print(args.out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
