"""``rcjudge eval``: how often a judge version is right, on labelled runs it never trained on.

Where it sits: after the ledgers, beside ``calibrate`` and ``train``. In: the judgments of
one version (or two, ``--compare``) from the ledger, and the truth: a label file (the
``rcjudge labels import`` format plus an optional ``near_threshold`` column) or the
ledger's current operator labels. Runs are joined by run id, and every labelled run lands
in exactly one count: *not judged* (a version has no judgment of it), *trained on* (its
bundle hash is in a version's ``training.used_runs``) or *scored*. With two versions,
scored means judged by both and trained on by neither: both are scored on the same runs.
The truth comes from :mod:`judge.learn.truth`; the report dict goes to
:mod:`judge.learn.report` (text, JSON, HTML and PNGs).

The scores, per version: for attempt and success, accuracy, precision, recall, ROC-AUC of
the P(yes) the answer and its confidence imply, ECE of the confidence with its reliability
bins (as ``rcjudge calibrate`` reports them); failure-class accuracy with a confusion
matrix; slices per task, per true outcome (success, each failure class: which outcomes the
judge misreads), and near-threshold runs; percentile bootstrap intervals over resampled
runs (``docs/eval.md``). Beside the scores, each version's success rate over every run it
judged: judge-only, labels-only and rectified by the ledger's sampled labels the version
never trained on (``docs/rates.md``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from judge.ensemble.judgment import Judgment
from judge.ensemble.version import Training, load_judge_version, version_dirs, version_file
from judge.learn.metrics import (
    binary_counts,
    bootstrap_interval,
    brier,
    brier_skill,
    ece,
    precision_recall,
    reliability,
    roc_auc,
)
from judge.learn.truth import EvalError, Truth, ledger_truth
from judge.ledgers.records import Label
from judge.ledgers.store import Ledger
from rcjudge import strict_json
from rcjudge.home import models_dir

QUESTIONS = ("attempt", "success")
#: A version giving one answer to at least this share of the scored runs is flagged: its
#: accuracy and ECE then describe the base rate, not what it sees (issue 32).
ONE_ANSWER_SHARE = 0.95
NO_CLASS = "none"  # the judged class of a run the judge called a success, or left without one
SUCCESS, FAILURE = "success", "failure"  # per_outcome keys beside the failure classes
_HASH = re.compile(r"^[0-9a-f]{64}$")


def _r4(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def _ci(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else [round(interval[0], 4), round(interval[1], 4)]


# --- the versions and what they trained on ------------------------------------------

@dataclass(frozen=True)
class Candidate:
    """A judge version under evaluation and the bundle hashes of the runs it trained on."""

    name: str
    version_file: str
    training: Training | None
    used_runs_file: str | None
    used_runs: frozenset[str]

    def summary(self) -> dict[str, Any]:
        t = self.training
        return {"version_file": self.version_file, "training": None if t is None else {
            "parent": t.parent, "runs": t.runs, "used_runs_file": self.used_runs_file,
            "used_runs": len(self.used_runs)}}


def read_used_runs(path: Path, version: str) -> frozenset[str]:
    """Bundle hashes in a ``training.used_runs`` file: a JSON list of 64-hex strings, or an
    object whose ``bundle_hashes`` is one.

    Raises:
        EvalError: the file is missing, unreadable or holds something else.
    """
    try:
        data = strict_json.load_file(path)
    except FileNotFoundError:
        raise EvalError(f"judge version {version!r}: training.used_runs file {path} not "
                        "found; eval never scores the runs a version trained on, so it needs "
                        "that list") from None
    except (OSError, strict_json.StrictJsonError) as exc:
        raise EvalError(f"{path}: cannot read the used runs of {version!r}: {exc}") from None
    hashes = data.get("bundle_hashes") if isinstance(data, dict) else data
    if not isinstance(hashes, list):
        raise EvalError(f"{path}: expected a JSON list of bundle hashes (or an object with a "
                        f"'bundle_hashes' list), got {type(data).__name__}")
    bad = [h for h in hashes if not (isinstance(h, str) and _HASH.match(h))]
    if bad:
        raise EvalError(f"{path}: {len(bad)} entry(ies) are not a 64-hex bundle hash, "
                        f"the first {bad[0]!r}")
    return frozenset(hashes)


def load_candidate(spec: str, known: list[str]) -> Candidate:
    """The version ``spec`` (a name under ``configs/judges/`` or ``$RCJUDGE_HOME/judges/``, or
    a YAML file), checked against ``known``, the versions the ledger has judgments of; with
    its used runs read.

    A relative ``used_runs`` path is taken from the version file's folder.

    Raises:
        EvalError: the ledger has no judgment by that version (naming the known ones), or
            a version named in the ledger has no version file.
        ConfigError: the version file is invalid.
    """
    def unknown(name: str) -> EvalError:
        return EvalError(f"judge version {name!r} has no judgments in the ledger; known: "
                         + (", ".join(known) or "none (the ledger holds no judgments)"))

    path = Path(spec)
    if path.suffix not in (".yaml", ".yml"):
        if spec not in known:
            raise unknown(spec)
        found = version_file(spec)
        if found is None:
            where = " or ".join(str(d / f"{spec}.yaml") for d in version_dirs())
            raise EvalError(f"judge version {spec!r}: no version file {where}; eval reads its "
                            "training block to leave out the runs it trained on: pass the "
                            "version's YAML file to --judge / --compare")
        path = found
    version = load_judge_version(str(path))
    if version.name not in known:
        raise unknown(version.name)
    t = version.training
    if t is None:
        return Candidate(version.name, str(path), None, None, frozenset())
    used = Path(t.used_runs.replace("{models_dir}", str(models_dir()))).expanduser()
    used = used if used.is_absolute() else path.parent / used
    return Candidate(version.name, str(path), t, str(used), read_used_runs(used, version.name))


# --- joining truth and judgments ----------------------------------------------------

@dataclass(frozen=True)
class Row:
    """One scored run: its truth and each candidate's judgment, in candidate order."""

    run_id: str
    task_id: str
    truth: Truth
    judgments: tuple[Judgment, ...]


