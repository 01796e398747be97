"""The verdict screen in a real headless Chromium (Debian chromium driven by Playwright).

The page is served by the real ``rcjudge serve`` app (FastAPI under uvicorn in a
thread). Loads it, expands a row, checks the evidence table, the 14 checks,
the cause split, missing values in place, the last-round view, the
self-grading figure and that Korean glyphs really render; saves a screenshot.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from verdict.checks import run_checks
from verdict.engine import build_from_inputs
from verdict.grade import grade, write_result
from verdict.model import card_to_dict
from verdict.reference import Reference
from verdict.screen.app import ScreenState, create_app
from verdict.tables import load_inputs

ROOT = Path(__file__).resolve().parents[2]
GOLD = ROOT / "verdict" / "gold"
SEED = ROOT / "tests" / "unit" / "verdict" / "data" / "verdict_cards.seed.json"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    inputs = load_inputs(GOLD / "evaluation_run.jsonl", GOLD / "task_spec.csv",
                         GOLD / "dataset_index.csv", "RLDX-1-rc7")
    cards = [card_to_dict(c) for c in build_from_inputs(inputs)]
    report = run_checks(cards, Reference(inputs)).to_dict()
    grade_path = write_result(grade(GOLD), tmp_path_factory.mktemp("g") / "grade.json")
    previous = json.loads(SEED.read_text(encoding="utf-8"))
    state = ScreenState(cards, report, previous, str(grade_path), "RLDX-1-rc7")
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(create_app(state), host="127.0.0.1", port=port,
                                        log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    for _ in range(100):
        if srv.started:
            break
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/"
    srv.should_exit = True
    thread.join(timeout=5)


@pytest.mark.browser
def test_screen_in_chromium(server: str, artifacts_dir: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        # a Korean browser: the English gloss starts off (test_verdict_screen_widths.py)
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, locale="ko-KR")
        page.goto(server)
        assert page.title() == "다음 수집 판정 RLDX-1-rc7"

        current = page.locator('section[data-round="current"]')
        assert current.locator("section.group").evaluate_all(
            "els => els.map(e => e.dataset.verdict)") == [
            "배포 후보", "성공률 미달", "실패 유형 쏠림", "작업 주기 초과", "학습에 없는 조건"]
        assert current.locator('.cause[data-cause="능력 불일치"] details.card').count() == 4
        assert current.locator('.cause[data-cause="평가 미실시"] details.card').count() == 3
        assert page.locator("#self-grade-figure").inner_text() == "30/30"

        row = current.locator('details.card[data-task="pick-tray-A"]')
        evidence = row.locator("table.evidence")
        assert not evidence.is_visible()
        row.locator("summary").click()
        assert evidence.is_visible()
        cells = evidence.locator("tbody tr").evaluate_all(
            "rows => rows.map(r => Array.from(r.cells).map(c => c.innerText))")
        assert cells == [["evaluation_run", "episode_id", "count", "10"],
                         ["evaluation_run", "success", "count", "6"],
                         ["task_spec", "target_success_rate", "", "0.9"],
                         ["task_spec", "min_episode_count", "", "250"],
                         ["dataset_index", "episode_count", "", "210"]]
        checks = row.locator("ol.card-checks li")
        assert checks.count() == 14
        assert checks.locator(".pass").count() == 14

        panel = page.locator("aside#checks ol.checks li")
        assert panel.count() == 14
        assert panel.nth(11).inner_text().startswith("통과 30/30 evidence field")
        assert panel.nth(11).is_visible()
        notes = page.locator("#notes section").evaluate_all("els => els.map(e => e.dataset.part)")
        assert notes == ["automatic", "manual", "honesty"]

        door = current.locator('details.card[data-task="door-open-J"]')
        assert "빈 값: dataset_index.episode_count 비어 있음, evaluation_run 행 없음" in (
            door.locator("summary").inner_text())
        door.locator("summary").click()
        assert door.locator("table.values tr", has_text="more_episode_count").inner_text() == (
            "more_episode_count\t비어 있음 — dataset_index.episode_count 비어 있음")

        # Korean really renders: two different syllables must not draw the same (tofu) box
        differ = page.evaluate("""() => {
            const draw = (ch) => { const c = document.createElement('canvas');
              c.width = 40; c.height = 40; const x = c.getContext('2d');
              x.font = '32px ' + getComputedStyle(document.body).fontFamily;
              x.fillText(ch, 2, 32); return c.toDataURL(); };
            return draw('가') !== draw('나') && draw('판') !== draw('정'); }""")
        assert differ, "Korean glyphs render as identical boxes: install fonts-nanum"
        page.screenshot(path=str(artifacts_dir / "verdict_screen.png"), full_page=False)

        page.locator('nav button[data-view="previous"]').click()
        assert not current.is_visible()
        last = page.locator('section[data-round="previous"]')
        assert last.locator("details.card").count() == 7
        seed_row = last.locator('details.card[data-task="insert-conn-B"]')
        seed_row.locator("summary").click()
        assert seed_row.locator("table.evidence tr", has_text="grasp_slip_count").count() == 1
        page.screenshot(path=str(artifacts_dir / "verdict_screen_last_round.png"))
        browser.close()
