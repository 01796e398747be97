"""Vote rules with exact values: majorities, confidences, class plurality and ties, calibration."""

from __future__ import annotations

import math

import pytest

from judge.ensemble.version import Platt
from judge.ensemble.vote import ModelVote, calibrate, majority, plurality_class, vote


def mv(pa, ps, cls=None, pc=None, name="m"):
    return ModelVote(name, pa, ps, cls, pc)


def test_unanimous_certain_is_confidence_one():
    r = vote([mv(1.0, 0.0, "grasp.slip", 0.9)] * 3)
    assert (r.attempt, r.success, r.failure_class) == (True, False, "grasp.slip")
    assert r.attempt_confidence == 1.0 and r.success_confidence == 1.0


def test_two_against_one():
    # attempt: 0.9, 0.8 yes, 0.2 no -> yes; the P each gave to "yes": (0.9 + 0.8 + 0.2) / 3
    yes, conf = majority([0.9, 0.8, 0.2])
    assert yes is True and conf == pytest.approx(1.9 / 3)
    # success: 0.3, 0.4 no, 0.7 yes -> no; conf = (0.7 + 0.6 + 0.3) / 3 = 1.6 / 3
    no, conf = majority([0.3, 0.4, 0.7])
    assert no is False and conf == pytest.approx(1.6 / 3)


def test_exactly_half_is_no():
    assert majority([0.5, 0.5, 0.9]) == (False, pytest.approx((0.5 + 0.5 + 0.1) / 3))
    assert majority([0.5000001, 0.5000001, 0.0])[0] is True


def test_disagreement_lowers_confidence_even_when_agreeing_models_are_certain():
    _, conf = majority([1.0, 1.0, 0.0])
    assert conf == pytest.approx(2 / 3)


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
    assert r.success_confidence == pytest.approx(0.2)


def test_calibration_platt_and_temperature():
    assert calibrate(0.7, Platt()) == 0.7
    # temperature 2: logit(0.8) / 2 = ln 4 / 2 = ln 2 -> sigmoid = 2/3
    assert calibrate(0.8, Platt(scale=0.5)) == pytest.approx(2 / 3)
    # bias ln 3 on p = 0.5: sigmoid(ln 3) = 3/4
    assert calibrate(0.5, Platt(bias=math.log(3))) == pytest.approx(0.75)


def test_vote_needs_three():
    with pytest.raises(ValueError, match="needs 3 models, got 2"):
        vote([mv(1, 1), mv(1, 1)])