def join(ledger: Ledger, candidates: list[Candidate],
         truth: dict[str, Truth]) -> tuple[list[Row], dict[str, Any]]:
    """The scored rows (run id order) and the count of every labelled run (see the docstring)."""
    judged = [ledger.judged_run_ids(c.name) for c in candidates]
    every = sorted(set(truth).intersection(*judged))
    not_judged = sorted(set(truth) - set(every))
    rows: list[Row] = []
    trained: dict[str, list[str]] = {c.name: [] for c in candidates}
    excluded: list[str] = []
    for rid in every:
        js = tuple(ledger.get_judgment(rid, c.name) for c in candidates)
        hit = [c.name for c in candidates if js[0].bundle_hash in c.used_runs]
        for name in hit:
            trained[name].append(rid)
        if hit:
            excluded.append(rid)
        else:
            rows.append(Row(rid, js[0].task_id, truth[rid], js))
    runs = {"labelled": len(truth),
            "not_judged": {"count": len(not_judged),
                           "by_version": {c.name: len(set(truth) - j)
                                          for c, j in zip(candidates, judged, strict=True)},
                           "run_ids": not_judged},
            "trained_on": {"count": len(excluded),
                           "by_version": {n: len(v) for n, v in trained.items()},
                           "run_ids": excluded},
            "scored": len(rows),
            "scored_on": ("labelled runs both versions judged and neither trained on"
                          if len(candidates) > 1 else
                          "labelled runs the version judged and did not train on")}
    return rows, runs


# --- scores -------------------------------------------------------------------------

