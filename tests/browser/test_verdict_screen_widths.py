"""The verdict screen at 1280 and 600 px, its English gloss and the rectified rates (Chromium).

Served by the screen's app (what ``rcjudge serve`` mounts) with the gold set's 30 cards, their
check report, the seed's cards as the last round, and rectified rates of two tasks computed
by the judge's estimator (``judge.learn.rates``) from the gold evaluation rows and a
constructed label sample (:data:`LABELS`). At both widths the page is exactly as
wide as the window; at 600 px the check panel moves under the cards (one column) and every
task id stays inside the window. The gloss toggle shows and hides the English under the
Korean words and is remembered across a reload. Screenshots go to ``test-artifacts/``
(``verdict-screen-1280.png``, ``verdict-screen-600.png``; docs/verdict.md shows them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.api.server import running
from judge.learn.rates import RateRow, rates
from tests.browser.test_verdict_screen import CHROMIUM_ARGS, GOLD, SEED
from verdict.checks import run_checks
from verdict.engine import build_from_inputs
from verdict.model import card_to_dict
from verdict.reference import Reference
from verdict.screen.app import ScreenState, create_app
from verdict.tables import load_inputs

WIDTHS = {"wide": (1280, 800), "narrow": (600, 900)}
#: The labels of the constructed sample: task -> the labels of its first evaluation rows.
LABELS = {"lid-press-K": [True] * 4 + [False] * 4,  # the judge said 10 of 10; labels 4 of 8
          "pick-tray-A": [True] * 8}  # the judge said 6 of 10; labels 8 of 8


def gold_rates(inputs, labels: dict[str, list[bool]]) -> dict:
    """Rates by task as the judge's side computes them (``judge.learn.rates``) over the
    round's evaluation_run rows: the judge's vote is the row's ``success`` (P 0.9 or 0.1),
    the task's first rows labelled with ``labels``, a uniform sample (π = n/N)."""
    t = inputs.evaluation_run.to_pylist()
    rows = []
    for task, ys in labels.items():
        mine = [r for r in t if r["task_id"] == task and r["model_artifact"] == inputs.artifact]
        for i, r in enumerate(mine):
            y = ys[i] if i < len(ys) else None
            rows.append(RateRow(r["episode_id"], (task,), 0.9 if r["success"] else 0.1,
                                bool(r["success"]), y, None if y is None else len(ys) / len(mine)))
    return {"by": ["task"], "cells": [c.to_dict() for c in rates(rows)]}


@pytest.fixture(scope="module")
def screen() -> Iterator[str]:
    from verdict.screen.rates import card_rates, read_rates

    inputs = load_inputs(GOLD / "evaluation_run.jsonl", GOLD / "task_spec.csv",
                         GOLD / "dataset_index.csv", "RLDX-1-rc7")
    cards = [card_to_dict(c) for c in build_from_inputs(inputs)]
    report = run_checks(cards, Reference(inputs)).to_dict()
    previous = json.loads(SEED.read_text(encoding="utf-8"))
    by, cells = read_rates(gold_rates(inputs, LABELS), "rates")
    state = ScreenState(cards, report, previous, None, "RLDX-1-rc7",
                        rates=card_rates(cards, by, cells))
    with running(create_app(state)) as base:
        yield base + "/"


def _layout(page) -> dict:
    return page.evaluate("""() => {
        const main = document.querySelector('main').getBoundingClientRect();
        const aside = document.querySelector('aside#checks').getBoundingClientRect();
        const tasks = [...document.querySelectorAll('section[data-round="current"] .task')]
            .filter(t => t.offsetParent !== null)
            .map(t => { const r = t.getBoundingClientRect(); return [t.textContent, r.right]; });
        return {scroll: document.documentElement.scrollWidth, inner: window.innerWidth,
                mainRight: main.right, mainBottom: main.bottom, asideLeft: aside.left,
                asideTop: aside.top, tasks: tasks};
    }""")


@pytest.mark.browser
@pytest.mark.parametrize("width", ["wide", "narrow"])
def test_the_screen_fits_the_window(screen: str, width: str, artifacts_dir: Path) -> None:
    from playwright.sync_api import sync_playwright

    w, h = WIDTHS[width]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": w, "height": h})
        page.goto(screen)
        lid = page.locator('section[data-round="current"] details.card[data-task="lid-press-K"]')
        lid.locator("summary").click()  # a card open, its tables inside the window too
        got = _layout(page)
        assert got["scroll"] == got["inner"] == w
        assert len(got["tasks"]) == 30
        cut = [t for t, right in got["tasks"] if right > got["mainRight"] + 0.5]
        assert cut == []  # every task id is inside its column (none under the panel)
        if width == "wide":  # the cards and the panel side by side
            assert got["asideLeft"] >= got["mainRight"]
        else:  # one column: the panel under the cards
            assert got["asideTop"] >= got["mainBottom"]
        page.locator('section[data-round="current"] details.card[data-task="pick-tray-A"]'
                     " summary").scroll_into_view_if_needed()
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(artifacts_dir / f"verdict-screen-{w}.png"))
        browser.close()


@pytest.mark.browser
def test_the_english_gloss_is_switchable_and_remembered(screen: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
        page = context.new_page()
        page.goto(screen)
        group = page.locator('section[data-round="current"] section.group').first
        korean = group.locator("h2 .ko")
        english = group.locator("h2 .en")
        # the spec's word, verbatim, its gloss in the title and (on by default) beside it
        expect(korean).to_have_text("배포 후보")
        expect(korean).to_have_attribute("title", "deployment candidate")
        expect(english).to_be_visible()
        expect(english).to_have_text("deployment candidate")
        toggle = page.locator("#gloss-toggle")
        expect(toggle).to_have_attribute("aria-pressed", "true")
        toggle.click()
        expect(english).to_be_hidden()
        expect(korean).to_have_text("배포 후보")
        page.reload()
        expect(page.locator("#gloss-toggle")).to_have_attribute("aria-pressed", "false")
        expect(english).to_be_hidden()  # remembered
        page.locator("#gloss-toggle").click()
        page.reload()
        expect(english).to_be_visible()
        # a check's state reads the same word in the panel and on a card
        panel = page.locator('aside#checks li[data-check="3"] [data-state]')
        expect(panel).to_have_attribute("data-state", "pass")
        card = page.locator('section[data-round="current"] details.card[data-task="lid-press-K"]')
        card.locator("summary").click()
        expect(card.locator('li[data-check="3"] [data-state]')).to_have_attribute(
            "data-state", "pass")
        # 4 of 8 labels: Clopper-Pearson [0.157, 0.843], all of it below the target 0.9
        expect(card.locator("summary .rect")).to_contain_text("0.50 [0.16, 0.84]")
        expect(card).to_have_attribute("data-flip", "whole")
        # pick-tray-A (성공률 미달 at 0.6): 8 of 8 labels, [0.631, 1]: straddles 0.9
        expect(page.locator('section[data-round="current"] details.card'
                            '[data-task="pick-tray-A"]')).to_have_attribute("data-flip", "part")
        expect(card.locator("summary .flip .en")).to_have_text(
            "the success-rate rule decides otherwise over the whole rectified interval")
        context.close()
        browser.close()
