"""The rows rate estimators read (judge.learn.rate_inputs) on SQLite and PostgreSQL: exact
rows of a hand-made ledger with two sampling rounds, what each version may use, and why the
rest is left out."""

from __future__ import annotations

import hashlib

import pytest
import test_ledgers
from test_review_queue import V, attribution, lab, record

from judge.api.protocol import Task
from judge.ensemble.judgment import Cost, Judgment, ModelAnswer, StageTimings
from judge.learn.rate_inputs import LeftOut, RateInputError, RateRow, rate_rows
from judge.ledgers import Ledger, Run
from judge.ledgers.review import Review, add_reviewed_labels
from judge.ledgers.rounds import FrameRow, record_round
from judge.ledgers.seen import record_training

db = test_ledgers.db
ledger = test_ledgers.ledger
A, B = "lab/policy-a@1", "lab/policy-b@1"
UP, DOWN = (0.9, 0.9, 0.9), (0.1, 0.1, 0.1)  # three models' P(success): a yes, a no
#: run -> (policy, task, the models' P, stored success confidence): p = conf for a yes
RUNS = {"a1": ("policy-a", "t.a", UP, 0.8), "a2": ("policy-a", "t.a", DOWN, 0.7),
        "a3": ("policy-a", "t.b", UP, 0.6), "b1": ("policy-b", "t.a", DOWN, 0.9),
        "b2": ("policy-b", "t.b", UP, 0.5), "c1": ("policy-a", "t.a", UP, 0.95)}


def fill(led: Ledger, versions=(V,)) -> None:
    """The six runs judged by each version; two rounds of V; five labels.

    round 1: a1 (pi .5, drawn), a2 (.25), a3 (.5, drawn), b1 (.2, drawn, never labelled);
    round 2: a2 (.4, drawn), b2 (.5). Labels: a1 yes, a3 no (round 1), a2 yes (round 2),
    b2 yes (a committee pick: in round 2's frame, not drawn), c1 yes (imported).
    """
    for version in versions:
        for rid, (policy, task, ps, sc) in RUNS.items():
            record(led, rid, ps, task=task, policy=policy, sc=sc, version=version)
    with led.transaction() as tx:
        r1 = record_round(tx.conn, judge_version=V, strategy="sample", budget=1.45,
                          floor=0.1, seed=0, options={}, frame=[
                              FrameRow("a1", 0.5, 0.8, True), FrameRow("a2", 0.25, 0.3, False),
                              FrameRow("a3", 0.5, 0.6, True), FrameRow("b1", 0.2, 0.1, True)])
        r2 = record_round(tx.conn, judge_version=V, strategy="sample", budget=0.9, floor=0.1,
                          seed=1, options={}, frame=[FrameRow("a2", 0.4, 0.3, True),
                                                     FrameRow("b2", 0.5, 0.5, False)])

    def rv(rnd, pi):
        return Review(judge_version=V, strategy="sample", rank=1, score=pi, reason="",
                      round_id=rnd.round_id, pi=pi)

    add_reviewed_labels(led, [
        (lab("a1", True, 1), rv(r1, 0.5)), (lab("a3", False, 2), rv(r1, 0.5)),
        (lab("a2", True, 3), rv(r2, 0.4)),
        (lab("b2", True, 4), Review(judge_version=V, strategy="committee", rank=1, score=0.3,
                                    reason="models disagree")),
        (lab("c1", True, 5), None)])


