"""A task's runs on the verdict screen, linked to their explain pages (verdict.screen.runs).

Hand-made tables; the explain pages are plain files in a folder (what ``rcjudge explain
--out-dir`` writes is tested in tests/browser/test_verdict_explain_links.py).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from fastapi.testclient import TestClient

from rcjudge.cli import main
from rcjudge.pages import page_href, page_name
from tests.unit.verdict.helpers import ART, ds_row, runs, spec_row, table
from verdict.engine import build_from_inputs
from verdict.model import card_to_dict
from verdict.screen.app import ScreenState, create_app
from verdict.screen.render import render_page
from verdict.screen.runs import MAX_RUNS, RunLink, task_runs
from verdict.tables import load_inputs


def inputs_with(rows: list[dict], exempt: list[bool | None] | None = None):
    er = table("evaluation_run", rows)
    if exempt is not None:
        er = er.append_column("counts_against_policy", pa.array(exempt, pa.bool_()))
    tasks = sorted({r["task_id"] for r in rows})
    return load_inputs(er, table("task_spec", [spec_row(t) for t in tasks]),
                       table("dataset_index", [ds_row(t) for t in tasks]), ART)


def test_page_names_escape_what_a_file_name_cannot_hold():
    assert page_name("synth-0003-0000") == "synth-0003-0000.html"
    assert page_name("lab/ep 7") == "lab%2Fep%207.html"  # one file, no sub-folder
    assert page_href("lab/ep 7") == "lab%252Fep%25207.html"  # the link names that file


def test_task_runs_rows_links_and_exempt(tmp_path: Path):
    rows = (runs("pick", [(True, None, 10.0), (False, "grasp.slip", 11.0),
                          (False, "env.lighting", 12.0)])
            + runs("pick", [(False, "grasp.miss", 9.0)], artifact="other-artifact")
            + [{"task_id": "push", "model_artifact": ART, "episode_id": "lab/ep 7",
                "success": None, "failure_reason": None, "cycle_sec": 8.0}])
    inputs = inputs_with(rows, exempt=[None, True, False, True, None])
    for rid in ("pick-0", "pick-2", "lab/ep 7"):  # pick-1 has no page
        (tmp_path / page_name(rid)).write_text("<html></html>")
    got = task_runs(inputs, tmp_path, "pages/")
    assert got == {
        "pick": [RunLink("pick-1", False, "grasp.slip", False, None),  # failures first
                 RunLink("pick-2", False, "env.lighting", True, "pages/pick-2.html"),
                 RunLink("pick-0", True, None, False, "pages/pick-0.html")],
        "push": [RunLink("lab/ep 7", None, None, False, "pages/lab%252Fep%25207.html")]}
    # the other artifact's row (pick-0 of other-artifact) is not this round's
    cards = [card_to_dict(c) for c in build_from_inputs(inputs)]
    html = render_page(cards, runs=got)
    pick = html.split('data-task="pick"', 1)[1].split("</details>", 1)[0]
    pick = re.sub(r'<(span|div) class="en" lang="en">[^<]*</\1>', "", pick)  # glosses out
    pick = re.sub(r'<span class="ko"( title="[^"]*")?>([^<]*)</span>', r"\2", pick)
    assert re.findall(r'<tr data-run="([^"]+)"><td class="task">[^<]*</td><td>([^<]*)</td>'
                      r"<td>(.*?)</td><td>(.*?)</td></tr>", pick) == [
        ("pick-1", "실패", "grasp.slip", '<span class="na">페이지 없음</span>'),
        ("pick-2", "실패", "env.lighting <small>(정책 책임 아님)</small>",
         '<a class="explain" href="pages/pick-2.html">설명 페이지</a>'),
        ("pick-0", "성공", "", '<a class="explain" href="pages/pick-0.html">설명 페이지</a>')]
    assert 'data-run="lab/ep 7"' in html.split('data-task="push"', 1)[1]
    assert "table class=\"runs\"" not in render_page(cards)  # no runs given: none listed


def test_long_task_lists_the_first_rows_and_counts_the_rest(tmp_path: Path):
    outcomes = [(True, None, 10.0)] * (MAX_RUNS + 5) + [(None, None, 10.0), (False, "x", 9.0)]
    inputs = inputs_with(runs("pick", outcomes))
    got = task_runs(inputs, tmp_path, "")
    assert [r.run_id for r in got["pick"][:3]] == ["pick-106", "pick-105", "pick-0"]
    html = render_page([card_to_dict(c) for c in build_from_inputs(inputs)], runs=got)
    assert re.findall(r'<tr data-run="([^"]+)"', html) == [
        "pick-106", "pick-105", *(f"pick-{i}" for i in range(MAX_RUNS - 2))]
    assert "외 7개 행은 줄였습니다." in html


def test_served_pages_and_nothing_outside_the_folder(tmp_path: Path):
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "pick-0.html").write_text("<title>explain pick-0</title>")
    (tmp_path / "secret.html").write_text("no")
    inputs = inputs_with(runs("pick", [(True, None, 10.0), (False, "grasp.slip", 11.0)]))
    cards = [card_to_dict(c) for c in build_from_inputs(inputs)]
    state = ScreenState(cards, runs=task_runs(inputs, pages, "explain/"),
                        explain_dir=str(pages))
    client = TestClient(create_app(state))
    assert 'href="explain/pick-0.html"' in client.get("/").text
    page = client.get("/explain/pick-0.html")
    assert page.status_code == 200 and page.text == "<title>explain pick-0</title>"
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    for bad in ("pick-1.html", "..%2Fsecret.html", ".hidden.html", "pick-0.txt"):
        assert client.get(f"/explain/{bad}").status_code == 404, bad
    assert TestClient(create_app(ScreenState(cards))).get(
        "/explain/pick-0.html").status_code == 404  # no folder given


def test_explain_dir_cli_errors(gold_dir: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture) -> None:
    cards = tmp_path / "cards.json"
    tables = ["--evaluation-run", str(gold_dir / "evaluation_run.jsonl"), "--task-spec",
              str(gold_dir / "task_spec.csv"), "--dataset-index", str(gold_dir /
                                                                      "dataset_index.csv")]
    assert main(["verdict", *tables, "--artifact", "RLDX-1-rc7", "--out", str(cards)]) == 0
    capsys.readouterr()
    assert main(["verdict", "build", "--cards", str(cards), "--explain-dir", str(tmp_path),
                 "--html", str(tmp_path / "s.html")]) == 2
    assert capsys.readouterr().err == (
        f"rcjudge: error: --explain-dir {tmp_path}: needs --evaluation-run, --task-spec and "
        "--dataset-index (the runs are the evaluation_run rows)\n")
    assert main(["verdict", "build", "--cards", str(cards), *tables, "--explain-dir",
                 str(tmp_path / "nowhere"), "--html", str(tmp_path / "s.html")]) == 1
    assert capsys.readouterr().err == (
        f"rcjudge: error: --explain-dir {tmp_path / 'nowhere'}: not a folder\n")
    assert not (tmp_path / "s.html").exists()
    out = tmp_path / "screens" / "s.html"
    out.parent.mkdir()
    (tmp_path / "pick-tray-A-ep001.html").write_text("x")
    assert main(["verdict", "build", "--cards", str(cards), *tables, "--explain-dir",
                 str(tmp_path), "--html", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert html.count('<a class="explain" href="../pick-tray-A-ep001.html">') == 1
    gold = [json.loads(line) for line in
            (gold_dir / "evaluation_run.jsonl").read_text(encoding="utf-8").splitlines()]
    specs = {line.split(",", 1)[0] for line in
             (gold_dir / "task_spec.csv").read_text(encoding="utf-8").splitlines()[1:]}
    mine = [r for r in gold if r["model_artifact"] == "RLDX-1-rc7" and r["task_id"] in specs]
    per_task = Counter(r["task_id"] for r in mine)
    assert sorted(n for n in per_task.values() if n > MAX_RUNS) == [200]  # one long task
    assert html.count("<tr data-run=") == sum(min(n, MAX_RUNS) for n in per_task.values()) == 365
    assert html.count("외 100개 행은 줄였습니다.") == 1
    assert html.count("이번 회차 evaluation_run 행이 없습니다") == len(
        specs - {r["task_id"] for r in mine}) == 5