def question_scores(answer: np.ndarray, confidence: np.ndarray, truth: np.ndarray,
                    resamples: int, seed: int) -> dict[str, Any]:
    """One question: accuracy, precision, recall, ROC-AUC, ECE with bins, intervals."""
    n = len(truth)
    if n == 0:
        return {"n": 0}
    right = answer == truth
    p_yes = np.where(answer, confidence, 1 - confidence)  # what answer + confidence imply
    precision, recall = precision_recall(answer, truth)
    return {"n": n, "accuracy": _r4(right.mean()),
            "accuracy_ci": _ci(bootstrap_interval(lambda i: right[i].mean(), n, resamples,
                                                  seed)),
            "precision": _r4(precision), "recall": _r4(recall),
            "roc_auc": _r4(roc_auc(p_yes, truth.astype(int))),
            "ece": _r4(ece(confidence, right)),
            "ece_ci": _ci(bootstrap_interval(lambda i: ece(confidence[i], right[i]), n,
                                             resamples, seed)),
            "brier": _r4(brier(p_yes, truth)),
            "brier_ci": _ci(bootstrap_interval(lambda i: brier(p_yes[i], truth[i]), n,
                                               resamples, seed)),
            "brier_skill": _r4(brier_skill(p_yes, truth)), "base_rate": _r4(truth.mean()),
            "one_answer": one_answer(answer, truth),
            "mean_confidence": _r4(confidence.mean()),
            "counts": binary_counts(answer, truth), "bins": reliability(confidence, right)}


def one_answer(answer: np.ndarray, truth: np.ndarray) -> dict[str, Any]:
    """The answer given most, its share of the runs, and whether the version answers the
    same to (nearly) every run: the share reaches :data:`ONE_ANSWER_SHARE` and the version
    gives the other answer to fewer than half of the runs whose truth is the other answer
    (or there are none). A truth that is itself one-sided, answered right, is not flagged."""
    yes = float(np.mean(answer))
    share = max(yes, 1.0 - yes)
    most = yes >= 0.5
    other = truth != most
    says_other = bool(other.any()) and float(np.mean(answer[other] != most)) >= 0.5
    return {"answer": "yes" if most else "no", "share": _r4(share),
            "flag": bool(share >= ONE_ANSWER_SHARE and not says_other)}


def class_scores(true_class: list[str | None], judged_class: list[str | None],
                 resamples: int, seed: int) -> dict[str, Any]:
    """Failure-class accuracy on the runs whose truth is a failure with a class."""
    pairs = [(t, j or NO_CLASS) for t, j in zip(true_class, judged_class, strict=True)
             if t is not None]
    right = np.array([t == j for t, j in pairs], bool)
    confusion: dict[str, dict[str, int]] = {}
    for t, j in sorted(pairs):
        confusion.setdefault(t, {})
        confusion[t][j] = confusion[t].get(j, 0) + 1
    return {"n": len(pairs), "accuracy": _r4(right.mean()) if pairs else None,
            "accuracy_ci": _ci(bootstrap_interval(lambda i: right[i].mean(), len(pairs),
                                                  resamples, seed)),
            "confusion": confusion,
            "per_class": {t: {"n": sum(row.values()),
                              "accuracy": _r4(row.get(t, 0) / sum(row.values()))}
                          for t, row in confusion.items()}}


def outcome(label: Label) -> str:
    """A run's true outcome for the ``per_outcome`` slice: ``success``, its failure class, or
    ``failure`` (a failure labelled without a class)."""
    if label.success:
        return SUCCESS
    return label.failure_class or FAILURE


def _outcome_order(o: str) -> tuple[int, str]:
    """``success`` first, the classes alphabetically, ``failure`` last."""
    return (o != SUCCESS) + (o == FAILURE), o


def _arrays(rows: list[Row], k: int) -> dict[str, np.ndarray]:
    js = [r.judgments[k] for r in rows]
    return {"attempt": np.array([j.attempt for j in js], bool),
            "success": np.array([j.success for j in js], bool),
            "attempt_confidence": np.array([j.attempt_confidence for j in js], float),
            "success_confidence": np.array([j.success_confidence for j in js], float),
            "true_attempt": np.array([r.truth.label.attempt for r in rows], bool),
            "true_success": np.array([r.truth.label.success for r in rows], bool)}


def _both_questions(a: dict[str, np.ndarray], mask: np.ndarray, resamples: int,
                    seed: int) -> dict[str, Any]:
    return {q: question_scores(a[q][mask], a[f"{q}_confidence"][mask], a[f"true_{q}"][mask],
                               resamples, seed) for q in QUESTIONS}


