"""The review page in a real headless Chromium, labelling by keyboard alone.

The app is the one ``rcjudge serve`` builds (the Judge API with ``/review``) under
uvicorn in a thread, over a SQLite ledger whose runs a key judged through the API with
three scripted models that disagree. The browser types the key, labels five runs (one
skipped between them), undoes the last, and the ledger then holds exactly the four
labels with their answers, note, judge version and strategy. After every label the next
run is on screen at once, from the page's prefetched cards (no request in between).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa

from judge.api.server import running
from judge.learn.select import next_runs
from judge.ledgers import schema as S
from tests.api.test_review_page import VERSION, judged_db, mine, review_app, review_bundles
from tests.api.test_review_page import review_service as make_service
from tests.browser.test_verdict_screen import CHROMIUM_ARGS

__all__ = ["judged_db", "review_bundles"]  # the module fixtures, used here too


def _card_id(page) -> str:
    return page.locator("#card").get_attribute("data-run-id")


@pytest.mark.browser
def test_label_five_runs_by_keyboard_undo_one(judged_db, tmp_path: Path,
                                              artifacts_dir: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    src, key, _ = judged_db
    shutil.copy(src, tmp_path / "review.db")
    service = make_service(f"sqlite:///{tmp_path / 'review.db'}")
    ledger = mine(service, key)  # the key's own runs: what its page reads
    picks = [p.run_id for p in next_runs(ledger, VERSION, n=20)]
    try:
        with running(review_app(service)) as base, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium",
                                         args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{base}/review?judge={VERSION}")
            expect(page.locator("#key")).to_be_focused()
            page.keyboard.type(key)
            page.keyboard.press("Enter")
            expect(page.locator("#card")).to_have_attribute("data-run-id", picks[0])
            expect(page.locator("#who")).to_have_text("ana")
            assert page.locator("#frames img").count() > 0
            assert page.locator("#models tr").count() == 4  # header + three models

            def ready(run_id: str) -> None:
                expect(page.locator("#card")).to_have_attribute("data-run-id", run_id)
                expect(page.locator("body")).to_have_attribute("data-buffered", "2")

            def keys(*presses: str) -> None:
                for k in presses:
                    page.keyboard.type(k) if len(k) > 1 and k.islower() else \
                        page.keyboard.press(k)

            def saved_then(next_id: str) -> None:
                # read in the same tick as the key press: the prefetched card, no load
                assert page.evaluate("document.getElementById('card').dataset.runId") \
                    == next_id

            ready(picks[0])  # attempted, succeeded, a note
            keys("y", "y", "clean grasp")
            page.keyboard.press("Enter")
            saved_then(picks[1])
            ready(picks[1])  # attempted, failed: class by search, first match
            keys("y", "n")
            expect(page.locator("#class")).to_be_focused()
            page.keyboard.type("slip")
            expect(page.locator("#classes li.hi")).to_have_attribute("data-class", "grasp.slip")
            page.screenshot(path=str(artifacts_dir / "review_page.png"))
            keys("Enter", "Enter")
            saved_then(picks[2])
            ready(picks[2])
            keys("s")  # skipped: never labelled
            saved_then(picks[3])
            ready(picks[3])  # not attempted: success is not asked; no class
            keys("n")
            expect(page.locator("#class")).to_be_focused()
            keys("Enter", "Enter")
            saved_then(picks[4])
            ready(picks[4])  # a wrong turn back with Esc, then a class by arrow keys
            keys("y", "Escape", "y", "n", "grasp", "ArrowDown", "ArrowDown")
            expect(page.locator("#classes li.hi")).to_have_attribute("data-class",
                                                                     "grasp.wrong_pose")
            keys("Enter", "late", "Enter")
            saved_then(picks[5])
            ready(picks[5])
            keys("y", "y", "Enter")
            saved_then(picks[6])
            expect(page.locator("#stats")).to_have_attribute("data-labels", "5")
            keys("u")  # undo the last: its run comes back to be labelled
            expect(page.locator("#status")).to_have_text(f"undone: {picks[5]}")
            assert _card_id(page) == picks[5]
            expect(page.locator("#stats")).to_contain_text("4 labels ·")
            expect(page.locator("#stats")).to_contain_text("/h · 1 skipped")
            page.evaluate("() => Promise.all(S.history.map(e => e.saved))")
            browser.close()
        lab, rv = S.operator_labels, S.review_labels
        with ledger.engine.connect() as conn:
            rows = conn.execute(sa.select(
                lab.c.run_id, lab.c.attempt, lab.c.success, lab.c.failure_class,
                lab.c.labeled_by, rv.c.judge_version, rv.c.strategy, rv.c.note)
                .join(rv, rv.c.label_id == lab.c.label_id).order_by(lab.c.label_id)).all()
            assert conn.execute(sa.select(sa.func.count()).select_from(lab)).scalar() == 4
            assert conn.execute(sa.select(sa.func.count()).select_from(rv)).scalar() == 4
        assert [tuple(r) for r in rows] == [
            (picks[0], True, True, None, "ana", VERSION, "committee", "clean grasp"),
            (picks[1], True, False, "grasp.slip", "ana", VERSION, "committee", None),
            (picks[3], False, False, None, "ana", VERSION, "committee", None),
            (picks[4], True, False, "grasp.wrong_pose", "ana", VERSION, "committee", "late")]
    finally:
        service.close()
