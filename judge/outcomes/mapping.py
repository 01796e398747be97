"""From a judgment to an outcome label (``source: model``): after the vote, pure.

The rules (docs/outcomes.md, "From a judgment to a label"):

* not attempted → ``aborted``;
* attempted and succeeded → ``expert_success`` when the run's cycle time is at most the
  task's expert time, else ``slow_success``; with no expert time known for the task,
  ``expert_success`` and ``source_metadata.expert_time_s`` absent (nothing to be slow
  against);
* attempted and failed → ``failure``. The judge cannot tell a recovered mistake from a
  clean run, so it never writes ``mistake_and_recovery``: a person does;
* ``failure_class`` (``family.name``) → ``mistake_type`` = the class, ``failure_stage``
  = its family; empty on a success or an empty class;
* ``model_version`` = the policy's ``name@version``; ``autonomy_level`` = ``autonomous``
  (a policy rollout);
* ``confidence`` = the success confidence; ``source_metadata`` carries the judge
  version and fingerprint, the run id, the cycle time, the expert time when known and
  the attempt confidence.
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path
from typing import Any

from judge.config import configs_dir
from judge.ensemble.judgment import Judgment
from judge.errors import ConfigError


@cache
def expert_times(path: Path | None = None) -> dict[str, float]:
    """Task id → expert cycle time (s): ``max_cycle_sec`` of a task spec CSV.

    Default: ``configs/examples/task_spec.csv``.
    """
    path = path or configs_dir() / "examples" / "task_spec.csv"
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the task spec: {exc.strerror}") from None
    out = {}
    for i, row in enumerate(rows, start=2):
        try:
            out[row["task_id"]] = float(row["max_cycle_sec"])
        except (KeyError, TypeError, ValueError):
            raise ConfigError(f"{path}: line {i}: max_cycle_sec must be a number "
                              f"(got {row.get('max_cycle_sec')!r})") from None
    return out


def label_from_judgment(judgment: Judgment, *, policy: str, cycle_sec: float,
                        expert_time_s: float | None) -> dict[str, Any]:
    """The label document a judgment writes (validated by the store like any other write).

    Args:
        judgment: the judge version's verdict on the run.
        policy: ``name@version`` of the policy that drove the robot.
        cycle_sec: the run's cycle time (``runs.cycle_sec``).
        expert_time_s: the task's expert time, or None when the task has none.
    """
    if not judgment.attempt:
        outcome = "aborted"
    elif judgment.success:
        slow = expert_time_s is not None and cycle_sec > expert_time_s
        outcome = "slow_success" if slow else "expert_success"
    else:
        outcome = "failure"
    cls = "" if judgment.success else (judgment.failure_class or "")
    meta: dict[str, Any] = {"judge_version": judgment.judge_version,
                            "run_id": judgment.run_id, "cycle_sec": cycle_sec,
                            "attempt_confidence": judgment.attempt_confidence}
    if judgment.fingerprint:
        meta["judge_fingerprint"] = judgment.fingerprint
    if expert_time_s is not None:
        meta["expert_time_s"] = expert_time_s
    return {"outcome": outcome, "mistake_type": cls[:128],
            "failure_stage": cls.split(".", 1)[0] if cls else "",
            "autonomy_level": "autonomous", "model_version": policy[:255],
            "source": "model", "confidence": judgment.success_confidence,
            "source_metadata": meta}
