"""`rcjudge eval` on a hand-made ledger whose every number is worked out by hand below.

Ten labelled runs r0…r9 (task.a: r0–r4, task.b: r5–r9). Version ``tiny`` (A, no training)
judged r0–r8; ``tiny-v2`` (B, trained: its used_runs lists r8's bundle hash) judged r0–r9.

     truth                               | A (tiny)                   | B (tiny-v2)
run  att suc class        near_threshold | att     suc     class      | att     suc     class
r0   T   T   -            false          | T .92   T .87   -          | T .92   T .92   -
r1   T   F   grasp.slip   true           | T .97   F .82   grasp.slip | T .97   F .87   grasp.slip
r2   T   F   grasp.miss   true           | T .72   T .62   -          | T .82   F .72   grasp.miss
r3   F   F   -            false          | F .67   F .77   -          | F .77   F .82   -
r4   T   T   -            false          | T .92   F .57   grasp.slip | T .92   T .62   -
r5   T   F   grasp.slip   false          | T .97   F .92   grasp.miss | T .97   F .92   grasp.slip
r6   F   F   -            true           | T .72   F .67   mot.stall  | F .67   F .87   -
r7   T   T   -            false          | T .82   T .97   -          | T .87   F .57   pl.misplaced
r8   T   F   mot.stall    (empty)        | T .87   F .87   mot.stall  | T .97   F .97   mot.stall
r9   T   T   -            false          | (not judged)               | T .92   T .92   -
(answer and its confidence; mot. = motion, pl. = placement). The label file adds r10, a run
the ledger does not know.
"""

from __future__ import annotations

import json
import re
import types
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import yaml

from judge.api.protocol import Attribution
from judge.config import configs_dir
from judge.ensemble.judgment import Cost, Judgment, StageTimings
from judge.learn.evaluate import evaluate
from judge.learn.metrics import bootstrap_interval, ece
from judge.learn.truth import EvalError, read_truth_file
from judge.ledgers.records import Label, Run
from judge.ledgers.store import Ledger
from rcjudge.cli import main

T, F = True, False
TRUTH = {  # run: (task, attempt, success, class, near_threshold)
    "r0": ("task.a", T, T, None, F), "r1": ("task.a", T, F, "grasp.slip", T),
    "r2": ("task.a", T, F, "grasp.miss", T), "r3": ("task.a", F, F, None, F),
    "r4": ("task.a", T, T, None, F), "r5": ("task.b", T, F, "grasp.slip", F),
    "r6": ("task.b", F, F, None, T), "r7": ("task.b", T, T, None, F),
    "r8": ("task.b", T, F, "motion.stall", None), "r9": ("task.b", T, T, None, F)}
A = {  # run: (attempt, attempt_confidence, success, success_confidence, class)
    "r0": (T, .92, T, .87, None), "r1": (T, .97, F, .82, "grasp.slip"),
    "r2": (T, .72, T, .62, None), "r3": (F, .67, F, .77, None),
    "r4": (T, .92, F, .57, "grasp.slip"), "r5": (T, .97, F, .92, "grasp.miss"),
    "r6": (T, .72, F, .67, "motion.stall"), "r7": (T, .82, T, .97, None),
    "r8": (T, .87, F, .87, "motion.stall")}
B = {"r0": (T, .92, T, .92, None), "r1": (T, .97, F, .87, "grasp.slip"),
     "r2": (T, .82, F, .72, "grasp.miss"), "r3": (F, .77, F, .82, None),
     "r4": (T, .92, T, .62, None), "r5": (T, .97, F, .92, "grasp.slip"),
     "r6": (F, .67, F, .87, None), "r7": (T, .87, F, .57, "placement.misplaced"),
     "r8": (T, .97, F, .97, "motion.stall"), "r9": (T, .92, T, .92, None)}


def bundle_hash(rid: str) -> str:
    return f"{int(rid[1:]) + 1:064x}"


