"""The review page at 1280 and 600 px, and nothing carried from one run to the next (Chromium).

The app ``rcjudge serve`` builds (the Judge API with ``/review``) over a ledger whose key
judged six bundles of the demo's size (160 × 120, three cameras, 15 fps) through the API,
with the three scripted models of ``tests/api/test_review_page.py``. The layout is checked
on the first run with two or more contact events (more moments to draw). At both widths the
page is exactly as wide as the window; at 1280 × 800 the end state (the run's last sampled
frame, every camera) is on screen without scrolling; every camera row is named. After a run
is labelled with a class, the next run shows no class highlighted and no class list.
Screenshots go to ``test-artifacts/`` (``review-page-1280.png``, ``review-page-600.png``;
docs/review.md shows them).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from judge.api.auth import RIGHTS
from judge.api.routes import create_app
from judge.api.server import running
from tests.api.test_review_page import VERSION, judge_runs, review_app
from tests.api.test_review_page import review_service as make_service
from tests.browser.test_verdict_screen import CHROMIUM_ARGS


@pytest.fixture(scope="module")
def judged_db(tmp_path_factory, make_bundles):
    """(database path, key): the key ``ana`` judged six demo-sized bundles."""
    path = tmp_path_factory.mktemp("layout") / "review.db"
    service = make_service(f"sqlite:///{path}")
    key = service.create_key("ana", "live", sorted(RIGHTS))[0]
    try:
        with TestClient(create_app(service)) as client:
            judge_runs(client, key, make_bundles(6, seed=12))
    finally:
        service.close()
    return path, key


def _events(page) -> int:
    return int(re.search(r"(\d+) contact event", page.locator("#head").inner_text()).group(1))


def _open(pw, base: str, key: str, width: int, height: int):
    from playwright.sync_api import expect

    browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(f"{base}/review?judge={VERSION}")
    page.keyboard.type(key)
    page.keyboard.press("Enter")
    expect(page.locator("#card")).to_be_visible()
    expect(page.locator("body")).to_have_attribute("data-buffered", "2")
    page.evaluate("document.fonts.ready")
    return browser, page


def _fits(page) -> dict:
    return page.evaluate("""() => {
        const end = document.querySelector('.moment[data-kind=end]').getBoundingClientRect();
        return {scroll: document.documentElement.scrollWidth, inner: window.innerWidth,
                innerH: window.innerHeight, endTop: end.top, endBottom: end.bottom,
                cams: [...document.querySelectorAll('#frames .cam')].map(
                    c => [c.dataset.camera, c.querySelector('.camname')?.textContent])};
    }""")


@pytest.mark.browser
@pytest.mark.parametrize(("width", "height"), [(1280, 800), (600, 900)])
def test_the_page_fits_the_window(judged_db, tmp_path: Path, artifacts_dir: Path,
                                  width: int, height: int) -> None:
    from playwright.sync_api import sync_playwright

    src, key = judged_db
    shutil.copy(src, tmp_path / "review.db")
    service = make_service(f"sqlite:///{tmp_path / 'review.db'}")
    try:
        with running(review_app(service)) as base, sync_playwright() as pw:
            browser, page = _open(pw, base, key, width, height)
            for _ in range(5):  # to a run with two or more contact events
                if _events(page) >= 2:
                    break
                page.keyboard.press("s")
            assert _events(page) >= 2
            got = _fits(page)
            assert got["scroll"] == got["inner"] == width
            assert got["cams"] and all(name == cam for cam, name in got["cams"])
            if width == 1280:  # the end state on screen without scrolling
                assert 0 <= got["endTop"] and got["endBottom"] <= got["innerH"]
            page.screenshot(path=str(artifacts_dir / f"review-page-{width}.png"))
            browser.close()
    finally:
        service.close()


@pytest.mark.browser
def test_nothing_is_carried_to_the_next_run(judged_db, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    src, key = judged_db
    shutil.copy(src, tmp_path / "review.db")
    service = make_service(f"sqlite:///{tmp_path / 'review.db'}")
    try:
        with running(review_app(service)) as base, sync_playwright() as pw:
            browser, page = _open(pw, base, key, 1280, 800)
            first = page.locator("#card").get_attribute("data-run-id")
            page.keyboard.press("y")
            page.keyboard.press("n")
            page.keyboard.type("joint")
            expect(page.locator("#classes li.hi")).to_have_attribute("data-class",
                                                                     "motion.joint_limit")
            page.keyboard.press("Enter")  # the class
            page.keyboard.press("Enter")  # no note: saved, the next run shows
            expect(page.locator("#card")).not_to_have_attribute("data-run-id", first)
            expect(page.locator("#classes li")).to_have_count(0)
            expect(page.locator("#v-class")).to_have_text("")
            page.keyboard.press("y")
            page.keyboard.press("n")  # the class step of the next run: nothing typed
            expect(page.locator("#class")).to_be_focused()
            expect(page.locator("#class")).to_have_value("")
            expect(page.locator("#classes li.hi")).to_have_count(0)
            browser.close()
    finally:
        service.close()


@pytest.mark.browser
def test_an_empty_queue_says_why_on_the_page(judged_db, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    src, _ = judged_db
    shutil.copy(src, tmp_path / "review.db")
    service = make_service(f"sqlite:///{tmp_path / 'review.db'}")
    key = service.create_key("cy", "live", ["labels:write"])[0]  # no runs, no grant
    try:
        with running(review_app(service)) as base, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium",
                                         args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(f"{base}/review?judge={VERSION}")
            page.keyboard.type(key)
            page.keyboard.press("Enter")
            expect(page.locator("#empty")).to_have_attribute("data-reason", "no-runs")
            expect(page.locator("#empty")).to_contain_text(
                "The queue is empty: no runs are visible to this key.")
            browser.close()
    finally:
        service.close()
