"""Vote rules with exact values: majorities, confidences, class plurality and ties, calibration."""

from __future__ import annotations

import math

import pytest

from judge.ensemble.version import Calibration, Platt, Vote
from judge.ensemble.vote import (
    ModelVote,
    calibrate,
    class_voters,
    majority,
    plurality_class,
    vote,
)


def mv(pa, ps, cls=None, pc=None, name="m"):
    return ModelVote(name, pa, ps, cls, pc)


def test_unanimous_certain_is_confidence_one():
    r = vote([mv(1.0, 0.0, "grasp.slip", 0.9)] * 3)
    assert (r.attempt, r.success, r.failure_class) == (True, False, "grasp.slip")
    assert r.attempt_confidence == 1.0 and r.success_confidence == 1.0


def test_two_against_one():
    # attempt: 0.9, 0.8 yes, 0.2 no -> yes; P_a = (0.9 + 0.8 + 0.2) / 3 = 1.9 / 3
    # success: 0.3, 0.4 no, 0.7 yes -> no; P_s = 1.4 / 3 (below P_a) -> "no" right with 1.6 / 3
    r = vote([mv(0.9, 0.3), mv(0.8, 0.4), mv(0.2, 0.7)])
    assert (r.attempt, r.success) == (True, False)
    assert r.attempt_confidence == pytest.approx(1.9 / 3)
    assert r.success_confidence == pytest.approx(1.6 / 3)


def test_exactly_half_is_no():
    assert majority([0.5, 0.5, 0.9]) is False
    assert majority([0.5000001, 0.5000001, 0.0]) is True


def test_disagreement_lowers_confidence_even_when_agreeing_models_are_certain():
    assert vote([mv(1.0, 0.0), mv(1.0, 0.0), mv(0.0, 0.0)]).attempt_confidence == \
        pytest.approx(2 / 3)


def test_class_plurality_then_probability_then_name():
    assert plurality_class([mv(1, 0, "grasp.slip", 0.2), mv(1, 0, "grasp.slip", 0.2),
                            mv(1, 0, "grasp.miss", 0.9)]) == "grasp.slip"
    # 1-1-1 tie: the largest P wins
    assert plurality_class([mv(1, 0, "grasp.slip", 0.3), mv(1, 0, "motion.collision", 0.6),
                            mv(1, 0, "grasp.miss", 0.5)]) == "motion.collision"
    # same count and same P: the name that sorts first
    assert plurality_class([mv(1, 0, "task.timeout", 0.5), mv(1, 0, "grasp.miss", 0.5)]) \
        == "grasp.miss"
    assert plurality_class([mv(1, 0), mv(1, 0)]) is None


def test_only_models_that_judged_failure_name_the_class():
    # success 2-1 no; the model that said success (0.9) named a class that must not count
    r = vote([mv(0.9, 0.2, "grasp.miss", 0.5, "a"), mv(0.9, 0.1, "grasp.slip", 0.4, "b"),
              mv(0.9, 0.9, "motion.collision", 0.99, "c")])
    assert r.success is False
    assert r.failure_class == "grasp.miss"  # 1-1 tie between a and b, larger P wins


def test_success_is_null_class_and_no_attempt_forces_no_success():
    assert vote([mv(0.9, 0.9)] * 3).failure_class is None
    r = vote([mv(0.1, 0.8)] * 3)  # not attempted, yet "success" answers
    assert (r.attempt, r.success) == (False, False)
    assert r.success_confidence == pytest.approx(0.9)  # P(success) <= P(attempt) = 0.1


def test_calibration_platt_and_temperature():
    assert calibrate(0.7, Platt()) == 0.7
    # temperature 2: logit(0.8) / 2 = ln 4 / 2 = ln 2 -> sigmoid = 2/3
    assert calibrate(0.8, Platt(scale=0.5)) == pytest.approx(2 / 3)
    # bias ln 3 on p = 0.5: sigmoid(ln 3) = 3/4
    assert calibrate(0.5, Platt(bias=math.log(3))) == pytest.approx(0.75)


def test_vote_needs_three():
    with pytest.raises(ValueError, match="needs 3 models, got 2"):
        vote([mv(1, 1), mv(1, 1)])


# --- one rule for whose class counts; confidences that mean "P(this answer is right)" -------

def test_a_run_not_attempted_keeps_the_class_all_three_named():
    # attempt 0.2/0.1/0.3 -> no; success 0.9/0.9/0.8 would be yes, but no attempt forces no.
    # The "no" came from the attempt rule, so all three models' classes count.
    votes = [mv(0.2, 0.9, "hardware.estop", 0.6, "a"), mv(0.1, 0.9, "hardware.estop", 0.7, "b"),
             mv(0.3, 0.8, "hardware.estop", 0.5, "c")]
    assert class_voters(votes) == [0, 1, 2]
    r = vote(votes)
    assert (r.attempt, r.success, r.failure_class) == (False, False, "hardware.estop")
    # P(attempt) = 0.2 -> "no" is right with 0.8; P(success) <= P(attempt) = 0.2 -> 0.8
    assert r.attempt_confidence == pytest.approx(0.8)
    assert r.success_confidence == pytest.approx(0.8)


def test_class_voters_is_the_success_no_side_or_nobody():
    assert class_voters([mv(0.9, 0.9), mv(0.9, 0.8), mv(0.9, 0.1)]) == []  # a success
    assert class_voters([mv(0.9, 0.9), mv(0.9, 0.5), mv(0.9, 0.1)]) == [1, 2]  # 0.5 is "no"


def test_confidence_is_never_below_one_half_for_the_answer_given():
    # hard votes 2-1 for success, yet the mean P(success) is 0.34: the ensemble is at best
    # undecided about the answer it gives, so its confidence is 0.5, never 0.34
    r = vote([mv(0.9, 0.51), mv(0.9, 0.51), mv(0.9, 0.0)])
    assert r.success is True
    assert r.success_confidence == pytest.approx(0.5)
    assert r.attempt_confidence == pytest.approx(0.9)


def test_no_success_from_no_attempt_is_at_least_as_sure_as_the_attempt_answer():
    # attempt 0.3 each -> "no" with 0.7; success 0.6 each would be yes, forced no:
    # P(success) <= P(attempt) = 0.3, so "no success" is right with >= 0.7 (today 0.4)
    r = vote([mv(0.3, 0.6)] * 3)
    assert (r.attempt, r.success) == (False, False)
    assert r.attempt_confidence == pytest.approx(0.7)
    assert r.success_confidence == pytest.approx(0.7)
    r = vote([mv(0.4, 0.3)] * 3)  # both "no" on their own: max(1 - 0.3, 1 - 0.4) = 0.7
    assert r.success_confidence == pytest.approx(0.7)
    assert r.success_confidence >= r.attempt_confidence == pytest.approx(0.6)


def test_success_is_no_surer_than_the_attempt():
    r = vote([mv(0.7, 0.9)] * 3)  # P(success) = min(0.9, P(attempt) = 0.7)
    assert (r.success, r.success_confidence, r.attempt_confidence) == \
        (True, pytest.approx(0.7), pytest.approx(0.7))


def test_ensemble_calibration_maps_the_mean_before_the_confidence():
    # success map scale 0.5: logit(0.8) / 2 = ln 2 -> 2/3
    rule = Vote(calibration=Calibration(success=Platt(scale=0.5)))
    r = vote([mv(1.0, 0.8)] * 3, rule)
    assert r.success is True and r.success_confidence == pytest.approx(2 / 3)
