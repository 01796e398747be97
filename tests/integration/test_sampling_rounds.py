"""Sampling rounds on a real ledger (SQLite, and PostgreSQL in its own schema): a round's
frame and draws are recorded once, labels made from its picks keep their π, a draw the
ledger does not hold is refused, a lab's random-sample assertion is a round of its own,
and no held-out run is ever a candidate.
"""

from __future__ import annotations

import hashlib
import json

import pytest
import sqlalchemy as sa
import test_ledgers
from test_review_queue import V, lab, record

from judge.learn.draw import draw_number, sampling_round
from judge.learn.select import SelectError
from judge.ledgers import Ledger, LedgerError
from judge.ledgers import schema as S
from judge.ledgers.labels import import_labels
from judge.ledgers.review import Review, add_reviewed_labels, review_of
from judge.ledgers.rounds import FrameRow, frame_digest
from rcjudge.cli import main

db = test_ledgers.db
ledger = test_ledgers.ledger
#: P(success) of each run as stored: the vote and its confidence (p = conf for a yes,
#: 1 - conf for a no), so pi for n = 2, floor 0.1 is worked out in test_sampling_round.py
RUNS = {"s1": ((0.9, 0.9, 0.9), 0.5), "s2": ((0.9, 0.9, 0.9), 0.5),
        "s3": ((0.9, 0.9, 0.9), 0.9), "s4": ((0.1, 0.1, 0.1), 0.9),
        "s5": ((0.9, 0.9, 0.9), 1.0)}
P = {"s1": 0.5, "s2": 0.5, "s3": 0.9, "s4": 0.1, "s5": 1.0}
PI = {"s1": 0.6025, "s2": 0.6025, "s3": 0.3775, "s4": 0.3775, "s5": 0.04}


def five(led: Ledger) -> None:
    for rid, (ps, sc) in RUNS.items():
        record(led, rid, ps, sc=sc)


def frame_rows(led: Ledger) -> list[tuple]:
    f = S.sampling_frames
    with led.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(
            sa.select(f.c.round_id, f.c.run_id, f.c.pi, f.c.p, f.c.drawn)
            .order_by(f.c.round_id, f.c.run_id))]


def test_a_round_records_every_candidate_with_its_pi_once(ledger):
    five(ledger)
    round_, picks = sampling_round(ledger, V, n=2, seed=3, floor=0.1, test_fraction=0.0)
    digest = frame_digest(list(RUNS))
    drawn = {r for r in RUNS if draw_number(3, digest, r) < PI[r]}
    assert (round_.round_id, round_.judge_version, round_.strategy, round_.budget,
            round_.floor, round_.seed, round_.candidates, round_.drawn, round_.new) == (
        1, V, "sample", 2.0, 0.1, 3, 5, len(drawn), True)
    assert round_.options == {"split_seed": 0, "test_fraction": 0.0, "test_runs": 0}
    rows = frame_rows(ledger)
    assert [(r[1], r[4]) for r in rows] == [(r, r in drawn) for r in sorted(RUNS)]
    for (_, rid, pi, p, _), want in zip(rows, sorted(RUNS), strict=True):
        assert (rid, pi, p) == (want, pytest.approx(PI[want], abs=1e-12), P[want])
    assert [(p.run_id, p.round_id, p.strategy) for p in picks] == [
        (r, 1, "sample") for r in sorted(drawn, key=lambda r: (-PI[r], r))]
    assert all(p.pi == pytest.approx(PI[p.run_id], abs=1e-12) for p in picks)
    again, _ = sampling_round(ledger, V, n=2, seed=3, floor=0.1, test_fraction=0.0)
    assert (again.round_id, again.new) == (1, False) and len(frame_rows(ledger)) == 5
    uniform, _ = sampling_round(ledger, V, n=2, seed=3, strategy="sample-uniform",
                                     test_fraction=0.0)
    # a new round (PostgreSQL's sequence moved on the conflict of the repeat: not 2 there)
    assert (uniform.round_id > 1, uniform.floor, uniform.new) == (True, 1.0, True)
    assert [r[2] for r in frame_rows(ledger)[5:]] == pytest.approx([0.4] * 5)
    with pytest.raises(SelectError, match=r"--strategy 'committee': expected one of sample, "
                                          r"sample-uniform"):
        sampling_round(ledger, V, strategy="committee")


