"""Calibration of the reported confidences on labelled synthetic judgments, before and after.

``python -m bench.calibration [--n 200] [--seed 0] [--json]`` fills a temporary SQLite ledger
with N judgments of the ``tiny`` version and their operator labels, then runs
``rcjudge calibrate`` on it. Each run has a latent truth: attempted with P 0.9, and if
attempted a success with P q ~ U(0.05, 0.95) (the label is drawn from it). The three models
see q over-confidently, each in its own way, as VLMs tend to: sigmoid(3·logit q),
sigmoid(2.5·logit q + 0.5) and sigmoid(2·logit q − 0.5), each with logit noise σ = 0.3.
Ten tasks, half held out (``--holdout``). The printed table is the ECE of
``attempt_confidence`` / ``success_confidence`` with the reliability bins on the held-out
tasks, before and after.
"""

from __future__ import annotations

import argparse
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

MODELS = ("gemma3-tiny", "idefics3-tiny", "llava-tiny")


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def fill_ledger(ledger, n: int = 200, seed: int = 0, n_tasks: int = 10) -> None:
    """N labelled judgments of ``tiny`` over ``n_tasks`` tasks (see the module docstring)."""
    from judge.api.protocol import Attribution
    from judge.ensemble.judgment import Cost, Judgment, ModelAnswer, StageTimings
    from judge.ensemble.version import load_judge_version
    from judge.ensemble.vote import ModelVote, vote
    from judge.ledgers.records import Label, Run

    version = load_judge_version("tiny")
    rng = np.random.default_rng(seed)
    labelled_at = datetime(2026, 11, 1, tzinfo=UTC)
    for i in range(n):
        task = f"task.{i % n_tasks}"
        attempted = bool(rng.random() < 0.9)
        q = rng.uniform(0.05, 0.95)
        succeeded = attempted and bool(rng.random() < q)
        lq = np.log(q / (1 - q))
        noise = rng.normal(0.0, 0.3, size=(2, 3))
        p_success = _sigmoid(np.array([3 * lq, 2.5 * lq + 0.5, 2 * lq - 0.5]) + noise[0])
        if not attempted:
            p_success = p_success * 0.3
        p_attempt = _sigmoid((3.0 if attempted else -2.0) + 1.2 * noise[1] / 0.3)
        votes = [ModelVote(m, float(a), float(s))
                 for m, a, s in zip(MODELS, p_attempt, p_success, strict=True)]
        r = vote(votes, version.vote)
        h = f"{seed:032x}{i:032x}"
        attribution = Attribution.model_validate({
            "policy": {"vendor": "v", "name": "p", "version": "1", "checkpoint": "sha256:c"},
            "body": {"arm": "a", "hand": "h", "calibrated_at": "2026-01-01", "dof": 7,
                     "mount_h_mm": 900},
            "task": {"id": task, "tier": "A"}, "env": {"lighting": "lab"}, "seed": i})
        run = Run(run_id=f"run-{i:04d}", bundle_uri=f"/b/run-{i:04d}", bundle_hash=h,
                  attribution=attribution, duration_s=6.0, cycle_sec=5.0)
        judgment = Judgment(
            run_id=run.run_id, bundle_uri=run.bundle_uri, bundle_hash=h, task_id=task,
            judge_version=version.name, attempt=r.attempt, success=r.success,
            failure_class=None if r.success else "grasp.slip",
            counts_against_policy=not r.success,
            attempt_confidence=round(r.attempt_confidence, 6),
            success_confidence=round(r.success_confidence, 6),
            answers=tuple(ModelAnswer(model=v.model, p_attempt=v.p_attempt,
                                      p_success=v.p_success, p_attempt_raw=v.p_attempt,
                                      p_success_raw=v.p_success) for v in votes),
            frames=6, timings=StageTimings(intake_s=0, frames_s=0, models_s=0, vote_s=0),
            cost=Cost(gpu_s=0, cpu_s=0, usd=0))
        ledger.record(run, judgment)
        ledger.add_labels([Label(run_id=run.run_id, attempt=attempted, success=succeeded,
                                 failure_class=None if succeeded else "grasp.slip",
                                 labeled_by="bench", labeled_at=labelled_at)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--holdout", type=float, default=0.5, help="share of tasks held out")
    ap.add_argument("--json", action="store_true", help="print rcjudge calibrate's JSON")
    args = ap.parse_args(argv)

    from judge.ledgers.store import Ledger
    from rcjudge.cli import main as rcjudge

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'calibration.db'}"
        with Ledger.open(url) as ledger:
            fill_ledger(ledger, args.n, args.seed)
        cmd = ["calibrate", "--judge", "tiny", "--out", "tiny-bench-cal", "--config",
               str(Path(tmp) / "tiny-bench-cal.yaml"), "--holdout", str(args.holdout),
               "--db", url]
        return rcjudge([*cmd, "--json"] if args.json else cmd)


if __name__ == "__main__":
    raise SystemExit(main())
