"""``rcjudge calibrate``: fit calibration on operator labels so the reported confidences are true.

Data: every judgment of the version whose run has a current operator label (the
calibration set alone holds only disagreements, a biased sample; the labels are the
truth). Split by task, not by run: the held-out tasks are never seen by the fit.

Two layers, each a Platt map ``p' = sigmoid(a · logit(p) + b)`` fitted by Newton's
method on the log loss, with a small L2 pull toward the identity map (a = 1, b = 0):

1. per model and question, on the model's raw P(yes) (this can move its hard vote);
2. on the ensemble's mean P(yes) per question (``vote.calibration``), which is what
   the confidences are read from (``judge.ensemble.vote``).

A fit whose slope comes out ≤ 0 (the model ranks runs backwards, or not at all) is
replaced by a constant map: slope 0 and the bias refitted alone.

Report, on the held-out tasks, for attempt and success separately, before and after:
accuracy of the decision exactly as the judge makes it (the attempt gate included),
ECE of the confidence a user receives with its reliability bins, ROC-AUC of the
ensemble's P(yes). Then the maps are fitted again on all labelled runs, and that is
the version written.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from judge.config import configs_dir
from judge.ensemble.version import Calibration, JudgeVersion, Platt, version_file
from judge.ensemble.vote import EPS, ModelVote, calibrate, ensemble_p, vote
from judge.errors import JudgeError
from judge.learn.metrics import ece, reliability, roc_auc
from judge.ledgers.store import Ledger
from rcjudge.home import judges_dir

QUESTIONS = ("attempt", "success")


class CalibrationError(JudgeError, ValueError):
    """Too few labels, or labels that cannot be split by task."""


def logit(p: np.ndarray) -> np.ndarray:
    """Vectorised :func:`judge.ensemble.vote.logit`: the same clip, so fit and apply agree."""
    p = np.clip(np.asarray(p, float), EPS, 1 - EPS)
    return np.log(p / (1 - p))


def newton_logistic(design: np.ndarray, y: np.ndarray, w: np.ndarray, prior: np.ndarray,
                    l2: float | np.ndarray, iters: int) -> np.ndarray:
    """Minimise Σ log-loss(design @ w, y) + ½ Σ l2 · (w − prior)² by damped Newton
    (``l2``: one strength, or one per coefficient)."""
    l2 = np.broadcast_to(np.asarray(l2, float), w.shape)

    def loss(v: np.ndarray) -> float:
        z = design @ v
        return float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * np.sum(l2 * (v - prior) ** 2))

    current = loss(w)
    for _ in range(iters):
        q = 0.5 * (1 + np.tanh(0.5 * (design @ w)))  # sigmoid without overflow
        grad = design.T @ (q - y) + l2 * (w - prior)
        hess = design.T @ (design * (q * (1 - q))[:, None]) + np.diag(l2)
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while t > 1e-8 and loss(w - t * step) > current:
            t *= 0.5  # backtrack: plain Newton can overshoot on logistic losses
        w = w - t * step
        previous, current = current, loss(w)
        if previous - current < 1e-12:
            break
    return w


def fit_platt(p: np.ndarray, y: np.ndarray, l2: float = 1e-2, iters: int = 100) -> Platt:
    """Platt scaling of ``p`` toward labels ``y``; identity when ``y`` has a single class."""
    y = np.asarray(y, float)
    if len(np.unique(y)) < 2:
        return Platt()
    x = logit(p)
    design = np.stack([x, np.ones_like(x)], axis=1)  # (n, 2)
    a, b = newton_logistic(design, y, np.array([1.0, 0.0]), np.array([1.0, 0.0]), l2, iters)
    if a <= 0:  # no usable ranking: the base rate, with the slope fixed at 0
        (b,) = newton_logistic(np.ones((len(y), 1)), y, np.zeros(1), np.zeros(1), l2, iters)
        return Platt(scale=0.0, bias=float(b))
    return Platt(scale=float(a), bias=float(b))


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

    def subset(self, mask: np.ndarray) -> Dataset:
        return Dataset(self.task[mask], self.p_attempt[mask], self.p_success[mask],
                       self.attempt[mask], self.success[mask])


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
    return Dataset(np.array(task), np.array(pa, float), np.array(ps, float),
                   np.array(a, float), np.array(s, float))


def model_votes(version: JudgeVersion, d: Dataset) -> list[list[ModelVote]]:
    """Each run's three votes under ``version``'s per-model maps (as ``Judge`` makes them)."""
    return [[ModelVote(m.name, calibrate(float(pa), m.calibration.attempt),
                       calibrate(float(ps), m.calibration.success))
             for m, pa, ps in zip(version.models, row_a, row_s, strict=True)]
            for row_a, row_s in zip(d.p_attempt, d.p_success, strict=True)]


def fit_version(version: JudgeVersion, d: Dataset) -> JudgeVersion:
    """``version`` with both layers of maps fitted on ``d`` (see the module docstring)."""
    models = tuple(m.model_copy(update={"calibration": Calibration(
        attempt=fit_platt(d.p_attempt[:, i], d.attempt),
        success=fit_platt(d.p_success[:, i], d.success))}) for i, m in enumerate(version.models))
    per_model = version.model_copy(update={"models": models,
                                           "vote": version.vote.model_copy(
                                               update={"calibration": Calibration()})})
    votes = model_votes(per_model, d)
    mean_a = np.array([np.mean([v.p_attempt for v in row]) for row in votes])
    mean_s = np.array([np.mean([v.p_success for v in row]) for row in votes])
    ensemble = Calibration(attempt=fit_platt(mean_a, d.attempt),
                           success=fit_platt(mean_s, d.success))
    return per_model.model_copy(update={"vote": per_model.vote.model_copy(
        update={"calibration": ensemble})})


def question_report(answer: np.ndarray, conf: np.ndarray, p_yes: np.ndarray,
                    truth: np.ndarray) -> dict:
    """Accuracy, ECE with its reliability bins, ROC-AUC of P(yes), for one question."""
    right = answer == (truth == 1)
    auc = roc_auc(p_yes, truth)
    return {"n": len(truth), "accuracy": round(float(right.mean()), 4),
            "ece": round(ece(conf, right), 4),
            "roc_auc": None if auc is None else round(auc, 4),
            "mean_confidence": round(float(conf.mean()), 4),
            "bins": reliability(conf, right)}


def confidence_report(version: JudgeVersion, d: Dataset) -> dict:
    """What ``version`` reports on ``d``, per question, read against the labels."""
    rows = model_votes(version, d)
    results = [vote(row, version.vote) for row in rows]
    attempt = np.array([r.attempt for r in results])
    success = np.array([r.success for r in results])
    conf_a = np.array([r.attempt_confidence for r in results])
    conf_s = np.array([r.success_confidence for r in results])
    p_a, p_s = np.array([ensemble_p(row, version.vote) for row in rows]).T  # (2, n)
    return {"attempt": question_report(attempt, conf_a, p_a, d.attempt),
            "success": question_report(success, conf_s, p_s, d.success)}


def calibrate_version(ledger: Ledger, version: JudgeVersion, new_name: str,
                      holdout: float = 0.3) -> tuple[JudgeVersion, dict]:
    """Fit on the training tasks, report on the held-out ones, refit on all; see the docstring."""
    d = load_dataset(ledger, version.name)
    held = held_out_tasks(list(d.task), holdout)
    test = np.isin(d.task, sorted(held))
    train_fit = fit_version(version, d.subset(~test))
    final = fit_version(version, d).model_copy(update={
        "name": new_name,
        "description": f"{version.name} + calibration fitted on {len(d.task)} labelled runs"})
    report = {"from": version.name, "to": new_name, "train_runs": int((~test).sum()),
              "held_out_tasks": sorted(held), "fitted_on": len(d.task),
              "before": confidence_report(version, d.subset(test)),
              "after": confidence_report(train_fit, d.subset(test)),
              "calibration": {"models": {m.name: m.calibration.model_dump() for m in final.models},
                              "ensemble": final.vote.calibration.model_dump()}}
    return final, report


def version_path(name: str, out: str | None = None) -> Path:
    """Where a new version is written, not yet taken: ``out``, else
    ``$RCJUDGE_HOME/judges/<name>.yaml`` (never into the package), its folder made.

    Raises:
        CalibrationError: the file exists, or (without ``out``) a version of that name is
            found already (judge versions are never overwritten, nor a name taken twice).
    """
    if out:
        path = Path(out)
    else:
        if (taken := version_file(name)) is not None:
            where = "a shipped" if taken.parent == configs_dir() / "judges" else "a"
            raise CalibrationError(f"{name}: {where} judge version of that name exists, "
                                   f"{taken}; judge versions are never overwritten")
        path = judges_dir() / f"{name}.yaml"
    if path.exists():
        raise CalibrationError(f"{path}: already exists; judge versions are never overwritten")
    return path


def write_version(version: JudgeVersion, out: str | Path | None = None) -> Path:
    """Write ``version`` to :func:`version_path`; never overwrites."""
    path = version_path(version.name, None if out is None else str(out))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(version.model_dump(mode="json", exclude_none=True),
                                   sort_keys=False, allow_unicode=True))
    return path
