"""The review queue on a real ledger (SQLite, and PostgreSQL in its own schema):
``next_runs`` never offers a labelled run or one of train's test part, labels made from
it keep their strategy, ``rcjudge review next|stats`` print them, and ``rcjudge train``
reads those labels as the ledger's operator labels.
"""

from __future__ import annotations

import hashlib
import json

import pytest
import test_ledgers
from test_ledgers import T0

from judge.api.protocol import Attribution
from judge.ensemble.judgment import Cost, Judgment, ModelAnswer, StageTimings
from judge.learn.select import STRATEGIES, SelectError, next_runs, review
from judge.learn.train import TrainConfig, labelled_runs, split_runs
from judge.ledgers import Label, Ledger, Run
from judge.ledgers.review import Review, add_reviewed_labels, review_of, review_stats
from rcjudge.cli import main

db = test_ledgers.db  # SQLite, and PostgreSQL in a schema of its own
ledger = test_ledgers.ledger
V = "tiny"


def attribution(task: str, seed: str, policy: str = "policy-a") -> Attribution:
    return Attribution.model_validate({
        "policy": {"vendor": "lab", "name": policy, "version": "1", "checkpoint": "c"},
        "body": {"arm": "xArm7", "hand": "WujiHand2", "dof": 20, "mount_h_mm": 740,
                 "calibrated_at": "2026-09-16"},
        "task": {"id": task, "tier": "A"}, "seed": seed})


def record(led: Ledger, rid: str, ps: tuple[float, float, float], task: str = "t.a",
           policy: str = "policy-a", sc: float = 0.9, version: str = V) -> None:
    """A run of its own seed group, judged by ``version`` with these three P(success)."""
    h = hashlib.sha256(rid.encode()).hexdigest()
    run = Run(run_id=rid, bundle_uri=f"/b/{rid}", bundle_hash=h,
              attribution=attribution(task, f"seed-{rid}", policy), duration_s=6.0,
              cycle_sec=6.0, recorded_at=T0)
    answers = tuple(ModelAnswer(model=m, p_attempt=0.9, p_success=p, p_attempt_raw=0.9,
                                p_success_raw=p) for m, p in zip("abc", ps, strict=True))
    success = sum(p > 0.5 for p in ps) >= 2
    led.record(run, Judgment(
        run_id=rid, bundle_uri=run.bundle_uri, bundle_hash=h, task_id=task,
        judge_version=version, attempt=True, success=success,
        failure_class=None if success else "grasp.slip", counts_against_policy=not success,
        attempt_confidence=0.9, success_confidence=sc, answers=answers, frames=6,
        timings=StageTimings(intake_s=0, frames_s=0, models_s=0, vote_s=0),
        cost=Cost(gpu_s=0, cpu_s=0, usd=0)))


def lab(rid: str, success: bool, minute: int = 0, by: str = "op-kim") -> Label:
    return Label(run_id=rid, attempt=True, success=success,
                 failure_class=None if success else "grasp.slip", labeled_by=by,
                 labeled_at=T0.replace(minute=minute))


def outside_test(led: Ledger, rids: list[str]) -> list[str]:
    """The runs ``rcjudge train``'s default split keeps out of its test part."""
    runs = [(led.get_run(r), lab(r, True)) for r in rids]
    test = {run.run_id for run, _, _ in split_runs(runs, TrainConfig())["test"]}
    return [r for r in rids if r not in test]


def test_an_empty_ledger_and_an_unknown_version_are_one_line_errors(ledger):
    with pytest.raises(SelectError, match=r"--judge 'tiny': no judgment of this version in "
                       r"the ledger \(versions with judgments: none\)"):
        next_runs(ledger, V)
    record(ledger, "r1", (0.5, 0.5, 0.5))
    with pytest.raises(SelectError, match=r"--judge 'tiny-v9': .*\(versions with judgments: "
                       r"tiny\)"):
        next_runs(ledger, "tiny-v9")
    with pytest.raises(SelectError, match=r"--n 0: expected at least 1"):
        next_runs(ledger, V, n=0)
    with pytest.raises(SelectError, match=r"--test-fraction 1.0: expected a share in \[0, 1\)"):
        next_runs(ledger, V, test_fraction=1.0)


def test_never_a_labelled_run_nor_one_of_trains_test_part_and_ties_by_run_id(ledger):
    rids = [f"r{i:02d}" for i in range(12)]
    for rid in rids:
        record(ledger, rid, (0.9, 0.1, 0.5) if rid in ("r03", "r07") else (0.9, 0.9, 0.8))
    kept = outside_test(ledger, rids)
    assert 0 < len(kept) < len(rids)  # the default split holds some of these groups out
    picks = next_runs(ledger, V, n=50, test_fraction=0.2)
    assert sorted(p.run_id for p in picks) == kept
    # with no test part every run is a candidate: the two that split the models first
    picks = next_runs(ledger, V, n=3, test_fraction=0.0)
    assert [p.run_id for p in picks] == ["r03", "r07", "r00"]
    assert picks[0].score == picks[1].score  # the same answers: the run id decides
    assert picks[0].reason == ("models disagree on success: 0.90 / 0.10 / 0.50 "
                               "(mean KL to consensus 0.35)")
    ledger.add_labels([lab("r03", False)])
    assert [p.run_id for p in next_runs(ledger, V, n=2, test_fraction=0.0)] == ["r07", "r00"]
    ledger.add_labels([lab(r, True, 1) for r in rids])
    for strategy in STRATEGIES:  # everything labelled: nothing left to ask
        assert next_runs(ledger, V, strategy=strategy, test_fraction=0.0) == []


