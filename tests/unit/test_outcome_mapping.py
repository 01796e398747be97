"""A judgment's outcome label: every branch of the mapping (docs/outcomes.md), validated."""

from __future__ import annotations

import pytest

from judge.ensemble.judgment import Cost, Judgment, StageTimings
from judge.outcomes.labels import validate_label
from judge.outcomes.mapping import expert_times, label_from_judgment

FP = "f" * 64


def judgment(attempt: bool, success: bool, failure_class: str | None = None) -> Judgment:
    return Judgment(run_id="r1", bundle_uri="/b/r1", bundle_hash="a" * 64, task_id="t",
                    judge_version="fake-v1", attempt=attempt, success=success,
                    failure_class=failure_class, counts_against_policy=not success,
                    attempt_confidence=0.9, success_confidence=0.7, answers=(), frames=4,
                    timings=StageTimings(intake_s=0, frames_s=0, models_s=0, vote_s=0),
                    cost=Cost(gpu_s=0, cpu_s=0, usd=0), fingerprint=FP)


@pytest.mark.parametrize(("attempt", "success", "cls", "cycle", "expert", "outcome",
                          "mistake", "stage"), [
    (True, True, None, 8.0, 8.0, "expert_success", "", ""),  # at the expert time: expert
    (True, True, None, 8.01, 8.0, "slow_success", "", ""),
    (True, True, None, 30.0, None, "expert_success", "", ""),  # no expert time: not slow
    (False, False, "grasp.miss", 5.0, 8.0, "aborted", "grasp.miss", "grasp"),
    (True, False, "grasp.slip", 5.0, 8.0, "failure", "grasp.slip", "grasp"),
    (True, False, None, 5.0, 8.0, "failure", "", ""),
    (True, True, "grasp.slip", 5.0, 8.0, "expert_success", "", ""),  # a class on a success
])
def test_mapping(attempt, success, cls, cycle, expert, outcome, mistake, stage):
    doc = label_from_judgment(judgment(attempt, success, cls), policy="pi0@2026-09",
                              cycle_sec=cycle, expert_time_s=expert)
    meta = {"judge_version": "fake-v1", "run_id": "r1", "cycle_sec": cycle,
            "attempt_confidence": 0.9, "judge_fingerprint": FP}
    if expert is not None:
        meta["expert_time_s"] = expert
    assert doc == {"outcome": outcome, "mistake_type": mistake, "failure_stage": stage,
                   "autonomy_level": "autonomous", "model_version": "pi0@2026-09",
                   "source": "model", "confidence": 0.7, "source_metadata": meta}
    validate_label(doc)  # a model label passes every rule


def test_expert_times_come_from_the_task_spec():
    assert expert_times()["tabletop.pick_place.cube_001"] == 8.0