def attribution(task: str) -> Attribution:
    return Attribution.model_validate({
        "policy": {"vendor": "v", "name": "p", "version": "1", "checkpoint": "c"},
        "body": {"arm": "a", "hand": "h", "dof": 7, "mount_h_mm": 900,
                 "calibrated_at": "2026-01-01"},
        "task": {"id": task, "tier": "A"}, "env": {"x": 1}, "seed": 1})


def judgment(rid: str, version: str, said: tuple) -> Judgment:
    attempt, ac, success, sc, cls = said
    return Judgment(run_id=rid, bundle_uri=f"/b/{rid}", bundle_hash=bundle_hash(rid),
                    task_id=TRUTH[rid][0], judge_version=version, attempt=attempt,
                    success=success, failure_class=cls, counts_against_policy=not success,
                    attempt_confidence=ac, success_confidence=sc, answers=(), frames=6,
                    timings=StageTimings(intake_s=0, frames_s=0, models_s=0, vote_s=0),
                    cost=Cost(gpu_s=0, cpu_s=0, usd=0))


def write_v2(folder: Path, used: list[str]) -> Path:
    """configs/judges/tiny.yaml renamed tiny-v2, with a training block naming ``used``."""
    doc = yaml.safe_load((configs_dir() / "judges" / "tiny.yaml").read_text())
    doc["name"] = "tiny-v2"
    doc["training"] = {"parent": "tiny", "data_sha256": "ab" * 32, "runs": max(1, len(used)),
                       "seed": 0, "split": {"train": 1, "validation": 0, "calibration": 0},
                       "used_runs": "tiny-v2.used_runs.json"}
    (folder / "tiny-v2.used_runs.json").write_text(json.dumps(used))
    path = folder / "tiny-v2.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def write_labels(path: Path, rows: dict = TRUTH, extra: str = "") -> Path:
    lines = ["run_id,attempt,success,failure_class,labeled_by,labeled_at,near_threshold"]
    for rid, (_, att, suc, cls, near) in rows.items():
        lines.append(f"{rid},{str(att).lower()},{str(suc).lower()},{cls or ''},op,"
                     f"2026-11-01T00:00:00Z,{'' if near is None else str(near).lower()}")
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> types.SimpleNamespace:
    """The ledger (labels in it too), the label file and tiny-v2's version file, made once."""
    root = tmp_path_factory.mktemp("eval")
    url = f"sqlite:///{root / 'ledger.db'}"
    with Ledger.open(url) as ledger:
        for rid, (task, att, suc, cls, _) in TRUTH.items():
            run = Run(run_id=rid, bundle_uri=f"/b/{rid}", bundle_hash=bundle_hash(rid),
                      attribution=attribution(task), duration_s=6.0, cycle_sec=5.0)
            ledger.record(run, judgment(rid, "tiny-v2", B[rid]))
            if rid in A:
                ledger.record_judgment(judgment(rid, "tiny", A[rid]))
            ledger.add_labels([Label(run_id=rid, attempt=att, success=suc, failure_class=cls,
                                     labeled_by="op",
                                     labeled_at=datetime(2026, 11, 1, tzinfo=UTC))])
    v2 = write_v2(root, [bundle_hash("r8"), "f" * 64])  # the second: a run not in this ledger
    labels = write_labels(root / "labels.csv", extra="r10,true,true,,op,2026-11-01T00:00:00Z,\n")
    return types.SimpleNamespace(root=root, url=url, v2=str(v2), labels=str(labels))


def run_eval(world, specs, *, truth_file: bool = True, resamples: int = 200, seed: int = 0):
    truth = read_truth_file(world.labels) if truth_file else None
    with Ledger.open(world.url) as ledger:
        return evaluate(ledger, specs, truth, world.labels if truth_file else None,
                        resamples=resamples, seed=seed)


