"""``rcjudge calibrate``: fit per-model Platt scaling on operator labels; write a new version.

Data: every judgment of the version whose run has a current operator label (the
calibration set alone holds only disagreements, a biased sample; the labels are the
truth). Split by task, not by run: the held-out tasks are never seen by the fit.
For each model and question, ``p' = sigmoid(a · logit(p_raw) + b)`` is fitted by
Newton's method on the log loss (a small L2 keeps it finite on separable data).
Reported for success, before and after, on the held-out tasks: accuracy of the
voted decision, ECE (10 equal-width bins) and ROC-AUC of the mean P(success).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from judge.config import configs_dir
from judge.ensemble.version import Calibration, JudgeVersion, Platt
from judge.ensemble.vote import calibrate, majority
from judge.errors import JudgeError
from judge.ledgers.store import Ledger

EPS = 1e-6


class CalibrationError(JudgeError, ValueError):
    """Too few labels, or labels that cannot be split by task."""


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, EPS, 1 - EPS)
    return np.log(p / (1 - p))


def fit_platt(p_raw: np.ndarray, y: np.ndarray, l2: float = 1e-3, iters: int = 100) -> Platt:
    """Platt scaling on logit(p_raw) by damped Newton; identity when y has a single class."""
    if len(np.unique(y)) < 2:
        return Platt()
    x = logit(np.asarray(p_raw, float))
    design = np.stack([x, np.ones_like(x)], axis=1)  # (n, 2)

    def loss(w: np.ndarray) -> float:
        z = design @ w
        return float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * l2 * w @ w)

    w = np.array([1.0, 0.0])  # (a, b): start at the identity map
    current = loss(w)
    for _ in range(iters):
        q = 0.5 * (1 + np.tanh(0.5 * (design @ w)))  # sigmoid without overflow
        grad = design.T @ (q - y) + l2 * w
        hess = design.T @ (design * (q * (1 - q))[:, None]) + l2 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while t > 1e-8 and loss(w - t * step) > current:
            t *= 0.5  # backtrack: plain Newton can overshoot on logistic losses
        w = w - t * step
        previous, current = current, loss(w)
        if previous - current < 1e-12:
            break
    return Platt(scale=max(float(w[0]), 1e-6), bias=float(w[1]))


def ece(prob: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    """ECE: Σ over bins [k/10, (k+1)/10) of (n_bin / n) · |mean(y) − mean(p)|."""
    idx = np.minimum((np.asarray(prob) * bins).astype(int), bins - 1)
    total = 0.0
    for k in range(bins):
        m = idx == k
        if m.any():
            total += m.mean() * abs(float(y[m].mean()) - float(prob[m].mean()))
    return total


def roc_auc(score: np.ndarray, y: np.ndarray) -> float | None:
    """P(score of a positive > score of a negative), ties counting one half; None if one class."""
    pos, neg = score[y == 1], score[y == 0]
    if len(pos) == 0 or len(neg) == 0:
        return None
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (len(pos) * len(neg)))


def held_out_tasks(tasks: list[str], fraction: float) -> set[str]:
    """A deterministic share of tasks (by sha256 of the id) held out; at least one each side."""
    uniq = sorted(set(tasks))
    if len(uniq) < 2:
        raise CalibrationError(f"labels cover {len(uniq)} task(s); a split by task needs >= 2")
    ranked = sorted(uniq, key=lambda t: hashlib.sha256(t.encode()).hexdigest())
    k = min(len(uniq) - 1, max(1, round(fraction * len(uniq))))
    return set(ranked[:k])


@dataclass(frozen=True)
class Dataset:
    task: np.ndarray  # (n,) task ids
    p_attempt: np.ndarray  # (n, 3) raw P(yes) per model
    p_success: np.ndarray  # (n, 3)
    attempt: np.ndarray  # (n,) operator labels 0/1
    success: np.ndarray  # (n,)


def load_dataset(ledger: Ledger, version: str) -> Dataset:
    labels = ledger.current_labels()
    rows = []
    for rid in sorted(ledger.judged_run_ids(version) & set(labels)):
        j = ledger.get_judgment(rid, version)
        lab = labels[rid].label
        rows.append((j.task_id, [a.p_attempt_raw for a in j.answers],
                     [a.p_success_raw for a in j.answers], lab.attempt, lab.success))
    if len(rows) < 10:
        raise CalibrationError(f"{len(rows)} labelled judgments of {version!r}; need >= 10 "
                               "(import operator labels with `rcjudge labels import`)")
    task, pa, ps, a, s = zip(*rows, strict=True)
    return Dataset(np.array(task), np.array(pa), np.array(ps), np.array(a, float),
                   np.array(s, float))


def success_metrics(version: JudgeVersion, d: Dataset, mask: np.ndarray) -> dict:
    maps = [m.calibration.success for m in version.models]
    cal = np.array([[calibrate(float(p), c) for p, c in zip(row, maps, strict=True)]
                    for row in d.p_success[mask]])  # (n, 3)
    y = d.success[mask]
    decided = np.array([majority(list(row), version.vote.yes_threshold)[0] for row in cal])
    mean_p = cal.mean(axis=1)
    return {"n": int(mask.sum()), "accuracy": round(float((decided == (y == 1)).mean()), 4),
            "ece": round(ece(mean_p, y), 4),
            "roc_auc": None if (auc := roc_auc(mean_p, y)) is None else round(auc, 4)}


def calibrate_version(ledger: Ledger, version: JudgeVersion, new_name: str,
                      holdout: float = 0.3) -> tuple[JudgeVersion, dict]:
    """Fit on the training tasks; return the new version and the before/after report."""
    d = load_dataset(ledger, version.name)
    held = held_out_tasks(list(d.task), holdout)
    test = np.isin(d.task, sorted(held))
    train = ~test
    models = []
    for i, m in enumerate(version.models):
        cal = Calibration(attempt=fit_platt(d.p_attempt[train, i], d.attempt[train]),
                          success=fit_platt(d.p_success[train, i], d.success[train]))
        models.append(m.model_copy(update={"calibration": cal}))
    new = version.model_copy(update={"name": new_name, "models": tuple(models),
                                     "description": f"{version.name} + Platt scaling fitted "
                                                    f"on {int(train.sum())} labelled runs"})
    report = {"from": version.name, "to": new_name, "train_runs": int(train.sum()),
              "held_out_tasks": sorted(held),
              "before": success_metrics(version, d, test),
              "after": success_metrics(new, d, test),
              "calibration": {m.name: m.calibration.model_dump() for m in new.models}}
    return new, report


def write_version(version: JudgeVersion, out: str | None = None) -> Path:
    """Write ``configs/judges/<name>.yaml`` (or ``out``); never overwrites."""
    path = Path(out) if out else configs_dir() / "judges" / f"{version.name}.yaml"
    if path.exists():
        raise CalibrationError(f"{path}: already exists; judge versions are never overwritten")
    path.write_text(yaml.safe_dump(version.model_dump(mode="json"), sort_keys=False,
                                   allow_unicode=True))
    return path
