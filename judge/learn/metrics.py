"""Pure numpy metrics of a judge against the truth: ROC-AUC, reliability diagrams, ECE.

A *confidence* here is what a judgment reports: the probability that its answer is right
(``attempt_confidence`` / ``success_confidence``, never below 1/2). Its reliability is read
against whether the answer was right, in equal-width bins over [1/2, 1].
"""

from __future__ import annotations

import numpy as np


def roc_auc(score: np.ndarray, y: np.ndarray) -> float | None:
    """P(score of a positive > score of a negative), ties counting one half; None if one class."""
    score, y = np.asarray(score, float), np.asarray(y)
    pos, neg = score[y == 1], score[y == 0]
    if len(pos) == 0 or len(neg) == 0:
        return None
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (len(pos) * len(neg)))


def reliability(confidence: np.ndarray, correct: np.ndarray, bins: int = 10,
                lo: float = 0.5) -> list[dict]:
    """Reliability-diagram data: one row per bin [lo + k·w, lo + (k+1)·w), the last one closed.

    Each row: ``lo``, ``hi``, ``n``, ``accuracy`` (share of right answers) and
    ``mean_confidence``; the last two are None for an empty bin.
    """
    conf = np.asarray(confidence, float)
    right = np.asarray(correct, float)
    width = (1.0 - lo) / bins
    idx = np.clip(np.floor((conf - lo) / width + 1e-9).astype(int), 0, bins - 1)
    rows = []
    for k in range(bins):
        m = idx == k
        n = int(m.sum())
        rows.append({"lo": round(lo + k * width, 6), "hi": round(lo + (k + 1) * width, 6),
                     "n": n, "accuracy": float(right[m].mean()) if n else None,
                     "mean_confidence": float(conf[m].mean()) if n else None})
    return rows


def ece(confidence: np.ndarray, correct: np.ndarray, bins: int = 10, lo: float = 0.5) -> float:
    """Expected calibration error: Σ over bins of (n_bin / n) · |accuracy − mean confidence|."""
    rows = reliability(confidence, correct, bins, lo)
    n = sum(r["n"] for r in rows)
    return sum(r["n"] / n * abs(r["accuracy"] - r["mean_confidence"]) for r in rows if r["n"])
