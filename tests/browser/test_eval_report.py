"""The `rcjudge eval --out` page in a real headless Chromium (Debian chromium via Playwright).

Builds the hand-made ledger of ``tests/integration/test_eval.py``, writes the report of
``tiny`` against ``tiny-v2``, opens ``report.html`` from disk, and checks that both
reliability diagrams loaded (they are ``data:`` URIs: the page needs nothing else), that
the key numbers are on the page, and that nothing was fetched from the network; saves a
screenshot into the test's tmp folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rcjudge.cli import main
from tests.browser.test_verdict_screen import CHROMIUM_ARGS
from tests.integration.test_eval import world  # noqa: F401  (the module-scoped fixture)


@pytest.mark.browser
def test_eval_report_in_chromium(world, tmp_path: Path) -> None:  # noqa: F811
    from playwright.sync_api import sync_playwright

    out = tmp_path / "report"
    assert main(["eval", "--judge", "tiny", "--compare", world.v2, "--db", world.url,
                 "--labels", world.labels, "--bootstrap", "100", "--out", str(out)]) == 0
    requests: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("request", lambda req: requests.append(req.url))
        page.goto((out / "report.html").as_uri())
        assert page.title() == "eval tiny vs tiny-v2"
        for q in ("attempt", "success"):
            img = page.locator(f"#reliability-{q}")
            img.scroll_into_view_if_needed()
            assert img.evaluate("i => i.complete && i.naturalWidth") > 0
        text = page.locator("body").inner_text()
        assert "8 scored" in text and "1 trained on and excluded" in text
        success = page.locator("table.question.success tbody tr", has_text="accuracy")
        cells = success.first.locator("td").all_inner_texts()
        assert cells[0] == "accuracy" and cells[1].startswith("0.7500 [")
        assert cells[2].startswith("0.8750 [") and cells[3].startswith("0.1250 [")
        ece_row = page.locator("table.question.success tbody tr", has_text="ECE").first
        assert ece_row.locator("td").nth(2).inner_text().startswith("0.2288 [")
        flips = page.locator("table.flips tbody tr").all_inner_texts()
        assert len(flips) == 4 and flips[3].split("\t")[:3] == ["r7", "task.b", "success"]
        confusion = page.locator("table.confusion").first.inner_text()
        assert "grasp.slip" in confusion and "none" in confusion
        page.screenshot(path=str(tmp_path / "eval_report.png"), full_page=True)
        browser.close()
    assert all(u.startswith(("file:", "data:")) for u in requests), requests
    assert (tmp_path / "eval_report.png").stat().st_size > 0
