"""The explain page in a real headless Chromium: frames decoded, event markers drawn.

Loads the file `rcjudge explain` wrote (file://, no server: the page is self-contained),
checks every embedded frame decoded, the markers sit where the events are, and reads the
screenshot's pixels: the plots show the grasp (green) and slip (red) markers and the
frames strip shows the blue outline of the images the models saw.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from rcjudge.cli import main
from tests.browser.test_verdict_screen import CHROMIUM_ARGS

SCRIPT = {"attempt": 0.9, "success": 0.2, "failure_class": "grasp.slip"}


def pixels(png: bytes, rgb: tuple[int, int, int], tol: int = 40) -> int:
    """How many pixels of the screenshot are within ``tol`` of ``rgb``."""
    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)  # (H, W, 3)
    return int((np.abs(img - rgb).max(axis=2) <= tol).sum())


def explain_page(make_bundles, tmp_path: Path) -> Path:
    """The explain page of a small slip bundle judged by three scripted fake models."""
    bundle = make_bundles(1, seed=3, outcome="grasp.slip", width=96, height=64, fps=10)[0]
    version = tmp_path / "fake-explain.yaml"
    version.write_text(yaml.safe_dump({"name": "fake-explain", "models": [
        {"name": f"m{i}", "backend": "fake", "options": {"script": SCRIPT}} for i in range(3)]}))
    out = tmp_path / "explain.html"
    assert main(["explain", str(bundle), "--judge", str(version), "--out", str(out)]) == 0
    return out


@pytest.mark.browser
def test_explain_page_in_chromium(make_bundles, tmp_path: Path, artifacts_dir: Path) -> None:
    from playwright.sync_api import sync_playwright

    out = explain_page(make_bundles, tmp_path)

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1000, "height": 1400})
        page.goto(out.as_uri())
        assert page.title() == "explain synth-0003-0000 — fake-explain"
        sizes = page.locator("img").evaluate_all(
            "imgs => imgs.map(i => [i.complete, i.naturalWidth, i.naturalHeight])")
        assert sizes == [[True, 96, 64]] * 48  # 3 cameras × 16 frames, all decoded
        assert page.locator(".frame.shown").count() == 3 * 8
        plot = page.locator("svg.plot").first
        box = plot.bounding_box()
        assert box is not None and box["width"] == 900
        # the grasp marker is drawn at 2.53 s of 6.0 s across the 834 px plot area
        x = page.locator("svg.plot").first.locator("line.event-grasp").get_attribute("x1")
        assert float(x) == pytest.approx(56 + 2.53 / 6.0 * 834, abs=0.1)
        plot_png = plot.screenshot()
        # a 2 px dashed marker 110 px tall: ~150 px of its colour (none elsewhere in a plot)
        assert pixels(plot_png, (0x1a, 0x7f, 0x37)) > 60  # grasp marker, green
        assert pixels(plot_png, (0xcf, 0x22, 0x2e)) > 60  # slip marker, red
        assert pixels(plot_png, (0xff, 0xf8, 0xc5), tol=4) > 2 * 40 * 100  # dense windows
        strip = page.locator(".cam").first.screenshot()
        assert pixels(strip, (0x09, 0x69, 0xda), tol=30) > 8 * 300  # shown outlines (3 px)
        assert np.asarray(Image.open(io.BytesIO(strip))).std() > 10  # frames, not blank
        page.screenshot(path=str(artifacts_dir / "explain_page.png"), full_page=True)
        browser.close()


@pytest.mark.browser
@pytest.mark.parametrize("width", [600, 2000])
def test_explain_page_legends_ticks_and_layout(make_bundles, tmp_path: Path, width: int,
                                               artifacts_dir: Path) -> None:
    """Every line has a legend entry in its colour, both axes have ticks, and from 600 to
    2,000 px nothing is cut off and the page never scrolls sideways (issue 28 item 7)."""
    from playwright.sync_api import sync_playwright

    out = explain_page(make_bundles, tmp_path)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": width, "height": 1200})
        page.goto(out.as_uri())
        plots = page.locator("figure.plotbox")
        assert plots.count() == 3
        for i in range(3):
            fig = plots.nth(i)
            lines = fig.locator("polyline.line").evaluate_all(
                "ps => ps.map(p => [p.textContent.trim(), p.getAttribute('stroke')])")
            legend = fig.locator(".plot-legend span").evaluate_all(
                "ss => ss.map(s => [s.textContent.trim(), s.dataset.colour])")
            assert legend == lines and len(lines) >= 1
            assert fig.locator("text.ytick").count() >= 3
            assert fig.locator("text.xtick").count() >= 3
        assert plots.nth(2).locator(".plot-legend span").count() == 7  # 7 joints
        view = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert view[0] <= view[1], f"horizontal scroll at {width} px: {view}"
        rights = page.locator("svg.plot, table, .plot-legend, .cam, p, h1").evaluate_all(
            "es => es.map(e => e.getBoundingClientRect().right)")
        assert max(rights) <= width
        page.screenshot(path=str(artifacts_dir / f"explain_page_{width}px.png"), full_page=True)
        browser.close()