def _slice(a: dict[str, np.ndarray], mask: np.ndarray) -> dict[str, Any]:
    """Runs and attempt / success accuracy of one slice (``mask`` selects at least one run)."""
    return {"n": int(mask.sum()),
            "attempt_accuracy": _r4((a["attempt"] == a["true_attempt"])[mask].mean()),
            "success_accuracy": _r4((a["success"] == a["true_success"])[mask].mean())}


def version_scores(rows: list[Row], k: int, resamples: int, seed: int) -> dict[str, Any]:
    """Every score of candidate ``k`` on ``rows``."""
    a = _arrays(rows, k)
    everyone = np.ones(len(rows), bool)
    tasks = np.array([r.task_id for r in rows])
    out = _both_questions(a, everyone, resamples, seed)
    out["failure_class"] = class_scores([r.truth.label.failure_class for r in rows],
                                        [r.judgments[k].failure_class for r in rows],
                                        resamples, seed)
    out["per_task"] = {t: _slice(a, tasks == t) for t in sorted(set(tasks))}
    outcomes = np.array([outcome(r.truth.label) for r in rows])
    out["per_outcome"] = {o: _slice(a, outcomes == o)
                          for o in sorted(set(outcomes), key=_outcome_order)}
    near = [r.truth.near_threshold for r in rows]
    out["near_threshold"] = None if all(v is None for v in near) else {
        "near": {"n": near.count(True), **_both_questions(
            a, np.array([v is True for v in near]), resamples, seed)},
        "other": {"n": near.count(False), **_both_questions(
            a, np.array([v is False for v in near]), resamples, seed)},
        "not_given": near.count(None)}
    return out


def differences(rows: list[Row], resamples: int, seed: int) -> dict[str, Any]:
    """Second version minus first, with paired bootstrap intervals (the same resamples)."""
    a, b = _arrays(rows, 0), _arrays(rows, 1)
    out: dict[str, Any] = {}
    for q in QUESTIONS:
        ra, rb = a[q] == a[f"true_{q}"], b[q] == b[f"true_{q}"]
        ca, cb = a[f"{q}_confidence"], b[f"{q}_confidence"]
        yq = a[f"true_{q}"]
        pa, pb = np.where(a[q], ca, 1 - ca), np.where(b[q], cb, 1 - cb)  # P(yes) of each
        out[q] = {"accuracy": _r4(rb.mean() - ra.mean()),
                  "accuracy_ci": _ci(bootstrap_interval(lambda i, ra=ra, rb=rb:
                                                        rb[i].mean() - ra[i].mean(),
                                                        len(rows), resamples, seed)),
                  "ece": _r4(ece(cb, rb) - ece(ca, ra)),
                  "ece_ci": _ci(bootstrap_interval(
                      lambda i, ra=ra, rb=rb, ca=ca, cb=cb: ece(cb[i], rb[i]) - ece(ca[i], ra[i]),
                      len(rows), resamples, seed)),
                  "brier": _r4(brier(pb, yq) - brier(pa, yq)),
                  "brier_ci": _ci(bootstrap_interval(
                      lambda i, pa=pa, pb=pb, yq=yq: brier(pb[i], yq[i]) - brier(pa[i], yq[i]),
                      len(rows), resamples, seed)),
                  "flips_to_right": int((rb & ~ra).sum()),
                  "flips_to_wrong": int((ra & ~rb).sum())}
    classed = [r for r in rows if r.truth.label.failure_class is not None]
    right = np.array([[(r.judgments[k].failure_class or NO_CLASS) == r.truth.label.failure_class
                       for k in (0, 1)] for r in classed], bool).reshape(-1, 2)
    out["failure_class"] = {
        "accuracy": _r4(right[:, 1].mean() - right[:, 0].mean()) if classed else None,
        "accuracy_ci": _ci(bootstrap_interval(lambda i: right[i, 1].mean() - right[i, 0].mean(),
                                              len(classed), resamples, seed))}
    return out