def test_labels_from_a_rounds_picks_keep_pi_and_a_claimed_draw_is_checked(ledger):
    five(ledger)
    round_, picks = sampling_round(ledger, V, n=4, seed=0, test_fraction=0.0)
    # n = 4: s1, s2 at pi 1 (always drawn); worked out in test_sampling_round.py
    assert {"s1", "s2"} <= {p.run_id for p in picks}
    first = next(p for p in picks if p.run_id == "s1")
    review = Review(judge_version=V, strategy="sample", rank=first.rank, score=first.score,
                    reason=first.reason, round_id=round_.round_id, pi=first.pi)
    assert review.pi == 1.0
    bad = review.model_copy(update={"pi": 0.5})
    with pytest.raises(LedgerError, match=r"label of run 's1': sampling round 1 drew it with "
                                          r"pi 1.0, not 0.5"):
        add_reviewed_labels(ledger, [(lab("s1", True), bad)])
    not_drawn = next(r for r in RUNS if r not in {p.run_id for p in picks})
    with pytest.raises(LedgerError, match=rf"label of run '{not_drawn}': sampling round 1 did "
                                          r"not draw this run"):
        add_reviewed_labels(ledger, [(lab(not_drawn, True), review)])
    with pytest.raises(LedgerError, match=r"sampling round 1 was drawn by 'tiny', not 'v2'"):
        add_reviewed_labels(ledger, [(lab("s1", True), review.model_copy(
            update={"judge_version": "v2"}))])
    assert ledger.current_labels() == {}  # nothing written by the refusals
    assert add_reviewed_labels(ledger, [(lab("s1", True), review)]) == 1
    (stored,) = ledger.current_labels().values()
    assert review_of(stored.label_id, ledger) == review
    with pytest.raises(ValueError, match="strategy 'sample' draws a sampling round: round_id "
                                         "and pi are required"):
        Review(judge_version=V, strategy="sample", rank=1, score=1.0, reason="")
    with pytest.raises(ValueError, match="strategy 'committee' draws no round"):
        Review(judge_version=V, strategy="committee", rank=1, score=1.0, reason="",
               round_id=1, pi=0.5)
    # a labelled run leaves the frame: the next round is another, with another salt
    nxt, _ = sampling_round(ledger, V, n=2, seed=0, test_fraction=0.0)
    assert (nxt.round_id, nxt.candidates) == (2, 4)


def test_held_out_and_test_runs_are_never_candidates_of_a_round(ledger):
    from judge.outcomes.store import OutcomeStore

    five(ledger)
    store = OutcomeStore(ledger.engine)
    store.create_dataset("lab/runs")
    uid = store.add_sequence("lab/runs", hashlib.sha256(b"s3").hexdigest(), "/b/s3")
    store.put_label("lab/runs", uid, {"outcome": "expert_success",
                                      "evaluation_membership": "held_out_eval"})
    round_, _ = sampling_round(ledger, V, n=2, seed=0, test_fraction=0.0,
                               test_runs={"s4"})
    assert sorted(r[1] for r in frame_rows(ledger)) == ["s1", "s2", "s5"]
    assert round_.options["test_runs"] == 1


def test_a_lab_asserted_random_sample_is_a_round_of_its_own(ledger, tmp_path):
    five(ledger)
    ledger.add_labels([lab("s5", True, 1, "op-ana")])  # labelled before: outside the frame
    f = tmp_path / "sample.csv"
    f.write_text("run_id,attempt,success,failure_class,labeled_by,labeled_at\n"
                 "s1,true,true,,op-kim,2026-09-16T12:05:00Z\n"
                 "s4,true,false,grasp.slip,op-kim,2026-09-16T12:06:00Z\n")
    s = import_labels(ledger, f, random_sample=True)
    # frame: s1..s4 (s5 had a label from elsewhere); drawn s1, s4: pi = 2 / 4
    assert (s.imported, s.round_id, s.frame, s.pi) == (2, 1, 4, 0.5)
    assert frame_rows(ledger) == [(1, "s1", 0.5, None, True), (1, "s2", 0.5, None, False),
                                  (1, "s3", 0.5, None, False), (1, "s4", 0.5, None, True)]
    again = import_labels(ledger, f, random_sample=True)  # the same file: the same round
    assert (again.imported, again.round_id) == (0, 1) and len(frame_rows(ledger)) == 4
    with ledger.engine.connect() as conn:
        row = conn.execute(sa.select(S.sampling_rounds)).one()
    assert (row.judge_version, row.strategy, row.budget, row.candidates, row.drawn,
            row.options) == (None, "asserted", 2.0, 4, 2, {"source": str(f)})
    g = tmp_path / "again.csv"
    g.write_text("run_id,attempt,success,failure_class,labeled_by,labeled_at\n"
                 "s2,true,true,,op-kim,2026-09-16T12:07:00Z\n"
                 "s5,true,true,,op-kim,2026-09-16T12:08:00Z\n")
    with pytest.raises(LedgerError, match=r"--random-sample .*again.csv: run 's5' already had "
                                          r"a label \(by op-ana, 2026-09-16T12:01:00\+00:00\) "
                                          r"before this file; a random sample is drawn from "
                                          r"unlabelled runs \(1 such run\(s\)\)"):
        import_labels(ledger, g, random_sample=True)
    assert "s2" not in ledger.current_labels()  # nothing of that file written


