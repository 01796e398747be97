"""`rcjudge verdict …` end to end through the real entry point (rcjudge.cli.main)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rcjudge.cli import main


def _tables(d: Path) -> list[str]:
    return ["--evaluation-run", str(d / "evaluation_run.jsonl"), "--task-spec",
            str(d / "task_spec.csv"), "--dataset-index", str(d / "dataset_index.csv")]


def test_build_writes_cards_and_screen(gold_dir: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture) -> None:
    out, page = tmp_path / "cards.json", tmp_path / "screen.html"
    rc = main(["verdict", *_tables(gold_dir), "--artifact", "RLDX-1-rc7", "--out", str(out),
               "--html", str(page), "--grade-result", str(tmp_path / "none.json")])
    assert rc == 0
    assert capsys.readouterr().out == (
        "30 cards: 배포 후보 11, 성공률 미달 3, 실패 유형 쏠림 7, 작업 주기 초과 2, "
        "학습에 없는 조건 7\n")
    cards = json.loads(out.read_text(encoding="utf-8"))
    assert [c["verdict"] for c in cards][:1] == ["배포 후보"]
    html = page.read_text(encoding="utf-8")
    assert '<span id="self-grade-figure"></span>' in html  # no grade file: blank
    assert html.count('<details class="card"') == 30


def test_check_exit_codes(seed_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    seed = Path(__file__).parent / "data" / "verdict_cards.seed.json"
    assert main(["verdict", "check", str(seed), *_tables(seed_dir)]) == 1
    out = capsys.readouterr().out
    assert "FAIL 12." in out
    assert "insert-conn-B: evaluation_run.grasp_slip_count is not a column" in out
    assert out.endswith("7 cards, 1 failed check(s)\n")
    ours = tmp_path / "ours.json"
    main(["verdict", *_tables(seed_dir), "--artifact", "RLDX-1-rc7", "--out", str(ours)])
    capsys.readouterr()
    assert main(["verdict", "check", str(ours), *_tables(seed_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["passed"] is True


def test_grade_prints_figure_and_writes_result(gold_dir: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture) -> None:
    res = tmp_path / "grade.json"
    assert main(["verdict", "grade", "--gold", str(gold_dir), "--out", str(res)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("verdict agreement: 30/30 (engine 0.1.0, ")
    saved = json.loads(res.read_text(encoding="utf-8"))
    assert (saved["figure"], saved["engine_version"], saved["total"]) == ("30/30", "0.1.0", 30)
    page = tmp_path / "s.html"
    main(["verdict", "screen", "--cards", str(Path(__file__).parent / "data" /
                                                "verdict_cards.seed.json"),
          "--grade-result", str(res), "--html", str(page)])
    assert '<span id="self-grade-figure">30/30</span>' in page.read_text(encoding="utf-8")


def test_recapture_check_cli(seed_dir: Path, tmp_path: Path,
                             capsys: pytest.CaptureFixture) -> None:
    cards = tmp_path / "c.json"
    main(["verdict", *_tables(seed_dir), "--artifact", "RLDX-1-rc7", "--out", str(cards)])
    plan = tmp_path / "plan.csv"
    plan.write_text("task_id,capture_site,robot_hand_type\npick-tray-A,안산,parallel_2f\n"
                    "insert-conn-B,안산,parallel_2f\nscrew-M4-C,판교,parallel_2f\n"
                    "wire-route-D,안산,parallel_2f\ndoor-open-J,판교,5finger\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["verdict", "recapture-check", str(cards), "--plan", str(plan)]) == 1
    out = capsys.readouterr().out
    assert "wire-route-D: hand differs (card 안산/5finger, plan 안산/parallel_2f)" in out
    assert out.endswith("match: 4, hand differs: 1\n")


def test_bad_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["verdict", "build", "--task-spec", "x.csv"]) == 2
    assert capsys.readouterr().err == (
        "rcjudge: error: rcjudge verdict build: missing --evaluation-run, --dataset-index, "
        "--artifact\n")