def flips(rows: list[Row], names: tuple[str, str]) -> list[dict[str, Any]]:
    """Runs whose attempt or success answer changed between the versions, and who was right."""
    out = []
    for r in rows:
        js = r.judgments
        changed = [q for q in QUESTIONS if getattr(js[0], q) != getattr(js[1], q)]
        if not changed:
            continue
        lab = r.truth.label
        out.append({
            "run_id": r.run_id, "task_id": r.task_id, "changed": changed,
            "truth": {"attempt": lab.attempt, "success": lab.success,
                      "failure_class": lab.failure_class},
            "answers": {n: {"attempt": j.attempt, "success": j.success,
                            "failure_class": j.failure_class}
                        for n, j in zip(names, js, strict=True)},
            "right": {q: names[0] if getattr(js[0], q) == getattr(lab, q) else names[1]
                      for q in changed}})
    return out


# --- the whole eval -----------------------------------------------------------------

def check_resamples(resamples: int) -> None:
    """Refuse a negative ``--bootstrap`` (0 turns the intervals off)."""
    if resamples < 0:
        raise EvalError(f"--bootstrap {resamples}: expected a number of resamples >= 0 "
                        "(0: no intervals)")


def evaluate(ledger: Ledger, specs: list[str], truth: dict[str, Truth] | None = None,
             truth_file: str | None = None, resamples: int = 1000,
             seed: int = 0) -> dict[str, Any]:
    """The eval report of one version (or two: ``specs[1]`` is the one compared).

    ``truth`` from :func:`read_truth_file` (``truth_file`` names it in the report), else
    the ledger's current operator labels.

    Raises:
        EvalError: an unknown version, the same version twice, or no run left to score.
    """
    check_resamples(resamples)
    known = ledger.judge_versions()
    candidates = [load_candidate(s, known) for s in specs]
    names = [c.name for c in candidates]
    if len(set(names)) < len(names):
        raise EvalError(f"--compare {specs[1]!r} is the same version as --judge ({names[0]!r})")
    if truth is None:
        truth, truth_file = ledger_truth(ledger), None
    rows, runs = join(ledger, candidates, truth)
    if not rows:
        source = f"in {truth_file}" if truth_file else "among the ledger's operator labels"
        raise EvalError(f"no labelled run to score for {', '.join(names)}: {len(truth)} "
                        f"labelled {source}, {runs['not_judged']['count']} not judged, "
                        f"{runs['trained_on']['count']} trained on"
                        + ("" if truth_file else "; import labels with `rcjudge labels "
                           "import` or pass --labels FILE"))
    report: dict[str, Any] = {
        "judge": names[0], "compare": names[1] if len(names) > 1 else None,
        "truth": {"source": "file" if truth_file else "ledger", "file": truth_file,
                  "labelled_runs": len(truth),
                  "near_threshold_given": sum(t.near_threshold is not None
                                              for t in truth.values())},
        "runs": runs,
        "bootstrap": {"resamples": resamples, "seed": seed, "level": 0.95,
                      "method": "percentile, runs resampled with replacement"},
        "versions": {c.name: {**c.summary(), **version_scores(rows, k, resamples, seed)}
                     for k, c in enumerate(candidates)},
        "differences": None, "flips": None}
    if len(candidates) > 1:
        report["differences"] = differences(rows, resamples, seed)
        report["flips"] = flips(rows, (names[0], names[1]))
    report["rates"] = success_rates(ledger, candidates)
    return report


def success_rates(ledger: Ledger, candidates: list[Candidate]) -> dict[str, Any]:
    """Each version's success rate over every run it judged: judge-only (uncorrected),
    labels-only and rectified by the ledger's sampled labels it never trained on
    (:func:`judge.learn.rates_report.overall`; docs/rates.md)."""
    from judge.learn.rate_inputs import rate_rows
    from judge.learn.rates_report import overall

    return {c.name: overall(rate_rows(ledger, c.name, "success", ("policy",),
                                      trained_on=c.used_runs or None))
            for c in candidates}