def test_review_next_sample_and_labels_import_picks_through_the_cli(db, tmp_path, capsys):
    url = db.cli_url
    with Ledger.open(db.url, schema=db.schema) as led:
        five(led)
    base = ["review", "next", "--judge", V, "--test-fraction", "0", "--db", url]
    assert main([*base, "--strategy", "sample", "--n", "4", "--seed", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["round"]["round_id"] == 1 and out["round"]["new"] is True
    picks = out["picks"]
    assert {p["run_id"] for p in picks} >= {"s1", "s2"}
    assert {p["run_id"]: p["pi"] for p in picks}["s1"] == 1.0
    assert all(set(p) == {"run_id", "rank", "score", "strategy", "reason", "round_id", "pi"}
               for p in picks)
    (tmp_path / "picks.json").write_text(json.dumps(out))
    assert main([*base, "--strategy", "sample", "--n", "4", "--seed", "0"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0] == (f"sampling round 1 of tiny (sample, seed 0, already recorded): "
                       f"{len(picks)} run(s) drawn of 5 candidate(s), 4 expected; their pi "
                       f"{min(p['pi'] for p in picks):.3f}-1.000; label every one of them (a "
                       "drawn run left unlabelled biases the rate)")
    assert text[1] == "   1  s1  1.0000  drawn with pi 1.000 (P(success) 0.50; round 1)"
    rows = "".join(f"{p['run_id']},true,true,,op-kim,2026-09-16T12:{i:02d}:00Z\n"
                   for i, p in enumerate(picks))
    (tmp_path / "l.csv").write_text("run_id,attempt,success,failure_class,labeled_by,"
                                    f"labeled_at\n{rows}")
    assert main(["labels", "import", str(tmp_path / "l.csv"), "--picks",
                 str(tmp_path / "picks.json"), "--db", url]) == 0
    assert capsys.readouterr().out.endswith(f"; {len(picks)} picked by the queue of "
                                            f"{tmp_path / 'picks.json'}\n")
    with Ledger.open(db.url, schema=db.schema) as led, led.engine.connect() as conn:
        got = conn.execute(sa.select(S.review_labels.c.strategy, S.review_labels.c.round_id,
                                     S.review_labels.c.pi)).all()
    assert sorted(got) == sorted(("sample", 1, p["pi"]) for p in picks)
    assert main([*base, "--strategy", "committee", "--floor", "0.5"]) == 2
    assert capsys.readouterr().err == ("rcjudge: error: --floor: only with --strategy sample, "
                                       "not committee\n")
    assert main(["labels", "import", str(tmp_path / "l.csv"), "--picks",
                 str(tmp_path / "picks.json"), "--random-sample", "--db", url]) == 2
    assert capsys.readouterr().err == ("rcjudge: error: --random-sample: not with --picks (a "
                                       "queue file's picks carry their own draw)\n")


def test_frame_rows_are_what_a_round_is_keyed_by():
    from judge.ledgers.rounds import round_key

    a = [FrameRow("r1", 0.5, 0.5, True), FrameRow("r2", 0.5, 0.5, False)]
    assert round_key(V, "sample", 1.0, 0.1, 0, a) == round_key(V, "sample", 1.0, 0.1, 0, a[::-1])
    assert round_key(V, "sample", 1.0, 0.1, 0, a) != round_key(V, "sample", 1.0, 0.1, 1, a)


def test_labels_import_random_sample_through_the_cli(db, tmp_path, capsys):
    with Ledger.open(db.url, schema=db.schema) as led:
        five(led)
    f = tmp_path / "drawn.csv"
    f.write_text("run_id,attempt,success,failure_class,labeled_by,labeled_at\n"
                 "s2,true,true,,op-kim,2026-09-16T12:05:00Z\n")
    assert main(["labels", "import", str(f), "--random-sample", "--db", db.cli_url]) == 0
    assert capsys.readouterr().out == (
        f"{f}: 1 label(s) for 1 run(s): 1 imported, 0 already present; recorded as a random "
        "sample of 5 run(s) (sampling round 1, pi 0.2000 each)\n")
    assert main(["labels", "import", str(f), "--random-sample", "--db", db.cli_url,
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["imported"], out["round_id"], out["frame"], out["pi"]) == (0, 1, 5, 0.2)
