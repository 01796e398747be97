"""The review queue's scores and ranking (judge.learn.select), on hand-made candidates.

Every expected number is worked out by hand in the comment beside it.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest

from judge.learn.select import (
    Candidate,
    Pick,
    SelectError,
    committee,
    mean_kl,
    rank,
    uncertainty,
    vote_entropy,
)


def cand(rid: str, pa=(0.9, 0.9, 0.9), ps=(0.1, 0.1, 0.1), classes=(None, None, None),
         ac: float = 0.9, sc: float = 0.9, task: str = "t", policy: str = "v/p@1",
         body: str = "arm/hand") -> Candidate:
    return Candidate(rid, task, policy, body, tuple(pa), tuple(ps), tuple(classes), ac, sc)


def test_mean_kl_to_the_consensus_in_units_of_ln2():
    assert mean_kl([0.5, 0.5, 0.5]) == 0.0
    assert mean_kl([1.0, 0.0]) == 1.0  # mean 1/2: KL = ln 2 each, / ln 2
    # mean 1/2; KL(.9||.5) = KL(.1||.5) = .9 ln 1.8 + .1 ln .2, KL(.5||.5) = 0; mean of 3
    assert mean_kl([0.9, 0.1, 0.5]) == pytest.approx(
        2 / 3 * (0.9 * math.log(1.8) + 0.1 * math.log(0.2)) / math.log(2), abs=1e-12)
    assert mean_kl([0.9, 0.1, 0.5]) == pytest.approx(0.354003, abs=1e-6)
    assert mean_kl([]) == 0.0


def test_vote_entropy_of_the_named_classes_in_units_of_ln3():
    assert vote_entropy(["a.x", "b.y", "c.z"]) == pytest.approx(1.0)
    # counts 2, 1 of 3: -(2/3 ln 2/3 + 1/3 ln 1/3) / ln 3 = 1 - (2/3) ln 2 / ln 3
    assert vote_entropy(["a.x", "a.x", "b.y"]) == pytest.approx(
        1 - 2 / 3 * math.log(2) / math.log(3))
    assert vote_entropy(["a.x", "b.y", None]) == pytest.approx(math.log(2) / math.log(3))
    assert vote_entropy(["a.x", None, None]) == 0.0  # one voter cannot disagree
    assert vote_entropy([None, None, None]) == 0.0
    assert vote_entropy(["a.x", "a.x", "a.x"]) == 0.0


def test_committee_score_sums_the_three_and_names_the_widest_disagreement():
    score, why = committee(cand("r", ps=(0.9, 0.1, 0.5)))
    assert score == pytest.approx(0.354003, abs=1e-6)  # attempt agrees, no class named
    assert why == "models disagree on success: 0.90 / 0.10 / 0.50 (mean KL to consensus 0.35)"
    score, why = committee(cand("r", classes=("grasp.slip", "grasp.miss", "motion.stall")))
    assert (score, why) == (pytest.approx(1.0), "models name different failure classes: "
                            "grasp.slip / grasp.miss / motion.stall")
    score, why = committee(cand("r", pa=(0.2, 0.2, 0.2), ps=(0.1, 0.1, 0.1)))
    assert (score, why) == (0.0, "models agree (attempt 0.20 / 0.20 / 0.20, "
                            "success 0.10 / 0.10 / 0.10)")
    # equal parts: success is named before attempt
    _, why = committee(cand("r", pa=(0.9, 0.1, 0.5), ps=(0.9, 0.1, 0.5)))
    assert why.startswith("models disagree on success")


def test_uncertainty_is_one_minus_the_lower_confidence():
    assert uncertainty(cand("r", ac=0.9, sc=0.6)) == (
        pytest.approx(0.4), "the judge is unsure of success: confidence 0.60")
    assert uncertainty(cand("r", ac=0.55, sc=0.8)) == (
        pytest.approx(0.45), "the judge is unsure of attempt: confidence 0.55")
    assert uncertainty(cand("r", ac=0.7, sc=0.7))[1].endswith("success: confidence 0.70")


def test_ties_go_to_the_run_id_that_sorts_first_even_through_float_noise():
    # the same three probabilities in other orders: equal scores up to rounding noise
    cands = [cand("r-c", ps=(0.5, 0.1, 0.9)), cand("r-a", ps=(0.9, 0.5, 0.1)),
             cand("r-b", ps=(0.1, 0.9, 0.5)), cand("r-0")]
    picks = rank(cands, "committee", 10)
    assert [p.run_id for p in picks] == ["r-a", "r-b", "r-c", "r-0"]
    assert [p.rank for p in picks] == [1, 2, 3, 4]
    assert picks[0].score == picks[1].score == picks[2].score == round(
        2 / 3 * (0.9 * math.log(1.8) + 0.1 * math.log(0.2)) / math.log(2), 12)
    assert picks[3] == Pick("r-0", 4, 0.0, "committee", "models agree (attempt 0.90 / 0.90 / "
                            "0.90, success 0.10 / 0.10 / 0.10)")
    same = [cand(r, ac=0.8, sc=0.8) for r in ("z", "m", "a")]
    assert [p.run_id for p in rank(same, "uncertainty", 2)] == ["a", "m"]


def test_n_caps_the_list_and_nothing_to_pick_is_an_empty_list():
    cands = [cand(f"r{i}", ps=(0.1 * i, 0.5, 0.5)) for i in range(6)]
    assert [p.run_id for p in rank(cands, "committee", 2)] == ["r0", "r1"]  # KL grows off 0.5
    for strategy in ("committee", "uncertainty", "random", "coverage"):
        assert rank([], strategy, 5) == []
        assert len(rank(cands, strategy, 100)) == 6


def test_random_is_seeded_and_a_runs_place_does_not_move_when_runs_arrive():
    cands = [cand(f"run-{i:02d}") for i in range(20)]
    order = [p.run_id for p in rank(cands, "random", 20, seed=3)]
    assert order == [p.run_id for p in rank(cands, "random", 20, seed=3)]
    assert order != [p.run_id for p in rank(cands, "random", 20, seed=4)]
    assert sorted(order) == sorted(c.run_id for c in cands)
    more = [p.run_id for p in rank([*cands, cand("run-99"), cand("run-98")], "random", 22, seed=3)]
    assert [r for r in more if r not in ("run-98", "run-99")] == order
    picks = rank(cands, "random", 20, seed=3)
    assert all(0 <= p.score < 1 and p.reason == "random pick (seed 3)" for p in picks)
    assert [p.score for p in picks] == sorted((p.score for p in picks), reverse=True)


def test_coverage_spreads_the_picks_over_strata_with_few_labels():
    # two labels so far, both of task A, policy P, body B
    labelled = Counter({("task", "A"): 2, ("policy", "P"): 2, ("body", "B"): 2})
    cands = [cand("a1", task="A", policy="P", body="B"), cand("b2", task="B", policy="P",
                                                                  body="B"),
             cand("b1", task="B", policy="P", body="B")]
    picks = rank(cands, "coverage", 3, labelled=labelled)
    # 1st: a1 (1/3 + 1/3 + 1/3)/3 = 1/3; b1, b2 (1 + 1/3 + 1/3)/3 = 5/9, a tie: b1 sorts first
    # 2nd: b2 (1/2 + 1/4 + 1/4)/3 = 1/3 > a1 (1/3 + 1/4 + 1/4)/3 = 5/18
    # 3rd: a1 (1/3 + 1/5 + 1/5)/3 = 11/45
    assert [(p.run_id, p.rank) for p in picks] == [("b1", 1), ("b2", 2), ("a1", 3)]
    assert [p.score for p in picks] == [round(5 / 9, 12), round(1 / 3, 12), round(11 / 45, 12)]
    assert picks[0].reason == "few labels: task B 0, policy P 2, body B 2"
    assert picks[2].reason == "few labels: task A 2, policy P 4, body B 4"
    assert labelled == Counter({("task", "A"): 2, ("policy", "P"): 2, ("body", "B"): 2})


def test_coverage_breaks_equal_shares_by_committee_disagreement():
    cands = [cand("a", task="T"), cand("b", task="T", ps=(0.9, 0.1, 0.5))]
    assert [p.run_id for p in rank(cands, "coverage", 2)] == ["b", "a"]


def test_an_unknown_strategy_names_the_known_ones():
    with pytest.raises(SelectError, match=r"--strategy 'loudest': expected one of committee, "
                       r"uncertainty, random, coverage"):
        rank([cand("r")], "loudest", 1)