def test_attempt_and_success_scores_by_hand(world):
    r = run_eval(world, ["tiny"])
    a = r["versions"]["tiny"]
    # attempt: right on every run but r6 (said yes, truth no): 8/9
    assert a["attempt"]["n"] == 9 and a["attempt"]["accuracy"] == 0.8889
    assert a["attempt"]["counts"] == {"tp": 7, "fp": 1, "fn": 0, "tn": 1}
    assert a["attempt"]["precision"] == 0.875 and a["attempt"]["recall"] == 1.0
    # P(yes): positives .92 .97 .72 .92 .97 .82 .87; negatives .33 (r3) and .72 (r6):
    # 7 wins over .33, 6 wins and one tie (r2 = r6 = .72) over .72: 13.5 / 14
    assert a["attempt"]["roc_auc"] == 0.9643
    # bins: .67 (1 right) | .72 (1 of 2 right) | .82 | .87 | .92 ×2 | .97 ×2, all right:
    # (.33 + 2·.22 + .18 + .13 + 2·.08 + 2·.03) / 9 = 1.30 / 9
    assert a["attempt"]["ece"] == pytest.approx(1.30 / 9, abs=1e-4)
    assert [b["n"] for b in a["attempt"]["bins"]] == [0, 0, 0, 1, 2, 0, 1, 1, 2, 2]
    assert a["attempt"]["bins"][4]["accuracy"] == 0.5
    # Brier of P(yes): (.08² + .03² + .28² + .33² + .08² + .03² + .72² + .18² + .13²) / 9
    # = .7696 / 9; skill against the base rate 7/9: 1 − .085511 / (7/9 · 2/9)
    assert a["attempt"]["brier"] == 0.0855 and a["attempt"]["brier_skill"] == 0.5053
    assert a["attempt"]["one_answer"] == {"answer": "yes", "share": 0.8889, "flag": False}
    # success: wrong on r2 (said yes) and r4 (said no): 7/9; tp r0 r7, fp r2, fn r4
    s = a["success"]
    assert s["accuracy"] == 0.7778 and s["counts"] == {"tp": 2, "fp": 1, "fn": 1, "tn": 5}
    assert s["precision"] == 0.6667 and s["recall"] == 0.6667
    # positives .87 .43 .97 against six negatives: only r4's .43 loses, to r2's .62: 17/18
    assert s["roc_auc"] == 0.9444
    # (.57 + .62 + .33 + .23 + .18 + 2·.13 + .08 + .03) / 9 = 2.30 / 9
    assert s["ece"] == pytest.approx(2.30 / 9, abs=1e-4)
    assert s["mean_confidence"] == pytest.approx(np.mean([v[3] for v in A.values()]), abs=1e-4)


def test_failure_class_accuracy_and_confusion_by_hand(world):
    fc = run_eval(world, ["tiny"])["versions"]["tiny"]["failure_class"]
    # true classes: r1 slip (judged slip), r2 miss (judged success: none), r5 slip (judged
    # miss), r8 stall (judged stall): 2 of 4
    assert fc["n"] == 4 and fc["accuracy"] == 0.5
    assert fc["confusion"] == {"grasp.miss": {"none": 1},
                               "grasp.slip": {"grasp.miss": 1, "grasp.slip": 1},
                               "motion.stall": {"motion.stall": 1}}
    assert fc["per_class"] == {"grasp.miss": {"n": 1, "accuracy": 0.0},
                               "grasp.slip": {"n": 2, "accuracy": 0.5},
                               "motion.stall": {"n": 1, "accuracy": 1.0}}


def test_slices_per_task_and_near_threshold(world):
    r = run_eval(world, ["tiny"])
    v = r["versions"]["tiny"]
    assert v["per_task"] == {
        "task.a": {"n": 5, "attempt_accuracy": 1.0, "success_accuracy": 0.6},
        "task.b": {"n": 4, "attempt_accuracy": 0.75, "success_accuracy": 1.0}}
    near = v["near_threshold"]
    assert (near["near"]["n"], near["other"]["n"], near["not_given"]) == (3, 5, 1)
    # near: r1 r2 r6; attempt wrong on r6, success wrong on r2
    assert near["near"]["attempt"]["accuracy"] == near["near"]["success"]["accuracy"] == 0.6667
    # other: r0 r3 r4 r5 r7; success wrong on r4
    assert near["other"]["attempt"]["accuracy"] == 1.0
    assert near["other"]["success"]["accuracy"] == 0.8
    assert r["truth"]["near_threshold_given"] == 9  # r8 and r10 leave it empty
    # from the ledger's labels there is no near_threshold: no slice
    assert run_eval(world, ["tiny"], truth_file=False)["versions"]["tiny"]["near_threshold"] is None


