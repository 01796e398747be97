"""Calibration math with hand-worked values: AUC, ECE, Platt fit, the split by task."""

from __future__ import annotations

import numpy as np
import pytest

from judge.batch.calibrate import CalibrationError, ece, fit_platt, held_out_tasks, roc_auc


def test_roc_auc_pairs_and_ties():
    # positives 0.35, 0.8 vs negatives 0.1, 0.4: wins (0.35>0.1), (0.8>0.1), (0.8>0.4) = 3/4
    assert roc_auc(np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1])) == 0.75
    assert roc_auc(np.array([0.5, 0.5]), np.array([0, 1])) == 0.5  # a tie counts one half
    assert roc_auc(np.array([0.5, 0.6]), np.array([1, 1])) is None


def test_ece_by_hand():
    # bin [0.1,0.2): p 0.15, 0.15, y 0, 1 -> |0.5 - 0.15| = 0.35, weight 2/4
    # bin [0.9,1.0]: p 0.95, 1.0 (1.0 falls in the last bin), y 1, 1 -> |1 - 0.975| = 0.025
    p = np.array([0.15, 0.15, 0.95, 1.0])
    y = np.array([0, 1, 1, 1])
    assert ece(p, y) == pytest.approx(0.5 * 0.35 + 0.5 * 0.025)


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
