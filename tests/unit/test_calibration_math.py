"""Calibration math with hand-worked values: AUC, ECE, Platt fit, the split by task."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judge.ensemble.version import Platt
from judge.ensemble.vote import calibrate
from judge.learn.calibrate import CalibrationError, fit_platt, held_out_tasks
from judge.learn.metrics import ece, reliability, roc_auc


def test_roc_auc_pairs_and_ties():
    # positives 0.35, 0.8 vs negatives 0.1, 0.4: wins (0.35>0.1), (0.8>0.1), (0.8>0.4) = 3/4
    assert roc_auc(np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1])) == 0.75
    assert roc_auc(np.array([0.5, 0.5]), np.array([0, 1])) == 0.5  # a tie counts one half
    assert roc_auc(np.array([0.5, 0.6]), np.array([1, 1])) is None


def test_reliability_and_ece_of_reported_confidences_by_hand():
    # 10 bins of width 0.05 over [0.5, 1]:
    # [0.50, 0.55): confidences 0.5, 0.5 (a clamped "undecided"), right 1 of 2 -> |0.5 - 0.5| = 0
    # [0.90, 0.95): 0.9, 0.9, right 1 of 2 -> |0.5 - 0.9| = 0.4
    # [0.95, 1.00]: 0.96, 1.0 (1.0 falls in the last bin), both right -> |1 - 0.98| = 0.02
    conf = np.array([0.5, 0.5, 0.9, 0.9, 0.96, 1.0])
    right = np.array([1, 0, 1, 0, 1, 1])
    rows = reliability(conf, right)
    assert [r["n"] for r in rows] == [2, 0, 0, 0, 0, 0, 0, 0, 2, 2]
    assert (rows[0]["lo"], rows[0]["hi"], rows[9]["lo"], rows[9]["hi"]) == (0.5, 0.55, 0.95, 1.0)
    assert rows[1]["accuracy"] is None and rows[1]["mean_confidence"] is None
    assert rows[8]["accuracy"] == 0.5 and rows[8]["mean_confidence"] == pytest.approx(0.9)
    assert ece(conf, right) == pytest.approx(2 / 6 * 0 + 2 / 6 * 0.4 + 2 / 6 * 0.02)


def test_platt_recovers_scale_and_bias():
    a, b = 0.5, 0.2
    xs, ys = [], []
    for x in (-2.0, 0.0, 2.0):
        q = 1 / (1 + np.exp(-(a * x + b)))
        pos = round(q * 10000)
        xs += [x] * 10000
        ys += [1] * pos + [0] * (10000 - pos)
    p_raw = 1 / (1 + np.exp(-np.array(xs)))
    fit = fit_platt(p_raw, np.array(ys, float), l2=0.0)
    assert fit.scale == pytest.approx(0.5, abs=2e-3)
    assert fit.bias == pytest.approx(0.2, abs=2e-3)
    assert fit_platt(np.array([0.2, 0.9]), np.array([1.0, 1.0])).scale == 1.0  # one class


def test_split_by_task_is_deterministic_and_two_sided():
    tasks = [f"t{i}" for i in range(10)]
    held = held_out_tasks(tasks, 0.3)
    assert len(held) == 3 and held == held_out_tasks(list(reversed(tasks)), 0.3)
    assert len(held_out_tasks(["a", "b"], 0.9)) == 1
    with pytest.raises(CalibrationError, match=r"labels cover 1 task\(s\)"):
        held_out_tasks(["a", "a"], 0.3)


def test_fit_and_apply_clip_logits_alike():
    # both clip p to [1e-6, 1 - 1e-6]; sigmoid(2 · logit(q)) = q² / (q² + (1 - q)²)
    q = 1e-6
    assert calibrate(1e-9, Platt(scale=2.0)) == pytest.approx(q**2 / (q**2 + (1 - q) ** 2),
                                                              rel=1e-9)


def test_regularised_toward_the_identity_map():
    # two runs at p = 0.5 (logit 0) say nothing about the slope: it stays at 1, bias 0
    fit = fit_platt(np.array([0.5, 0.5]), np.array([1.0, 0.0]))
    assert fit.scale == pytest.approx(1.0) and fit.bias == pytest.approx(0.0, abs=1e-9)


def test_a_backwards_model_gets_a_constant_map_with_its_bias_refitted():
    # P(yes) 0.1 -> 3 of 4 positive, 0.9 -> 1 of 4, 0.5 -> 2 of 2: the joint slope is negative;
    # the slope is fixed at 0 and the bias refitted alone: logit(6/10) = ln 1.5
    p = np.array([0.1] * 4 + [0.9] * 4 + [0.5] * 2)
    y = np.array([1, 1, 1, 0, 1, 0, 0, 0, 1, 1], float)
    fit = fit_platt(p, y, l2=0.0)
    assert fit.scale == 0.0
    assert fit.bias == pytest.approx(math.log(1.5), abs=1e-9)
    assert calibrate(0.99, fit) == pytest.approx(0.6)
