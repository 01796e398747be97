"""The gold set, the grading runner (30/30), a flipped rule it catches, recapture-check."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from verdict import rules
from verdict.gold.make import render
from verdict.gold.tasks import TASKS
from verdict.grade import format_result, grade, read_result, write_result
from verdict.recapture import recapture_check


def test_committed_gold_files_are_the_makers_output(gold_dir: Path) -> None:
    for name, text in render().items():
        assert (gold_dir / name).read_text(encoding="utf-8") == text, name


def test_gold_set_shape(gold_dir: Path) -> None:
    answers = [json.loads(x) for x in (gold_dir / "answers.jsonl").read_text().splitlines()]
    assert len(answers) == 30
    assert [a["origin"] for a in answers].count("seed") == 7
    assert [a["origin"] for a in answers].count("base") == 3
    assert [a["origin"] for a in answers].count("augmented") == 20
    assert all(a["reason"] and a["expected_verdict"] for a in answers)
    verdicts = {(a["expected_verdict"], a["expected_blocked_cause"]) for a in answers}
    assert verdicts == {("배포 후보", None), ("성공률 미달", None), ("실패 유형 쏠림", None),
                        ("작업 주기 초과", None), ("학습에 없는 조건", "능력 불일치"),
                        ("학습에 없는 조건", "평가 미실시")}
    assert len({t.task_id for t in TASKS}) == 30


def test_grade_is_30_of_30(gold_dir: Path, tmp_path: Path) -> None:
    result = grade(gold_dir)
    assert (result.figure, result.by_type, result.field_disagreements) == ("30/30", {}, [])
    assert result.checks_passed
    path = write_result(result, tmp_path / "g.json")
    saved = read_result(path)
    assert saved["figure"] == "30/30" and saved["engine_version"] == "0.1.0"
    assert saved["date"] == result.date
    assert read_result(tmp_path / "absent.json") is None


def test_flipped_rate_rule_is_caught(gold_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # "equal to the target is below" — six gold tasks sit exactly on their target
    monkeypatch.setattr(rules, "rate_below", np.less_equal)
    result = grade(gold_dir)
    assert result.figure == "24/30"
    assert result.by_type == {"배포 후보 → 성공률 미달": 3, "실패 유형 쏠림 → 성공률 미달": 2,
                              "작업 주기 초과 → 성공률 미달": 1}
    assert sorted(d["task_id"] for d in result.disagreements) == [
        "aug-rate-1of8", "aug-rate-29of200", "aug-reason-on-success", "aug-tie-by-name",
        "insert-conn-B", "screw-M4-C"]
    assert not result.checks_passed  # the 14 checks disagree with the broken engine too
    assert "배포 후보 → 성공률 미달: 3" in format_result(result)


def test_flipped_skew_threshold_is_caught(gold_dir: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "share_over", np.greater_equal)
    result = grade(gold_dir)
    assert result.figure == "28/30"
    assert sorted(d["task_id"] for d in result.disagreements) == [
        "aug-empty-in-denominator", "cable-plug-G"]


def test_recapture_check_against_a_plan(tmp_path: Path) -> None:
    cards = [
        {"task_id": "a", "recapture_site": "안산", "recapture_hand": "parallel_2f"},
        {"task_id": "b", "recapture_site": "판교", "recapture_hand": "5finger"},
        {"task_id": "c", "recapture_site": "안산", "recapture_hand": "5finger"},
        {"task_id": "d", "recapture_site": None, "recapture_hand": None},
    ]
    plan = {"a": {"task_id": "a", "capture_site": "안산", "robot_hand_type": "parallel_2f"},
            "b": {"task_id": "b", "capture_site": "안산", "robot_hand_type": "5finger"},
            "d": {"task_id": "d", "capture_site": "평택", "robot_hand_type": "3finger"}}
    rows = recapture_check(cards, plan)
    assert [(r.task_id, r.status) for r in rows] == [
        ("a", "match"), ("b", "site differs"), ("c", "not in plan"),
        ("d", "not named by a card")]