def test_rows_of_an_untrained_version_with_two_rounds(ledger):
    fill(ledger)
    got = rate_rows(ledger, V)
    assert (got.judge_version, got.outcome, got.by) == (V, "success", ("policy", "task"))
    assert got.rows == (
        RateRow("a1", (A, "t.a"), 0.8, True, True, 0.5),
        # in both rounds: 1 - (1 - .25)(1 - .4) = .55
        RateRow("a2", (A, "t.a"), 0.3, False, True, 0.55),
        RateRow("c1", (A, "t.a"), 0.95, True, None, None),
        RateRow("a3", (A, "t.b"), 0.6, True, False, 0.5),
        RateRow("b1", (B, "t.a"), 0.1, False, None, None),  # pi only with a label
        RateRow("b2", (B, "t.b"), 0.5, True, None, None))
    # covered: inside a usable frame (c1 is not), less b1, drawn by round 1 and unlabelled
    assert [r.run_id for r in got.covered] == ["a1", "a2", "a3", "b2"]
    assert len(got.rounds) == 2 and got.no_valid_rectification is None
    assert got.left_out == (
        LeftOut("not_drawn", 1, "1 label(s) of runs in a sampling frame that no round drew (a "
                "deterministic pick or an import): used as unlabelled runs"),
        LeftOut("no_pi", 1, "1 label(s) without a recorded inclusion probability (unqueued "
                "1): imported, or picked by a deterministic strategy; `labels import "
                "--random-sample` records a file the lab drew at random"),
        LeftOut("outside_frames", 1, "1 of 6 judged run(s) outside every sampling frame "
                "usable for tiny: in the judge-only rate, not covered by the rectified one"),
        LeftOut("drawn_unlabelled", 1, "1 run(s) drawn by a usable round with no label yet: "
                "label them (a drawn run left unlabelled biases the rectified rate)"))
    # other groupings, and the attempt (every run voted attempt yes at confidence .9)
    assert [r.cell for r in rate_rows(ledger, V, by=("body",)).rows] == [
        ("xArm7/WujiHand2",)] * 6
    assert {r.cell for r in rate_rows(ledger, V, by=("checkpoint", "task")).rows} == {
        (f"{A}#c", "t.a"), (f"{A}#c", "t.b"), (f"{B}#c", "t.a"), (f"{B}#c", "t.b")}
    attempt = rate_rows(ledger, V, outcome="attempt", by=("task",))
    assert [(r.run_id, r.cell, r.p, r.vote, r.y) for r in attempt.rows] == [
        ("a1", ("t.a",), 0.9, True, True), ("a2", ("t.a",), 0.9, True, True),
        ("b1", ("t.a",), 0.9, True, None), ("c1", ("t.a",), 0.9, True, None),
        ("a3", ("t.b",), 0.9, True, True), ("b2", ("t.b",), 0.9, True, None)]


def test_a_version_is_never_rectified_with_labels_it_trained_on(ledger):
    fill(ledger, versions=(V, "v2", "v3"))
    record_training(ledger, "v2", V, "ledger", [("a1", None, "train")])
    got = rate_rows(ledger, "v2")
    # round 1 drew a1, which trained v2: the whole round goes; round 2 is usable
    assert [(r.run_id, r.y, r.pi) for r in got.rows] == [
        ("a1", None, None), ("a2", True, 0.4), ("c1", None, None), ("a3", None, None),
        ("b1", None, None), ("b2", None, None)]
    assert [r.run_id for r in got.covered] == ["a2", "b2"]  # round 2's frame
    assert [(x.reason, x.count) for x in got.left_out] == [
        ("trained", 1), ("round_trained", 1), ("not_drawn", 1), ("no_pi", 1),
        ("outside_frames", 4)]
    assert got.no_valid_rectification is None
    # v3, trained from v2 on the other four labels: it saw all five
    record_training(ledger, "v3", "v2", "labels.csv",
                    [(r, None, "validation") for r in ("a2", "a3", "b2", "c1")])
    got = rate_rows(ledger, "v3")
    assert got.rounds == () and all(r.y is None and r.pi is None for r in got.rows)
    assert got.no_valid_rectification == ("no valid rectification: all 5 labels trained this "
                                          "version")
    assert [(x.reason, x.count) for x in got.left_out] == [("trained", 5),
                                                           ("outside_frames", 6)]


