"""The verdict screen's evidence lists a task's runs, each linked to its explain page.

Real chain, no stand-ins: two synthetic bundles judged by scripted (fake) backends into a real
SQLite ledger, the ledger's ``evaluation_run`` export, ``rcjudge explain --runs EXPORT
--out-dir DIR`` (one page per run), ``rcjudge verdict … --explain-dir DIR --html`` (the
screen), then headless Chromium: open the screen, expand the task, follow a run's link and
check the explain page shows that run's frames (every image decoded).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from judge.ensemble.judge import Judge, prepare
from judge.ensemble.version import load_judge_version
from judge.ledgers.records import Run
from judge.ledgers.store import Ledger
from rcjudge.cli import main
from tests.browser.test_verdict_screen import CHROMIUM_ARGS

SCRIPT = {"attempt": 0.9, "success": 0.2, "failure_class": "grasp.slip"}


@pytest.mark.browser
def test_runs_linked_to_explain_pages(make_bundles, tmp_path: Path, artifacts_dir: Path,
                                      capsys) -> None:
    from playwright.sync_api import sync_playwright

    bundles = make_bundles(2, seed=3, outcome="grasp.slip", width=96, height=64, fps=10)
    version_file = tmp_path / "fake-explain.yaml"
    version_file.write_text(yaml.safe_dump({"name": "fake-explain", "models": [
        {"name": f"m{i}", "backend": "fake", "options": {"script": SCRIPT}} for i in range(3)]}))
    version = load_judge_version(str(version_file))
    judge = Judge(version)
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    run_ids = []
    with Ledger.open(db) as ledger:
        for b in bundles:
            p = prepare(str(b), version)
            ledger.record(Run(run_id=p.run_id, bundle_uri=p.uri, bundle_hash=p.bundle_hash,
                              attribution=p.attribution, duration_s=p.duration_s,
                              cycle_sec=p.cycle_sec), judge.judge_prepared(p))
            run_ids.append(p.run_id)
    assert main(["export", "evaluation-run", "--judge", "fake-explain", "--out",
                 str(tmp_path / "export"), "--db", db]) == 0
    export = tmp_path / "export" / "judge_version=fake-explain" / "part-0.parquet"
    rows = pq.read_table(export).to_pylist()
    assert sorted(r["episode_id"] for r in rows) == sorted(run_ids)
    tasks = sorted({r["task_id"] for r in rows})
    artifact = rows[0]["model_artifact"]
    (tmp_path / "task_spec.csv").write_text(
        "task_id,required_skill,target_success_rate,top_reason_share_limit,max_cycle_sec,"
        "min_episode_count\n" + "".join(f"{t},grasp,0.9,0.5,30,10\n" for t in tasks))
    (tmp_path / "dataset_index.csv").write_text(
        "task_id,required_skill,episode_count,capture_site,robot_hand_type\n"
        + "".join(f"{t},grasp,5,lab-1,parallel\n" for t in tasks))

    pages = tmp_path / "explain"
    capsys.readouterr()
    assert main(["explain", "--runs", str(export), "--judge", str(version_file), "--db", db,
                 "--out-dir", str(pages)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"2 page(s) in {pages}"
    assert sorted(p.name for p in pages.iterdir()) == sorted(f"{r}.html" for r in run_ids)

    screen = tmp_path / "screen" / "screen.html"
    screen.parent.mkdir()
    assert main(["verdict", "--evaluation-run", str(export), "--task-spec",
                 str(tmp_path / "task_spec.csv"), "--dataset-index",
                 str(tmp_path / "dataset_index.csv"), "--artifact", artifact,
                 "--out", str(tmp_path / "cards.json"), "--html", str(screen),
                 "--explain-dir", str(pages)]) == 0
    html = screen.read_text(encoding="utf-8")
    for r in run_ids:
        assert f'href="../explain/{r}.html"' in html  # relative to the page: the folder moves

    first = next(r for r in rows if r["episode_id"] == run_ids[0])
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        # a Korean browser: the English gloss starts off (test_verdict_screen_widths.py)
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, locale="ko-KR")
        page.goto(screen.as_uri())
        card = page.locator(f'section[data-round="current"] details.card'
                            f'[data-task="{first["task_id"]}"]')
        card.locator("summary").click()
        listed = card.locator("table.runs tbody tr").evaluate_all(
            "rows => rows.map(r => Array.from(r.cells).map(c => c.innerText))")
        expected = [[r["episode_id"], "실패", "grasp.slip", "설명 페이지"] for r in rows
                    if r["task_id"] == first["task_id"]]
        assert listed == expected and len(expected) == 2  # both runs are of one task
        link = card.locator(f'tr[data-run="{run_ids[0]}"] a.explain')
        assert link.is_visible()
        page.screenshot(path=str(artifacts_dir / "verdict_screen_runs.png"))
        link.click()
        page.wait_for_load_state()
        assert page.url == (pages / f"{run_ids[0]}.html").as_uri()
        assert page.title() == f"explain {run_ids[0]} — fake-explain"
        sizes = page.locator("img").evaluate_all(
            "imgs => imgs.map(i => [i.complete, i.naturalWidth, i.naturalHeight])")
        assert sizes == [[True, 96, 64]] * 48  # 3 cameras × 16 sampled frames, all decoded
        assert page.locator("h1").inner_text() == f"Run {run_ids[0]} judged by fake-explain"
        browser.close()
