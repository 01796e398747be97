"""`rcjudge eval` does not let ECE flatter a judge that knows nothing (issue 32, item 2): the
Brier score and its skill against the base rate beside ECE, and a flag on a version that
gives one answer to (nearly) every run, in the JSON, the text and the HTML."""

from __future__ import annotations

import numpy as np
import pytest

from judge.learn.evaluate import question_scores
from judge.learn.metrics import brier, brier_skill


def test_brier_and_its_skill_worked_by_hand():
    p, y = np.array([0.9, 0.2, 0.6, 0.5]), np.array([1, 0, 0, 1])
    assert brier(p, y) == pytest.approx((0.01 + 0.04 + 0.36 + 0.25) / 4)  # 0.165
    assert brier_skill(p, y) == pytest.approx(1 - 0.165 / 0.25)  # base rate 1/2: 0.34
    assert brier_skill(p, np.ones(4)) is None  # one class: no reference to beat


def test_a_judge_that_says_no_to_every_run_reads_no_skill_and_is_flagged():
    # v1 of the issue: "no" to every run at confidence 0.52, 29 of 60 runs true successes
    truth = np.array([True] * 29 + [False] * 31)
    s = question_scores(np.zeros(60, bool), np.full(60, 0.52), truth, 0, 0)
    assert s["accuracy"] == round(31 / 60, 4) and s["ece"] == round(0.52 - 31 / 60, 4)
    assert s["brier"] == round((29 * 0.52**2 + 31 * 0.48**2) / 60, 4)  # 0.2497
    assert s["base_rate"] == round(29 / 60, 4)
    assert s["brier_skill"] == round(1 - (29 * 0.52**2 + 31 * 0.48**2) / 60
                                     / (29 / 60 * 31 / 60), 4)  # -0.0 : no skill
    assert s["one_answer"] == {"answer": "no", "share": 1.0, "flag": True}
    mixed = question_scores(np.arange(60) < 50, np.full(60, 0.9), truth, 0, 0)
    assert mixed["one_answer"] == {"answer": "yes", "share": round(50 / 60, 4), "flag": False}


def test_the_flag_is_said_in_the_text_and_the_html():
    from judge.learn.report import one_answer_html, one_answer_lines

    truth = np.array([True] * 29 + [False] * 31)
    flagged = question_scores(np.zeros(60, bool), np.full(60, 0.52), truth, 0, 0)
    fine = question_scores(truth, np.full(60, 0.9), truth, 0, 0)
    r = {"versions": {"v1": {"attempt": fine, "success": flagged}}}
    assert one_answer_lines(r) == [
        "ONE ANSWER: v1 answers success = no to 100.0 % of the 60 runs (flagged at >= 95 %): "
        "its accuracy and ECE describe the base rate, not the judge; Brier skill -0.0000 "
        "(0: no better than always saying the base rate 0.4833)"]
    page = one_answer_html(r)
    assert page.startswith('<p class="warning" id="one-answer-v1-success">ONE ANSWER: v1 ')
    assert one_answer_html({"versions": {"v1": {"attempt": fine, "success": fine}}}) == ""


def test_a_one_sided_truth_answered_right_is_not_flagged():
    # make demo's v2 attempt answers: 61 of 64 runs attempted, every run answered right. The
    # answers are 95.3 % "yes" because the truth is; the accuracy is the judge's, not the
    # base rate's, so no ONE ANSWER flag.
    truth = np.array([True] * 61 + [False] * 3)
    right = question_scores(truth.copy(), np.full(64, 0.9), truth, 0, 0)
    assert right["accuracy"] == 1.0
    assert right["one_answer"] == {"answer": "yes", "share": round(61 / 64, 4), "flag": False}
    # "yes" to all 64: the 3 runs that were not attempted are all missed -> flagged
    every = question_scores(np.ones(64, bool), np.full(64, 0.9), truth, 0, 0)
    assert every["one_answer"] == {"answer": "yes", "share": 1.0, "flag": True}
    # 63 "yes": 1 of the 3 "no" runs said "no" (1/3 < 1/2) -> flagged
    one = truth.copy()
    one[-2:] = True
    s = question_scores(one, np.full(64, 0.9), truth, 0, 0)
    assert s["one_answer"] == {"answer": "yes", "share": round(63 / 64, 4), "flag": True}
    # 2 of 4 "no" runs said "no" (exactly half): the judge can say "no" -> not flagged
    truth4 = np.array([True] * 76 + [False] * 4)
    half = truth4.copy()
    half[-2:] = True
    h = question_scores(half, np.full(80, 0.9), truth4, 0, 0)
    assert h["one_answer"] == {"answer": "yes", "share": round(78 / 80, 4), "flag": False}