def test_labels_from_the_queue_keep_their_strategy_and_stats_count_them(ledger):
    for i, task in enumerate(("t.a", "t.a", "t.b", "t.b")):
        record(ledger, f"q{i}", (0.9, 0.1, 0.5) if i < 2 else (0.8, 0.9, 0.9), task=task)
    p0, p1 = next_runs(ledger, V, n=2, test_fraction=0.0)
    assert (p0.run_id, p1.run_id) == ("q0", "q1")
    new = add_reviewed_labels(ledger, [
        (lab("q0", True, 1, "op-kim"), review(p0, V, note="lid stuck")),
        (lab("q1", False, 2, "op-ana"), review(p1, V)),
        (lab("q2", True, 3, "op-kim"), None)])  # an imported one: no review row
    assert new == 3
    again = add_reviewed_labels(ledger, [(lab("q0", True, 1, "op-kim"), review(p0, V))])
    assert again == 0  # already stored: skipped with its review
    ids = {s.label.run_id: s.label_id for s in ledger.current_labels().values()}
    assert review_of(ids["q0"], ledger) == Review(
        judge_version=V, strategy="committee", rank=1, score=p0.score, reason=p0.reason,
        note="lid stuck")
    assert review_of(ids["q2"], ledger) is None
    ledger.add_labels([lab("q0", False, 9, "op-ana")])  # a relabel, outside the queue
    s = review_stats(ledger)
    # q0 judged failure (2 of 3 below 1/2) and labelled success: the judge was wrong on it;
    # q1 judged failure, labelled failure: right
    assert s == {
        "labels": 4, "runs": 3,
        "by_strategy": [{"strategy": "committee", "labels": 2, "runs": 2, "judge_wrong": 1},
                        {"strategy": "unqueued", "labels": 2, "runs": 2, "judge_wrong": 0}],
        "by_task": [{"task": "t.a", "labels": 3, "runs": 2},
                    {"task": "t.b", "labels": 1, "runs": 1}],
        "by_labeller": [{"labeled_by": "op-ana", "labels": 2, "runs": 2},
                        {"labeled_by": "op-kim", "labels": 2, "runs": 2}]}
    assert [p.run_id for p in next_runs(ledger, V, test_fraction=0.0)] == ["q3"]
    with pytest.raises(ValueError, match="strategy"):
        Review(judge_version=V, strategy="loudest", rank=1, score=0.0, reason="")


def test_train_reads_the_queues_labels_as_the_ledgers_operator_labels(ledger):
    for i in range(3):
        record(ledger, f"w{i}", (0.9, 0.1, 0.5))
    picks = next_runs(ledger, V, n=3, test_fraction=0.0)
    add_reviewed_labels(ledger, [(lab(p.run_id, p.rank == 2, p.rank), review(p, V))
                                 for p in picks])
    pairs = labelled_runs(ledger, V)  # what `rcjudge train --from tiny` learns from
    assert [(run.run_id, label.success, label.labeled_by) for run, label in pairs] == [
        ("w0", False, "op-kim"), ("w1", True, "op-kim"), ("w2", False, "op-kim")]