def test_slice_per_true_outcome(world):
    # tiny: successes r0 r4 r7 (success wrong on r4); r2's miss called a success; slips r1
    # r5 and r8's stall right; r3 and r6, failures without a class (attempt wrong on r6)
    v = run_eval(world, ["tiny"])["versions"]["tiny"]
    assert v["per_outcome"] == {
        "success": {"n": 3, "attempt_accuracy": 1.0, "success_accuracy": 0.6667},
        "grasp.miss": {"n": 1, "attempt_accuracy": 1.0, "success_accuracy": 0.0},
        "grasp.slip": {"n": 2, "attempt_accuracy": 1.0, "success_accuracy": 1.0},
        "motion.stall": {"n": 1, "attempt_accuracy": 1.0, "success_accuracy": 1.0},
        "failure": {"n": 2, "attempt_accuracy": 0.5, "success_accuracy": 1.0}}
    assert list(v["per_outcome"]) == ["success", "grasp.miss", "grasp.slip", "motion.stall",
                                      "failure"]
    # compared, both versions on the same 8 runs (r8, tiny-v2's training run, left out):
    # tiny-v2 calls r7 a failure and gets r4 and r2 right
    r = run_eval(world, ["tiny", world.v2])
    a, b = (r["versions"][n]["per_outcome"] for n in ("tiny", "tiny-v2"))
    assert list(a) == list(b) == ["success", "grasp.miss", "grasp.slip", "failure"]
    assert [b[o]["success_accuracy"] for o in b] == [0.6667, 1.0, 1.0, 1.0]
    assert [b[o]["attempt_accuracy"] for o in b] == [1.0, 1.0, 1.0, 1.0]


def test_labelled_runs_not_judged_are_counted(world):
    r = run_eval(world, ["tiny"])
    assert r["truth"] == {"source": "file", "file": world.labels, "labelled_runs": 11,
                          "near_threshold_given": 9}
    runs = r["runs"]
    # r9 (judged by tiny-v2 only) and r10 (in the file, not in the ledger)
    assert runs["not_judged"] == {"count": 2, "by_version": {"tiny": 2}, "run_ids": ["r10", "r9"]}
    assert runs["trained_on"]["count"] == 0 and runs["scored"] == 9
    from_ledger = run_eval(world, ["tiny"], truth_file=False)
    assert from_ledger["truth"]["source"] == "ledger"
    assert from_ledger["runs"]["not_judged"]["run_ids"] == ["r9"]
    assert from_ledger["versions"]["tiny"]["attempt"] == r["versions"]["tiny"]["attempt"]


def test_runs_a_version_trained_on_are_not_scored(world):
    r = run_eval(world, [world.v2])
    assert r["judge"] == "tiny-v2"
    assert r["runs"]["trained_on"] == {"count": 1, "by_version": {"tiny-v2": 1},
                                       "run_ids": ["r8"]}
    assert r["runs"]["scored"] == 9 and r["runs"]["not_judged"]["run_ids"] == ["r10"]
    v = r["versions"]["tiny-v2"]
    assert v["training"]["used_runs"] == 2 and v["training"]["parent"] == "tiny"
    assert v["training"]["used_runs_file"].endswith("tiny-v2.used_runs.json")
    # r8 (right and confident) left out: r0–r7 and r9; class runs r1 r2 r5 only
    assert v["attempt"]["n"] == 9 and v["attempt"]["accuracy"] == 1.0
    assert v["success"]["accuracy"] == 0.8889  # wrong on r7 alone
    assert v["failure_class"]["n"] == 3 and "motion.stall" not in v["failure_class"]["confusion"]


