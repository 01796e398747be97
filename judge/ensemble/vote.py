"""Vote: three models' probabilities into attempt, success, failure class and two confidences.

Rules (docs/judging.md):

* Calibration first: p' = sigmoid(scale · logit(p) + bias) per model and question.
* A model says yes when p' > yes_threshold (0.5); exactly 0.5 is no.
* attempt and success are each the majority of the three yes/no votes, separately.
  A run not attempted is not a success: attempt = no forces success = no.
* confidence = the mean, over all three models, of the probability each gave to the
  winning answer. It is 1.0 only when all three are certain of it; a dissenting
  model pulls it down by its own certainty.
* failure_class (only when success is no): plurality of the classes named by the
  models that voted "not a success"; ties go to the larger summed P(class), then
  to the name that sorts first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from judge.ensemble.version import Platt


@dataclass(frozen=True)
class ModelVote:
    """One model's answers, calibrated."""

    model: str
    p_attempt: float
    p_success: float
    failure_class: str | None = None
    p_failure_class: float | None = None


@dataclass(frozen=True)
class VoteResult:
    attempt: bool
    success: bool
    attempt_confidence: float
    success_confidence: float
    failure_class: str | None


def calibrate(p: float, platt: Platt) -> float:
    """Platt/temperature map on P(yes); identity for scale 1, bias 0."""
    if platt.scale == 1.0 and platt.bias == 0.0:
        return p
    eps = 1e-12
    q = min(max(p, eps), 1.0 - eps)
    z = platt.scale * math.log(q / (1.0 - q)) + platt.bias
    return 1.0 / (1.0 + math.exp(-z))


def majority(ps: Sequence[float], threshold: float = 0.5) -> tuple[bool, float]:
    """(decision, confidence) of a yes/no vote; see the module docstring."""
    yes = sum(p > threshold for p in ps) * 2 > len(ps)
    conf = sum(p if yes else 1.0 - p for p in ps) / len(ps)
    return yes, conf


def plurality_class(votes: Sequence[ModelVote]) -> str | None:
    """Most named class among the given votes; ties by summed P, then by name."""
    tally: dict[str, list[float]] = {}
    for v in votes:
        if v.failure_class:
            tally.setdefault(v.failure_class, []).append(v.p_failure_class or 0.0)
    if not tally:
        return None
    return min(tally, key=lambda c: (-len(tally[c]), -sum(tally[c]), c))


def vote(votes: Sequence[ModelVote], threshold: float = 0.5) -> VoteResult:
    """Combine three models' calibrated answers."""
    if len(votes) != 3:
        raise ValueError(f"the vote needs 3 models, got {len(votes)}")
    attempt, attempt_conf = majority([v.p_attempt for v in votes], threshold)
    success, success_conf = majority([v.p_success for v in votes], threshold)
    if not attempt and success:
        success = False
        success_conf = sum(1.0 - v.p_success for v in votes) / len(votes)
    failure_class = None
    if not success:
        failure_class = plurality_class([v for v in votes if not v.p_success > threshold])
    return VoteResult(attempt, success, attempt_conf, success_conf, failure_class)