def test_review_next_and_stats_commands(db, capsys):
    url = db.cli_url
    with Ledger.open(db.url, schema=db.schema) as led:
        record(led, "c1", (0.9, 0.1, 0.5), sc=0.6)
        record(led, "c2", (0.9, 0.9, 0.9), sc=0.95, policy="policy-b")
    assert main(["review", "next", "--judge", V, "--n", "5", "--test-fraction", "0",
                 "--db", url, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["strategy"] == "committee"
    assert [(p["run_id"], p["rank"], p["strategy"]) for p in out["picks"]] == [
        ("c1", 1, "committee"), ("c2", 2, "committee")]
    assert main(["review", "next", "--judge", V, "--strategy", "uncertainty",
                 "--test-fraction", "0", "--n", "1", "--db", url]) == 0
    assert capsys.readouterr().out == (
        "1 run(s) of tiny to label next (uncertainty):\n"
        "   1  c1  0.4000  the judge is unsure of success: confidence 0.60\n")
    assert main(["review", "next", "--judge", "nope", "--db", url]) == 2
    assert "--judge 'nope': no judgment of this version" in capsys.readouterr().err
    assert main(["review", "stats", "--db", url]) == 0
    assert capsys.readouterr().out == ("0 label(s) of 0 run(s)\nper strategy:\nper task:\n"
                                       "per labeled_by:\n")


def test_a_run_a_datasets_split_holds_out_is_never_offered(ledger):
    from judge.outcomes.store import OutcomeStore

    for rid in ("h1", "h2", "h3"):
        record(ledger, rid, (0.9, 0.1, 0.5))
    store = OutcomeStore(ledger.engine)
    store.create_dataset("lab/runs")
    for rid, membership in (("h1", "held_out_eval"), ("h2", "train")):
        uid = store.add_sequence("lab/runs", hashlib.sha256(rid.encode()).hexdigest(),
                                 f"/b/{rid}")
        store.put_label("lab/runs", uid, {"outcome": "expert_success",
                                          "evaluation_membership": membership})
    assert [p.run_id for p in next_runs(ledger, V, test_fraction=0.0)] == ["h2", "h3"]
    store.put_label("lab/runs", uid, {"outcome": "expert_success",  # h2 moved to held out
                                      "evaluation_membership": "held_out_eval"})
    assert [p.run_id for p in next_runs(ledger, V, test_fraction=0.0)] == ["h3"]


def test_a_blind_ledger_never_offers_a_tier_b_run(ledger):
    record(ledger, "a1", (0.9, 0.1, 0.5))
    h = hashlib.sha256(b"b1").hexdigest()
    att = attribution("t.secret", "seed-b1").model_copy(
        update={"task": attribution("t.secret", "s").task.model_copy(update={"tier": "B"})})
    run = Run(run_id="b1", bundle_uri="/b/b1", bundle_hash=h, attribution=att,
              duration_s=6.0, cycle_sec=6.0, recorded_at=T0)
    answers = tuple(ModelAnswer(model=m, p_attempt=0.9, p_success=p, p_attempt_raw=0.9,
                                p_success_raw=p) for m, p in zip("abc", (0.9, 0.1, 0.5),
                                                                 strict=True))
    ledger.record(run, Judgment(
        run_id="b1", bundle_uri="/b/b1", bundle_hash=h, task_id="t.secret", judge_version=V,
        attempt=True, success=False, failure_class=None, counts_against_policy=True,
        attempt_confidence=0.9, success_confidence=0.9, answers=answers, frames=6,
        timings=StageTimings(intake_s=0, frames_s=0, models_s=0, vote_s=0),
        cost=Cost(gpu_s=0, cpu_s=0, usd=0)))
    assert [p.run_id for p in next_runs(ledger, V, test_fraction=0.0)] == ["a1", "b1"]
    blind = Ledger(ledger.engine, blind=True)
    assert [p.run_id for p in next_runs(blind, V, test_fraction=0.0)] == ["a1"]


def test_the_labs_own_test_runs_are_never_offered(db, tmp_path, capsys):
    """A lab holding its own test set passes `--test-fraction 0` (train's part is then empty)
    and names its test runs: none of them is offered, by any strategy."""
    url = db.cli_url
    with Ledger.open(db.url, schema=db.schema) as led:
        for rid in ("t1", "t2", "t3", "t4"):
            record(led, rid, (0.9, 0.1, 0.5))
    (tmp_path / "test-runs.txt").write_text("# the lab's test set\nt1\n\nt3\n")
    for strategy in ("committee", "random"):
        assert main(["review", "next", "--judge", V, "--test-fraction", "0", "--strategy",
                     strategy, "--test-runs", str(tmp_path / "test-runs.txt"), "--db", url,
                     "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert sorted(p["run_id"] for p in out["picks"]) == ["t2", "t4"]
    (tmp_path / "test.csv").write_text("run_id,attempt,success,failure_class,labeled_by,"
                                       "labeled_at\nt4,true,true,,lab,2026-09-16T12:00:00Z\n")
    assert main(["review", "next", "--judge", V, "--test-fraction", "0", "--test-runs",
                 str(tmp_path / "test.csv"), "--db", url, "--json"]) == 0
    assert [p["run_id"] for p in json.loads(capsys.readouterr().out)["picks"]] == [
        "t1", "t2", "t3"]
    (tmp_path / "bad.txt").write_text("t1\nt9\nt8\n")
    assert main(["review", "next", "--judge", V, "--test-runs", str(tmp_path / "bad.txt"),
                 "--db", url]) == 2
    assert capsys.readouterr().err == (
        f"rcjudge: error: --test-runs {tmp_path / 'bad.txt'}: line 2: run 't9' is not in the "
        "ledger (2 of 3 named run(s) are not)\n")
    (tmp_path / "bad.csv").write_text("run,x\nt1,1\n")
    assert main(["review", "next", "--judge", V, "--test-runs", str(tmp_path / "bad.csv"),
                 "--db", url]) == 2
    assert capsys.readouterr().err == (
        f"rcjudge: error: --test-runs {tmp_path / 'bad.csv'}: line 1: expected a run_id "
        "column\n")