def test_compare_scores_both_on_the_same_runs_with_flips(world):
    r = run_eval(world, ["tiny", world.v2])
    assert (r["judge"], r["compare"]) == ("tiny", "tiny-v2")
    runs = r["runs"]
    assert runs["not_judged"] == {"count": 2, "by_version": {"tiny": 2, "tiny-v2": 1},
                                  "run_ids": ["r10", "r9"]}
    assert runs["trained_on"] == {"count": 1, "by_version": {"tiny": 0, "tiny-v2": 1},
                                  "run_ids": ["r8"]}
    assert runs["scored"] == 8 and "neither trained on" in runs["scored_on"]
    a, b = r["versions"]["tiny"], r["versions"]["tiny-v2"]
    assert a["success"]["n"] == b["success"]["n"] == 8
    assert (a["attempt"]["accuracy"], b["attempt"]["accuracy"]) == (0.875, 1.0)
    assert (a["success"]["accuracy"], b["success"]["accuracy"]) == (0.75, 0.875)
    assert (a["failure_class"]["accuracy"], b["failure_class"]["accuracy"]) == (0.3333, 1.0)
    # B's success bins: .57 wrong | .62 | .72 | .82 | .87 ×2 | .92 ×2, right:
    # (.57 + .38 + .28 + .18 + 2·.13 + 2·.08) / 8 = 1.83 / 8; A's: (2.30 − .13) / 8
    assert b["success"]["ece"] == pytest.approx(1.83 / 8, abs=1e-4)
    assert a["success"]["ece"] == pytest.approx(2.17 / 8, abs=1e-4)
    d = r["differences"]
    assert d["attempt"]["accuracy"] == 0.125 and d["success"]["accuracy"] == 0.125
    assert d["success"]["ece"] == pytest.approx((1.83 - 2.17) / 8, abs=1e-4)
    assert d["failure_class"]["accuracy"] == 0.6667
    assert (d["success"]["flips_to_right"], d["success"]["flips_to_wrong"]) == (2, 1)
    assert (d["attempt"]["flips_to_right"], d["attempt"]["flips_to_wrong"]) == (1, 0)
    got = {f["run_id"]: (f["changed"], f["right"]) for f in r["flips"]}
    assert got == {"r2": (["success"], {"success": "tiny-v2"}),
                   "r4": (["success"], {"success": "tiny-v2"}),
                   "r6": (["attempt"], {"attempt": "tiny-v2"}),
                   "r7": (["success"], {"success": "tiny"})}
    r7 = next(f for f in r["flips"] if f["run_id"] == "r7")
    assert r7["truth"] == {"attempt": True, "success": True, "failure_class": None}
    assert r7["answers"]["tiny-v2"] == {"attempt": True, "success": False,
                                        "failure_class": "placement.misplaced"}


def test_bootstrap_is_deterministic_and_holds_the_estimate(world):
    one = run_eval(world, ["tiny", world.v2], resamples=300, seed=7)
    two = run_eval(world, ["tiny", world.v2], resamples=300, seed=7)
    assert one == two
    for v in one["versions"].values():
        for q in ("attempt", "success"):
            lo, hi = v[q]["accuracy_ci"]
            assert lo <= v[q]["accuracy"] <= hi
            assert 0 <= v[q]["ece_ci"][0] <= v[q]["ece_ci"][1] <= 0.5
    lo, hi = one["differences"]["success"]["accuracy_ci"]
    assert lo <= one["differences"]["success"]["accuracy"] <= hi
    # the interval is the percentile interval of metrics.bootstrap_interval, seeded
    conf = np.array([v[3] for v in A.values()])
    right = np.array([A[k][2] == TRUTH[k][2] for k in A])
    expected = bootstrap_interval(lambda i: ece(conf[i], right[i]), 9, 300, 7)
    got = run_eval(world, ["tiny"], resamples=300, seed=7)["versions"]["tiny"]["success"]
    assert got["ece_ci"] == [round(expected[0], 4), round(expected[1], 4)]
    off = run_eval(world, ["tiny"], resamples=0)["versions"]["tiny"]["success"]
    assert off["accuracy_ci"] is None and off["ece_ci"] is None


