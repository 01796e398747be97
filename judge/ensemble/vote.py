"""Vote: three models' probabilities into attempt, success, failure class and two confidences.

Rules (docs/judging.md, "The vote"):

* Calibration per model first: p' = sigmoid(scale · logit(p) + bias) per question.
* A model says yes when p' > yes_threshold (0.5); exactly 0.5 is no.
* attempt and success are each the majority of the three hard yes/no votes, separately
  (the spec's rule). A run not attempted is not a success: attempt = no forces success = no.
* Each confidence estimates the probability that the answer it accompanies is right:
  P_a, P_s = the ensemble's P(yes), the mean of the three calibrated p' mapped by the
  version's ensemble calibration; success is impossible without an attempt, so
  P_s is capped at P_a; confidence = max(1/2, P(the answer given)).
* failure_class (only when success is no): plurality of the classes named by the models
  :func:`class_voters` picks (the same rule decides whom to ask); ties go to the larger
  summed P(class), then to the name that sorts first. Its confidence is the mean over those
  voters of the P(class) each gave it, a voter that named another class counting 0
  (:func:`class_confidence`). Given the taxonomy, an exempt class (not the policy's fault)
  is kept only when that confidence reaches the taxonomy's ``exempt_evidence`` for it;
  otherwise the failure is unclassified and counts against the policy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from judge.ensemble.version import Platt, Vote

if TYPE_CHECKING:
    from judge.ensemble.taxonomy import Taxonomy

#: Probabilities are clipped to [EPS, 1 − EPS] before a logit, when fitting and applying alike.
EPS = 1e-6


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
    failure_class_confidence: float | None = None  # the class vote's (class_confidence)


def logit(p: float) -> float:
    """log(p / (1 − p)) with p clipped to [EPS, 1 − EPS]."""
    q = min(max(p, EPS), 1.0 - EPS)
    return math.log(q / (1.0 - q))


def calibrate(p: float, platt: Platt) -> float:
    """Platt/temperature map on P(yes); identity for scale 1, bias 0."""
    if platt.scale == 1.0 and platt.bias == 0.0:
        return p
    z = platt.scale * logit(p) + platt.bias
    return 0.5 * (1.0 + math.tanh(0.5 * z))  # sigmoid without overflow


def majority(ps: Sequence[float], threshold: float = 0.5) -> bool:
    """True when more than half of the models say yes (P(yes) > threshold)."""
    return sum(p > threshold for p in ps) * 2 > len(ps)


def class_voters(votes: Sequence[ModelVote], threshold: float = 0.5) -> list[int]:
    """Indices of the models whose failure class counts, and who are asked for one.

    None on a success; the models that voted "not a success" when the success vote
    says no; all of them when the no came from the attempt rule alone.
    """
    said_success = [v.p_success > threshold for v in votes]
    if sum(said_success) * 2 > len(votes):
        return [] if majority([v.p_attempt for v in votes], threshold) else list(range(len(votes)))
    return [i for i, yes in enumerate(said_success) if not yes]


def plurality_class(votes: Sequence[ModelVote]) -> str | None:
    """Most named class among the given votes; ties by summed P, then by name."""
    tally: dict[str, list[float]] = {}
    for v in votes:
        if v.failure_class:
            tally.setdefault(v.failure_class, []).append(v.p_failure_class or 0.0)
    if not tally:
        return None
    return min(tally, key=lambda c: (-len(tally[c]), -sum(tally[c]), c))


def class_confidence(voters: Sequence[ModelVote], failure_class: str) -> float:
    """Mean over ``voters`` of the P(class) each gave ``failure_class``; one that named
    another class (or none) counts 0: its P of this class is unknown, and low."""
    return sum(v.p_failure_class or 0.0 for v in voters
               if v.failure_class == failure_class) / len(voters)


def ensemble_p(votes: Sequence[ModelVote], rule: Vote) -> tuple[float, float]:
    """(P_a, P_s): the ensemble's P(attempt) and P(success), with P_s ≤ P_a."""
    p_a = calibrate(sum(v.p_attempt for v in votes) / len(votes), rule.calibration.attempt)
    p_s = calibrate(sum(v.p_success for v in votes) / len(votes), rule.calibration.success)
    return p_a, min(p_s, p_a)


def confidence(answer: bool, p_yes: float) -> float:
    """P(the answer given is right), never below 1/2 (see docs/judging.md)."""
    return max(0.5, p_yes if answer else 1.0 - p_yes)


def p_yes(answer: bool, conf: float) -> float:
    """The ensemble's P(yes) read back from a stored answer and its :func:`confidence`:
    ``conf`` for a yes, ``1 − conf`` for a no. Exact (to the ledger's 6 decimals) wherever
    the hard vote and P(yes) fall on the same side of 1/2; where they do not (two models
    just above the threshold, one far below), the confidence reads 1/2 and so does this.
    Rounded to 12 decimals, so a stored 0.9 for a no reads 0.1."""
    return conf if answer else round(1.0 - conf, 12)


def vote(votes: Sequence[ModelVote], rule: Vote | None = None,
         taxonomy: Taxonomy | None = None) -> VoteResult:
    """Combine three models' calibrated answers; with ``taxonomy``, an exempt class without
    the evidence it needs becomes None (unclassified, counting against the policy)."""
    if len(votes) != 3:
        raise ValueError(f"the vote needs 3 models, got {len(votes)}")
    rule = rule or Vote()
    thr = rule.yes_threshold
    attempt = majority([v.p_attempt for v in votes], thr)
    success = attempt and majority([v.p_success for v in votes], thr)
    p_a, p_s = ensemble_p(votes, rule)
    failure_class, class_conf = None, None
    if not success:
        voters = [votes[i] for i in class_voters(votes, thr)]
        failure_class = plurality_class(voters)
        if failure_class is not None:
            class_conf = class_confidence(voters, failure_class)
            if taxonomy is not None:
                failure_class = taxonomy.file_class(failure_class, class_conf)
    return VoteResult(attempt, success, confidence(attempt, p_a), confidence(success, p_s),
                      failure_class, class_conf)
