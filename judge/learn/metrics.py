"""Pure numpy metrics of a judge against the truth: ROC-AUC, reliability diagrams, ECE,
the Brier score and its skill, precision and recall, and percentile bootstrap intervals.

A *confidence* here is what a judgment reports: the probability that its answer is right
(``attempt_confidence`` / ``success_confidence``, never below 1/2). Its reliability is read
against whether the answer was right, in equal-width bins over [1/2, 1].
"""

from __future__ import annotations

from collections.abc import Callable

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


def brier(p_yes: np.ndarray, y: np.ndarray) -> float:
    """Mean squared error of P(yes) against the 0/1 truth: 0 perfect, 1/4 a coin at 1/2."""
    return float(np.mean((np.asarray(p_yes, float) - np.asarray(y, float)) ** 2))


def brier_skill(p_yes: np.ndarray, y: np.ndarray) -> float | None:
    """1 − Brier / Brier of always saying the base rate (b·(1 − b)): 1 perfect, 0 no better
    than the base rate, below 0 worse. ECE cannot tell a judge that knows nothing from one
    that knows: a constant answer at the base rate is perfectly calibrated, and skill 0.
    None when the truth has one class (no reference to beat)."""
    b = float(np.mean(np.asarray(y, float)))
    if b in (0.0, 1.0):
        return None
    return 1.0 - brier(p_yes, y) / (b * (1.0 - b))


def binary_counts(answer: np.ndarray, truth: np.ndarray) -> dict[str, int]:
    """True/false positives and negatives of yes/no ``answer`` against yes/no ``truth``."""
    a, t = np.asarray(answer, bool), np.asarray(truth, bool)
    return {"tp": int((a & t).sum()), "fp": int((a & ~t).sum()),
            "fn": int((~a & t).sum()), "tn": int((~a & ~t).sum())}


def precision_recall(answer: np.ndarray, truth: np.ndarray) -> tuple[float | None, float | None]:
    """(tp / (tp + fp), tp / (tp + fn)); each None when its denominator is 0."""
    c = binary_counts(answer, truth)
    said_yes, were_yes = c["tp"] + c["fp"], c["tp"] + c["fn"]
    return (c["tp"] / said_yes if said_yes else None, c["tp"] / were_yes if were_yes else None)


def bootstrap_interval(statistic: Callable[[np.ndarray], float], n: int, resamples: int = 1000,
                       seed: int = 0, level: float = 0.95) -> tuple[float, float] | None:
    """Percentile interval of ``statistic(idx)`` over resamples of ``n`` items with replacement.

    ``idx`` is an (n,) array of indices drawn with ``np.random.default_rng(seed)``, so the
    same seed gives the same interval, and two statistics given the same seed and ``n``
    see the same resamples (a paired bootstrap of their difference). None when ``n`` or
    ``resamples`` is 0.
    """
    if n == 0 or resamples == 0:
        return None
    rng = np.random.default_rng(seed)
    values = np.array([statistic(rng.integers(0, n, n)) for _ in range(resamples)], float)
    lo, hi = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)