def test_cli_json_text_and_out_folder(world, tmp_path, capsys):
    base = ["eval", "--judge", "tiny", "--compare", world.v2, "--db", world.url,
            "--labels", world.labels, "--bootstrap", "100"]
    assert main([*base, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"judge", "compare", "truth", "runs", "bootstrap", "versions",
                           "differences", "flips", "rates"}
    assert main(base) == 0
    text = capsys.readouterr().out
    assert "2 not judged (tiny: 2, tiny-v2: 1), 1 trained on and excluded" in text
    assert "0.8750" in text and "r7" in text
    assert re.search(r"^attempt  n ", text, re.M) and "Brier skill" in text
    assert "ONE ANSWER" not in text  # no version here answers alike to >= 95 % of runs
    # success accuracy per true outcome, tiny then tiny-v2: the miss r2 flipped to right
    assert re.search(r"^  grasp\.miss +1 +0\.0000 +1\.0000$", text, re.M)
    out = tmp_path / "report"
    assert main([*base, "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "reliability_attempt.png", "reliability_success.png", "report.html", "report.json"]
    assert json.loads((out / "report.json").read_text())["versions"] == report["versions"]
    for q in ("attempt", "success"):
        assert (out / f"reliability_{q}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (out / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == 2
    assert ('<table class="per-outcome">' in page and '<tr><td>grasp.miss</td><td class="num">1'
            '</td><td class="num">1.0000 / 0.0000</td><td class="num">1.0000 / 1.0000</td></tr>'
            in page)
    assert "http" not in page and "<script" not in page and "<link" not in page


def test_errors_are_one_line_and_come_before_any_work(world, tmp_path, capsys):
    def err(*args: str) -> str:
        assert main(["eval", *args]) == 2
        msg = capsys.readouterr().err
        assert msg.startswith("rcjudge: error: ") and msg.count("\n") == 1
        return msg

    assert "judge version 'nope' has no judgments in the ledger; known: tiny, tiny-v2" in err(
        "--judge", "nope", "--db", world.url)
    assert "--compare 'tiny' is the same version as --judge" in err(
        "--judge", "tiny", "--compare", "tiny", "--db", world.url)
    empty = write_labels(tmp_path / "none.csv", {})
    assert "no labelled run to score for tiny: 0 labelled in" in err(
        "--judge", "tiny", "--db", world.url, "--labels", str(empty))
    bad = tmp_path / "bad.csv"
    bad.write_text("run_id,attempt,success,failure_class,labeled_by,labeled_at,near_threshold\n"
                   "r0,maybe,true,,op,2026-11-01T00:00:00Z,perhaps\n")
    msg = err("--judge", "tiny", "--db", world.url, "--labels", str(bad))
    assert "2 error(s)" in msg and "line 2: near_threshold: 'perhaps' is not a boolean" in msg
    assert "line 2: attempt: 'maybe' is not a boolean" in msg
    extra = tmp_path / "extra.csv"
    extra.write_text("run_id,attempt,success,failure_class,labeled_by,labeled_at,score\n")
    assert "unknown column(s) score" in err("--judge", "tiny", "--db", world.url,
                                            "--labels", str(extra))
    # cheap checks first: a bad --out or label file never opens (so never creates) the ledger
    fresh = tmp_path / "never" / "ledger.db"
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert "is a file; expected a folder" in err("--judge", "tiny", "--db", f"sqlite:///{fresh}",
                                                 "--out", str(a_file))
    assert "cannot be made: " in err("--judge", "tiny", "--db", f"sqlite:///{fresh}",
                                     "--out", str(a_file / "sub"))
    assert "label file not found" in err("--judge", "tiny", "--db", f"sqlite:///{fresh}",
                                         "--labels", str(tmp_path / "missing.csv"))
    assert "--bootstrap -1" in err("--judge", "tiny", "--db", f"sqlite:///{fresh}",
                                   "--bootstrap", "-1")
    assert not fresh.parent.exists()


def test_a_missing_used_runs_file_refuses_the_version(world, tmp_path):
    v2 = write_v2(tmp_path, [])
    (tmp_path / "tiny-v2.used_runs.json").unlink()
    with Ledger.open(world.url) as ledger, pytest.raises(
            EvalError, match=r"training.used_runs file .* not found; eval never scores"):
        evaluate(ledger, [str(v2)])


def test_label_file_reader_keeps_the_latest_label_and_the_flag(tmp_path):
    path = tmp_path / "l.jsonl"
    path.write_text(
        '{"run_id": "r0", "attempt": true, "success": false, "failure_class": "grasp.slip", '
        '"labeled_by": "op", "labeled_at": "2026-11-02T00:00:00Z", "near_threshold": true}\n'
        '{"run_id": "r0", "attempt": true, "success": true, "failure_class": "", '
        '"labeled_by": "op", "labeled_at": "2026-11-01T00:00:00Z"}\n')
    truth = read_truth_file(path)
    assert truth["r0"].label.failure_class == "grasp.slip" and truth["r0"].near_threshold is True


def test_a_version_in_the_ledger_without_its_version_file_is_refused(tmp_path):
    with Ledger.open(f"sqlite:///{tmp_path / 'g.db'}") as ledger:
        ledger.record(Run(run_id="r0", bundle_uri="/b/r0", bundle_hash=bundle_hash("r0"),
                          attribution=attribution("task.a"), duration_s=6.0, cycle_sec=5.0),
                      judgment("r0", "ghost", A["r0"]))
        with pytest.raises(EvalError, match=r"judge version 'ghost': no version file .*ghost"
                                            r"\.yaml; eval reads its training block"):
            evaluate(ledger, ["ghost"])


def test_the_difference_column_says_which_version_is_subtracted(world, tmp_path, capsys):
    base = ["eval", "--judge", "tiny", "--compare", world.v2, "--db", world.url,
            "--labels", world.labels, "--bootstrap", "0"]
    assert main([*base, "--out", str(tmp_path / "r")]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(line for line in lines if line.lstrip().startswith("A: tiny"))
    assert head.split() == ["A:", "tiny", "B:", "tiny-v2", "B", "−", "A"]
    assert "B − A: tiny-v2 minus tiny (the second version minus the first)" in lines
    page = (tmp_path / "r" / "report.html").read_text()
    assert "<th>A: tiny</th><th>B: tiny-v2</th><th>B − A (tiny-v2 minus tiny)</th>" in page


def test_the_reliability_plot_shows_the_count_of_each_bin(world):
    from judge.learn.report import reliability_figure

    r = run_eval(world, ["tiny", world.v2], resamples=0)
    fig = reliability_figure(r, "success")
    texts = [t.get_text() for t in fig.axes[0].texts]
    # per version, one "n=…" above each bar: tiny's success bins on the 8 common runs hold
    # .57 | .62 | .77 | .82 | .87 | .92 | .67 | .97 (one run each, by hand from A)
    for name in ("tiny", "tiny-v2"):
        bins = [b for b in r["versions"][name]["success"]["bins"] if b["n"]]
        assert sum(b["n"] for b in bins) == 8
    want = [f"{b['n']}" for name in ("tiny", "tiny-v2")
            for b in r["versions"][name]["success"]["bins"] if b["n"]]
    assert texts == want
    assert [b["n"] for b in r["versions"]["tiny-v2"]["success"]["bins"] if b["n"]] == [
        1, 1, 1, 1, 2, 2]  # .57 | .62 | .72 | .82 | .87 ×2 | .92 ×2
    assert "bar labels: runs in the bin" in fig.axes[0].get_xlabel()


def test_the_report_gives_each_versions_three_readings_or_the_plain_line(world, tmp_path,
                                                                        capsys):
    import shutil

    from judge.ledgers.rounds import FrameRow, record_round

    # the world's labels were imported (no π): neither version can be rectified by them
    r = run_eval(world, ["tiny", world.v2], resamples=0)["rates"]
    assert (r["tiny"]["runs_judged"], r["tiny"]["judge_only"]["estimate"]) == (9, 3 / 9)
    assert r["tiny"]["no_valid_rectification"] == (
        "no valid rectification: none of the 9 labels of runs this version judged was drawn "
        "by a sampling round it did not train on (9 without a recorded pi)")
    assert r["tiny-v2"]["no_valid_rectification"] == (
        "no valid rectification: none of the 10 labels of runs this version judged was drawn "
        "by a sampling round it did not train on (1 trained it, 9 without a recorded pi)")
    # a copy of the ledger where a uniform round (π 5/9) over tiny's nine runs drew five
    # failures, r1 r2 r3 r5 r6: labels-only and rectified 0 [0, 1 − .025^(1/5)] for both
    # (tiny-v2 trained on r8, which the round did not draw: it stays usable for it)
    copy = tmp_path / "ledger.db"
    shutil.copy(world.root / "ledger.db", copy)
    url = f"sqlite:///{copy}"
    drawn = {"r1", "r2", "r3", "r5", "r6"}
    with Ledger.open(url) as ledger:
        with ledger.transaction() as tx:
            record_round(tx.conn, judge_version="tiny", strategy="sample-uniform", budget=5.0,
                         floor=1.0, seed=0, options={}, frame=[
                             FrameRow(rid, 5 / 9, 0.5, rid in drawn) for rid in A])
        rates = evaluate(ledger, ["tiny", world.v2], read_truth_file(world.labels),
                         world.labels, resamples=0)["rates"]
    high = 1 - 0.025 ** (1 / 5)
    for name, judged, covered, share in (("tiny", 9, 9, 3 / 9), ("tiny-v2", 10, 9, 3 / 10)):
        e = rates[name]
        assert (e["runs_judged"], e["runs_covered"], e["labels"], e["design"]) == (
            judged, covered, 5, "uniform")
        assert e["no_valid_rectification"] is None and e["judge_only"]["estimate"] == share
        for key in ("labels_only", "rectified"):
            assert (e[key]["estimate"], e[key]["low"], e[key]["method"]) == (
                0.0, 0.0, "clopper-pearson")
            assert e[key]["high"] == pytest.approx(high, abs=1e-12)
    assert main(["eval", "--judge", "tiny", "--compare", world.v2, "--db", url, "--labels",
                 world.labels, "--bootstrap", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    i = lines.index("  tiny: 9 run(s) judged, 9 inside a usable sampling frame, 5 labelled "
                    "(uniform sample)")
    cp = f"0.000 [0.000, {high:.3f}]"
    assert lines[i + 1:i + 5] == [
        f"    {'judge-only (uncorrected)':<30}{'0.333':<26}the judge's votes counted as the "
        "truth",
        f"    {'labels-only':<30}{cp:<26}clopper-pearson",
        f"    {'rectified':<30}{cp:<26}clopper-pearson",
        "      5 labels (under 30): the labels' exact interval; the judge cannot narrow a "
        "finite-sample interval this small (docs/rates.md)"]
    # and the plain line where no label can rectify a version
    assert main(["eval", "--judge", world.v2, "--db", world.url, "--labels", world.labels,
                 "--bootstrap", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    i = lines.index("  tiny-v2: 10 run(s) judged, 0 inside a usable sampling frame, 0 labelled")
    assert lines[i + 1:i + 3] == [
        f"    {'judge-only (uncorrected)':<30}0.300",
        "    no valid rectification: none of the 10 labels of runs this version judged was "
        "drawn by a sampling round it did not train on (1 trained it, 9 without a recorded pi)"]