def test_a_version_trained_elsewhere_is_read_from_its_used_runs(ledger):
    fill(ledger)
    a1, a2 = (hashlib.sha256(r.encode()).hexdigest() for r in ("a1", "a2"))  # as record() does
    got = rate_rows(ledger, V, trained_on=[a2])
    # round 2 drew a2: it goes, and b2 (only in its frame) with it; round 1 stays
    assert [(r.run_id, r.y, r.pi) for r in got.rows] == [
        ("a1", True, 0.5), ("a2", None, None), ("c1", None, None), ("a3", False, 0.5),
        ("b1", None, None), ("b2", None, None)]
    assert [r.run_id for r in got.covered] == ["a1", "a2", "a3"]  # round 1's frame, less b1
    assert [(x.reason, x.count) for x in got.left_out] == [
        ("trained", 1), ("no_pi", 2), ("outside_frames", 2), ("drawn_unlabelled", 1)]
    assert "(committee 1, unqueued 1)" in got.left_out[1].detail
    got = rate_rows(ledger, V, trained_on=[a1, a2])  # now both rounds go
    assert all(r.y is None for r in got.rows) and got.rounds == ()
    assert got.no_valid_rectification == (
        "no valid rectification: none of the 5 labels of runs this version judged was drawn "
        "by a sampling round it did not train on (2 trained it, 1 from rounds that trained "
        "it, 2 without a recorded pi)")


def test_bad_options_and_an_unknown_version_are_one_line_errors(ledger):
    with pytest.raises(RateInputError, match=r"--judge 'tiny': no judgment of this version in "
                                             r"the ledger \(versions with judgments: none\)"):
        rate_rows(ledger, V)
    with pytest.raises(RateInputError, match=r"--outcome 'class': expected one of success, "
                                             r"attempt"):
        rate_rows(ledger, V, outcome="class")
    for by in ((), ("policy", "policy"), ("arm",)):
        with pytest.raises(RateInputError, match=r"--by '.*': expected distinct keys among "
                                                 r"policy, task, body, checkpoint"):
            rate_rows(ledger, V, by=by)
    fill(ledger)
    assert rate_rows(ledger, V, by=["task"]).by == ("task",)
    unlabelled = rate_rows(ledger, V).rows
    assert sum(r.y is not None for r in unlabelled) == 3


def test_a_blind_ledger_leaves_tier_b_runs_out_only_where_their_task_is_needed(ledger):
    record(ledger, "a1", UP, sc=0.8)
    h = hashlib.sha256(b"tb").hexdigest()
    att = attribution("t.secret", "s").model_copy(update={"task": Task(id="t.secret",
                                                                       tier="B")})
    run = Run(run_id="tb", bundle_uri="/b/tb", bundle_hash=h, attribution=att, duration_s=6.0,
              cycle_sec=6.0)
    ledger.record(run, Judgment(
        run_id="tb", bundle_uri="/b/tb", bundle_hash=h, task_id="t.secret", judge_version=V,
        attempt=True, success=True, failure_class=None, counts_against_policy=False,
        attempt_confidence=0.9, success_confidence=0.7, frames=6,
        answers=tuple(ModelAnswer(model=m, p_attempt=0.9, p_success=0.9, p_attempt_raw=0.9,
                                  p_success_raw=0.9) for m in "abc"),
        timings=StageTimings(intake_s=0, frames_s=0, models_s=0, vote_s=0),
        cost=Cost(gpu_s=0, cpu_s=0, usd=0)))
    blind = Ledger(ledger.engine, blind=True)
    got = rate_rows(blind, V)
    assert [r.run_id for r in got.rows] == ["a1"]
    assert got.left_out[-1] == LeftOut("tier_b", 1, "1 tier-B run(s) whose task this ledger "
                                       "may not read (blind)")
    assert [(r.run_id, r.p) for r in rate_rows(blind, V, by=("policy",)).rows] == [
        ("a1", 0.8), ("tb", 0.7)]
