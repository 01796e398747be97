"""`rcjudge calibrate` on a ledger of over-confident judgments with operator labels."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import numpy as np
import pytest

from judge.api.protocol import Attribution
from judge.ensemble.judgment import Cost, Judgment, ModelAnswer, StageTimings
from judge.ensemble.version import load_judge_version
from judge.learn.calibrate import CalibrationError, calibrate_version, fit_platt
from judge.ledgers.records import Label, Run
from judge.ledgers.seen import Seen, seen_runs
from judge.ledgers.store import Ledger
from rcjudge.cli import main


def attribution(task: str) -> Attribution:
    return Attribution.model_validate({
        "policy": {"vendor": "v", "name": "p", "version": "1", "checkpoint": "c"},
        "body": {"arm": "a", "hand": "h", "dof": 7, "mount_h_mm": 900,
                 "calibrated_at": "2026-01-01"},
        "task": {"id": task, "tier": "A"}, "env": {"x": 1}, "seed": 1})


def fill(ledger: Ledger, n_tasks: int = 6, per_task: int = 20, seed: int = 0) -> None:
    """Runs whose true P(success) is q; every model reports sigmoid(3·logit(q)) (over-confident)."""
    rng = np.random.default_rng(seed)
    for t in range(n_tasks):
        for k in range(per_task):
            rid = f"run-{t}-{k}"
            q = rng.uniform(0.05, 0.95)
            y = bool(rng.random() < q)
            p = float(1 / (1 + np.exp(-3 * np.log(q / (1 - q)))))
            answers = tuple(ModelAnswer(model=m, p_attempt=0.9, p_success=p, p_attempt_raw=0.9,
                                        p_success_raw=p) for m in
                            ("gemma3-tiny", "idefics3-tiny", "llava-tiny"))
            h = f"{t:032x}{k:032x}"
            run = Run(run_id=rid, bundle_uri=f"/b/{rid}", bundle_hash=h,
                      attribution=attribution(f"task.{t}"), duration_s=6.0, cycle_sec=5.0)
            j = Judgment(run_id=rid, bundle_uri=f"/b/{rid}", bundle_hash=h, task_id=f"task.{t}",
                         judge_version="tiny", attempt=True, success=p > 0.5,
                         failure_class=None if p > 0.5 else "grasp.slip",
                         counts_against_policy=p <= 0.5, attempt_confidence=0.9,
                         success_confidence=max(p, 1 - p), answers=answers, frames=6,
                         timings=StageTimings(intake_s=0, frames_s=0, models_s=0, vote_s=0),
                         cost=Cost(gpu_s=0, cpu_s=0, usd=0))
            ledger.record(run, j)
            ledger.add_labels([Label(run_id=rid, attempt=True, success=y, labeled_by="op",
                                     labeled_at=datetime(2026, 11, 1, tzinfo=UTC))])


def test_calibration_recovers_the_overconfidence(tmp_path):
    with Ledger.open(f"sqlite:///{tmp_path / 'c.db'}") as ledger:
        fill(ledger, per_task=60)  # 120 held-out runs: enough for a binned ECE to mean something
        new, report = calibrate_version(ledger, load_judge_version("tiny"), "tiny-cal")
    assert new.name == "tiny-cal"
    assert len(report["held_out_tasks"]) == 2 and report["train_runs"] == 240
    assert report["fitted_on"] == 360
    for m in new.models:
        assert 0.2 < m.calibration.success.scale < 0.5  # true slope 1/3
    before, after = report["before"]["success"], report["after"]["success"]
    assert before["n"] == after["n"] == 120
    # over-confident before: mean confidence far above the accuracy; after: close to it
    assert before["mean_confidence"] - before["accuracy"] > 0.15
    assert abs(after["mean_confidence"] - after["accuracy"]) < 0.06
    assert after["ece"] < before["ece"] / 1.5
    assert sum(b["n"] for b in after["bins"]) == 120 and len(after["bins"]) == 10
    assert all(0.5 <= b["mean_confidence"] <= 1 for b in after["bins"] if b["n"])


def test_the_written_maps_are_refitted_on_all_labelled_runs(tmp_path):
    with Ledger.open(f"sqlite:///{tmp_path / 'c.db'}") as ledger:
        fill(ledger)
        new, _ = calibrate_version(ledger, load_judge_version("tiny"), "tiny-cal")
        rows = [(ledger.get_judgment(r, "tiny").answers[0].p_success_raw,
                 ledger.current_labels()[r].label.success)
                for r in sorted(ledger.judged_run_ids("tiny"))]
    p, y = np.array(rows, float).T
    assert new.models[0].calibration.success == fit_platt(p, y)  # all 120, not the 80


def test_success_accuracy_applies_the_attempt_gate(tmp_path):
    """Runs never attempted whose success answers say yes: the judge says no, and is right."""
    with Ledger.open(f"sqlite:///{tmp_path / 'c.db'}") as ledger:
        for t in range(2):
            for k in range(6):
                rid, h = f"r-{t}-{k}", f"{t:032x}{k:032x}"
                answers = tuple(ModelAnswer(model=m, p_attempt=0.1, p_success=0.9,
                                            p_attempt_raw=0.1, p_success_raw=0.9)
                                for m in ("gemma3-tiny", "idefics3-tiny", "llava-tiny"))
                run = Run(run_id=rid, bundle_uri=f"/b/{rid}", bundle_hash=h,
                          attribution=attribution(f"task.{t}"), duration_s=6.0, cycle_sec=5.0)
                ledger.record(run, Judgment(
                    run_id=rid, bundle_uri=f"/b/{rid}", bundle_hash=h, task_id=f"task.{t}",
                    judge_version="tiny", attempt=False, success=False, failure_class=None,
                    counts_against_policy=True, attempt_confidence=0.9, success_confidence=0.9,
                    answers=answers, frames=6,
                    timings=StageTimings(intake_s=0, frames_s=0, models_s=0, vote_s=0),
                    cost=Cost(gpu_s=0, cpu_s=0, usd=0)))
                ledger.add_labels([Label(run_id=rid, attempt=False, success=False,
                                         labeled_by="op",
                                         labeled_at=datetime(2026, 11, 1, tzinfo=UTC))])
        _, report = calibrate_version(ledger, load_judge_version("tiny"), "x", holdout=0.5)
    before = report["before"]
    assert before["success"]["accuracy"] == 1.0 and before["attempt"]["accuracy"] == 1.0
    assert before["success"]["n"] == 6


def test_cli_writes_a_loadable_version_and_refuses_overwrite(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with Ledger.open(url) as ledger:
        fill(ledger)
    out = tmp_path / "tiny-cal.yaml"
    args = ["calibrate", "--judge", "tiny", "--out", "tiny-cal", "--config", str(out),
            "--db", url, "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    loaded = load_judge_version(str(out))
    assert loaded.name == "tiny-cal"
    assert loaded.models[0].calibration.success.scale == pytest.approx(
        report["calibration"]["models"]["gemma3-tiny"]["success"]["scale"])
    assert loaded.vote.calibration.success.scale == pytest.approx(
        report["calibration"]["ensemble"]["success"]["scale"])
    with Ledger.open(url) as ledger:  # its maps saw every labelled run (issue 37 item 2)
        labelled = frozenset(ledger.current_labels())
        assert len(labelled) == report["fitted_on"]
        assert seen_runs(ledger, "tiny-cal") == Seen("tiny-cal", labelled, ("tiny-cal",), True)
    assert main(args) == 2
    assert "already exists; judge versions are never overwritten" in capsys.readouterr().err


def test_too_few_labels(tmp_path):
    with Ledger.open(f"sqlite:///{tmp_path / 'c.db'}") as ledger:
        fill(ledger, n_tasks=1, per_task=5)
        with pytest.raises(CalibrationError, match=r"5 labelled judgments of 'tiny'; need >= 10"):
            calibrate_version(ledger, load_judge_version("tiny"), "x")
