"""``rcjudge rates`` and ``rcjudge compare`` on hand-made ledgers (SQLite and PostgreSQL):
every reading, count, note and left-out line worked out by hand, through the report
functions and through the CLI (text, --json, --html, --truth)."""

from __future__ import annotations

import json
import math
from html import escape

import pytest
import test_ledgers
from test_review_queue import V, lab, record

from judge.learn.rate_inputs import rate_rows
from judge.learn.rates_report import UNCOVERED, compare_report, rates_report
from judge.ledgers import Ledger
from judge.ledgers.review import Review, add_reviewed_labels
from judge.ledgers.rounds import FrameRow, read_frames, record_round
from rcjudge.cli import main

db = test_ledgers.db
ledger = test_ledgers.ledger
A, B = "lab/policy-a@1", "lab/policy-b@1"
UP, DOWN = (0.9, 0.9, 0.9), (0.1, 0.1, 0.1)


# --- the rates ledger: four cells -----------------------------------------------------------
# policy-a · t.a: 8 runs, all voted success (p .8); the round drew 7, six labelled failure,
#   one left unlabelled; one not drawn.                  covered 7 (8 less the unlabelled)
# policy-a · t.b: 4 runs voted failure (p .2); two drawn (a success, a failure).  covered 4
# policy-b · t.a: 5 runs voted success (p .8); all drawn, all labelled success.    covered 5
# policy-b · t.b: 3 runs voted success, outside the round's frame; one labelled by a
#   committee pick (no π).                                                          covered 0
def rates_ledger(led: Ledger) -> None:
    runs = {**{f"aa{i}": ("policy-a", "t.a", True, 0.8) for i in range(8)},
            **{f"ab{i}": ("policy-a", "t.b", False, 0.2) for i in range(4)},
            **{f"ba{i}": ("policy-b", "t.a", True, 0.8) for i in range(5)},
            **{f"bb{i}": ("policy-b", "t.b", True, 0.8) for i in range(3)}}
    drawn: dict[str, bool | None] = {f"aa{i}": False for i in range(6)}
    drawn["aa6"] = None
    drawn.update({"ab0": True, "ab1": False})
    drawn.update({f"ba{i}": True for i in range(5)})
    for rid, (policy, task, vote, p) in runs.items():
        record(led, rid, UP if vote else DOWN, task=task, policy=policy,
               sc=p if vote else 1 - p)
    frame = [FrameRow(r, 0.5, runs[r][3], r in drawn) for r in sorted(set(drawn) | {
        "aa7", "ab2", "ab3"})]
    with led.transaction() as tx:
        rnd = record_round(tx.conn, judge_version=V, strategy="sample-uniform", budget=8.5,
                           floor=1.0, seed=0, options={}, frame=frame)
    add_reviewed_labels(led, [
        (lab(r, y, i), Review(judge_version=V, strategy="sample-uniform", rank=i + 1,
                              score=0.5, reason="", round_id=rnd.round_id, pi=0.5))
        for i, (r, y) in enumerate(sorted(drawn.items())) if y is not None]
        + [(lab("bb0", True, 30), Review(judge_version=V, strategy="committee", rank=1,
                                          score=0.2, reason="models disagree"))])


CP_0_OF_6 = 1 - 0.025 ** (1 / 6)  # Clopper–Pearson 95 %: 0 of 6 -> [0, 1 − (α/2)^(1/6)]
CP_5_OF_5 = 0.025 ** (1 / 5)  # 5 of 5 -> [(α/2)^(1/5), 1]
MCNEMAR = ("the judge's votes and the labels disagree beyond chance: on the labelled runs the "
           "votes say success where the label says failure 6 times, and failure where it says "
           "success 0 times (exact McNemar p = 0.031)")  # 2 · (1/2)^6 = 0.03125


def _rate(r: dict) -> tuple:
    return (r["estimate"], r["low"], r["high"], r["n_runs"], r["n_labels"], r["method"],
            r["note"])


def test_the_rates_report_of_a_hand_made_ledger(ledger):
    rates_ledger(ledger)
    with ledger.engine.connect() as conn:
        rounds = read_frames(conn)[0]
    r = rates_report(rate_rows(ledger, V), rounds)
    assert (r["judge_version"], r["by"], r["runs_judged"], r["runs_covered"], r["labels"]) == (
        V, ["policy", "task"], 20, 16, 13)
    assert r["rounds"] == [{"round_id": 1, "strategy": "sample-uniform", "judge_version": V,
                            "seed": 0, "candidates": 17, "drawn": 14}]
    assert r["no_valid_rectification"] is None
    assert [(x["reason"], x["count"]) for x in r["left_out"]] == [
        ("no_pi", 1), ("outside_frames", 3), ("drawn_unlabelled", 1)]
    aa, ab, ba, bb = r["cells"]
    assert [c["cell"] for c in r["cells"]] == [[A, "t.a"], [A, "t.b"], [B, "t.a"], [B, "t.b"]]
    assert [(c["runs_judged"], c["runs_covered"], c["labels"], c["design"])
            for c in r["cells"]] == [(8, 7, 6, "uniform"), (4, 4, 2, "uniform"),
                                     (5, 5, 5, "uniform"), (3, 0, 0, "none")]
    # policy-a · t.a: votes all success, the six labels all failure
    assert _rate(aa["judge_only"]) == (1.0, None, None, 8, 6, "uncorrected",
                                       "uncorrected: the judge's votes counted as the truth; "
                                       + MCNEMAR)
    assert aa["disagreement"] == MCNEMAR
    assert aa["labels_only"]["estimate"] == 0.0 and aa["labels_only"]["low"] == 0.0
    assert aa["labels_only"]["high"] == pytest.approx(CP_0_OF_6, abs=1e-12)
    assert (aa["labels_only"]["n_runs"], aa["labels_only"]["method"]) == (7, "clopper-pearson")
    assert aa["rectified"]["high"] == pytest.approx(CP_0_OF_6, abs=1e-12)
    assert aa["rectified"]["note"] == ("6 labels (under 30): the labels' exact interval; the "
                                       "judge cannot narrow a finite-sample interval this "
                                       "small (docs/rates.md)")
    # policy-a · t.b: two labels, no interval
    assert _rate(ab["rectified"]) == (None, None, None, 4, 2, "none", "2 labels: too few for "
                                      "any interval (at least 5)")
    assert ab["judge_only"]["estimate"] == 0.0 and ab["disagreement"] == ""
    # policy-b · t.a: every covered run labelled success
    assert ba["rectified"]["estimate"] == 1.0 and ba["rectified"]["high"] == 1.0
    assert ba["rectified"]["low"] == pytest.approx(CP_5_OF_5, abs=1e-12)
    assert ba["rectified"]["note"] == "every run is labelled: the labels' own mean"
    # policy-b · t.b: outside the frame; its committee label is no sample
    assert bb["judge_only"]["estimate"] == 1.0 and bb["labels"] == 0
    assert _rate(bb["rectified"]) == (None, None, None, 0, 0, "none", UNCOVERED)
    # pooled: 16 of 20 votes success; 13 labels over three covered cells: under 30
    p = r["pooled"]
    assert (p["cells"], p["cells_covered"], p["runs_judged"], p["runs_covered"]) == (4, 3, 20, 16)
    assert p["judge_only"]["estimate"] == 16 / 20
    assert _rate(p["rectified"]) == (None, None, None, 16, 13, "none", "13 labels over the "
                                     "cells: too few for a pooled interval (at least 30)")


def test_rates_command_text_json_html_and_truth(db, capsys, tmp_path):
    with Ledger.open(db.url, schema=db.schema) as led:
        rates_ledger(led)
        with led.engine.connect() as conn:
            want = rates_report(rate_rows(led, V, by=("task",)), read_frames(conn)[0])
    url = db.cli_url
    assert main(["rates", "--by", "task", "--db", url, "--json"]) == 0  # the only version
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(want))
    truth = tmp_path / "truth.csv"
    rows = ["run_id,attempt,success,failure_class,labeled_by,labeled_at"]
    rows += [f"aa{i},true,false,grasp.slip,physics,2026-12-01T00:00:00Z" for i in range(8)]
    rows += [f"ba{i},true,true,,physics,2026-12-01T00:00:00Z" for i in range(3)]
    truth.write_text("\n".join(rows) + "\n")
    html = tmp_path / "out" / "rates.html"
    assert main(["rates", "--judge", V, "--db", url, "--truth", str(truth),
                 "--html", str(html)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [
        f"rates of {V} (success) by policy, task: 20 judged run(s); labels-only and rectified "
        "read from the 16 inside a usable sampling frame, 13 labelled",
        "labels: a sample drawn by round 1 (sample-uniform, seed 0: 14 drawn of 17 "
        "candidates)"]
    i = out.index(f"cell {A} · t.a")
    cp = f"0.000 [0.000, {CP_0_OF_6:.3f}]"
    assert out[i + 1:i + 8] == [
        "  runs judged 8, covered 7, labelled 6 (uniform sample)",
        f"    {'judge-only (uncorrected)':<30}{'1.000':<26}the judge's votes counted as the "
        "truth",
        f"    {'labels-only':<30}{cp:<26}clopper-pearson",
        f"    {'rectified':<30}{cp:<26}clopper-pearson",
        "      6 labels (under 30): the labels' exact interval; the judge cannot narrow a "
        "finite-sample interval this small (docs/rates.md)",
        f"    {'truth (known only in a demo)':<30}{'0.000':<26}0 of 8 runs",
        f"    ! {MCNEMAR}"]
    assert f"cell {B} · t.b" in out and f"      {UNCOVERED}" in out
    assert out[-6:] == [
        "  1 run(s) drawn by a usable round with no label yet: label them (a drawn run left "
        "unlabelled biases the rectified rate)",
        "",
        f"truth: {truth} (3 of 11 judged runs): a rate a lab does not know; shown to check "
        "the readings against",
        "",
        "95 % intervals; judge-only has none (its bias is unknown until runs are labelled); "
        "how to read this: docs/rates.md",
        f"wrote {html}"]
    page = html.read_text()
    assert page.startswith("<!doctype html>") and "<script" not in page
    assert f"<td>{A} · t.a" in page and "0.000 (0 of 8)" in page and escape(MCNEMAR) in page
    # one-line errors, exit 2
    assert main(["rates", "--judge", "nope", "--db", url]) == 2
    assert "--judge 'nope': no judgment of this version" in capsys.readouterr().err
    assert main(["rates", "--by", "policy,arm", "--db", url]) == 2
    assert "--by 'policy,arm': expected distinct keys among" in capsys.readouterr().err
    assert main(["rates", "--truth", str(tmp_path / "none.csv"), "--db", url]) == 2
    assert "--truth " in capsys.readouterr().err
    assert main(["rates", "--html", str(tmp_path), "--db", url]) == 2
    assert f"--html {tmp_path}: is a folder" in capsys.readouterr().err


# --- the compare ledger: two tasks, two policies ------------------------------------------
# Every run's P is 0.8 (voted success), so the judge says nothing about which run succeeds:
# λ = 0 and the rectified reading is the labels' mean with se = sd(Y)/√n (ddof 1), df the
# labels' effective count. One uniform round (π .8) over all 120 runs.
# t.c: A 50 runs, 40 drawn: 20 successes; B 50 runs, 40 drawn: 10 successes.
# t.d: A 10 runs, 8 drawn: 6 successes;  B 10 runs, 8 drawn: 2 successes.
def compare_ledger(led: Ledger) -> None:
    runs, drawn = {}, {}
    for policy, tag, task, n, k_drawn, k_yes in (
            ("policy-a", "ac", "t.c", 50, 40, 20), ("policy-b", "bc", "t.c", 50, 40, 10),
            ("policy-a", "ad", "t.d", 10, 8, 6), ("policy-b", "bd", "t.d", 10, 8, 2)):
        for i in range(n):
            rid = f"{tag}{i:02d}"
            runs[rid] = (policy, task)
            if i < k_drawn:
                drawn[rid] = i < k_yes
    for rid, (policy, task) in runs.items():
        record(led, rid, UP, task=task, policy=policy, sc=0.8)
    with led.transaction() as tx:
        rnd = record_round(tx.conn, judge_version=V, strategy="sample-uniform", budget=96.0,
                           floor=1.0, seed=0, options={}, frame=[
                               FrameRow(r, 0.8, 0.8, r in drawn) for r in sorted(runs)])
    add_reviewed_labels(led, [
        (lab(r, y, i % 60).model_copy(update={"labeled_by": f"op-{i}"}),
         Review(judge_version=V, strategy="sample-uniform", rank=i + 1, score=0.8, reason="",
                round_id=rnd.round_id, pi=0.8))
        for i, (r, y) in enumerate(sorted(drawn.items()))])


def _mean_se_df(k: int, n: int) -> tuple[float, float, float]:
    """k successes of n labels, λ = 0: mean, sd(ddof 1)/√n and the effective count
    (Σd²)²/Σd⁴ of the centred labels."""
    m = k / n
    s2 = k * (1 - m) ** 2 + (n - k) * m**2
    s4 = k * (1 - m) ** 4 + (n - k) * m**4
    return m, math.sqrt(s2 / (n - 1) / n), s2**2 / s4


def test_compare_two_policies_per_task_and_pooled(db, capsys):
    t = pytest.importorskip("scipy.stats").t  # the t law, as an oracle
    with Ledger.open(db.url, schema=db.schema) as led:
        compare_ledger(led)
        r = compare_report(rate_rows(led, V, by=("policy", "task")), A, B)
    assert (r["a"], r["b"], r["by"]) == (A, B, ["task"])
    tc, td = r["cells"]
    assert (tc["cell"], td["cell"]) == (["t.c"], ["t.d"])
    assert [(s["runs_judged"], s["runs_covered"], s["labels"], s["judge_only"])
            for s in (tc["a"], tc["b"], td["a"], td["b"])] == [
        (50, 50, 40, 1.0), (50, 50, 40, 1.0), (10, 10, 8, 1.0), (10, 10, 8, 1.0)]
    # t.c: both sides by the CLT (40 labels): A .5 (df 40), B .25 (df 56.25/3.28125)
    ma, sa_, dfa = _mean_se_df(20, 40)
    assert ma == 0.5
    mb, sb, dfb = _mean_se_df(10, 40)
    assert mb == 0.25
    assert (dfa, dfb) == (pytest.approx(40.0), pytest.approx(56.25 / 3.28125))
    ra = tc["a"]["rectified"]
    assert (ra["method"], ra["estimate"], ra["lam"]) == ("ppi++", 0.5, 0.0)
    assert ra["se"] == pytest.approx(sa_, abs=1e-12) and ra["df"] == pytest.approx(dfa)
    half_a = t.ppf(0.975, dfa) * sa_
    assert (ra["low"], ra["high"]) == (pytest.approx(0.5 - half_a, abs=1e-9),
                                       pytest.approx(0.5 + half_a, abs=1e-9))
    d = tc["rectified"]
    se = math.hypot(sa_, sb)
    df = se**4 / (sa_**4 / dfa + sb**4 / dfb)
    half = t.ppf(0.975, df) * se
    assert d["method"] == "clt" and d["estimate"] == pytest.approx(0.25, abs=1e-12)
    assert d["low"] == pytest.approx(0.25 - half, abs=1e-9)
    assert d["high"] == pytest.approx(0.25 + half, abs=1e-9)
    assert d["p_value"] == pytest.approx(2 * t.sf(0.25 / se, df), abs=1e-9)
    assert d["df"] == pytest.approx(df, abs=1e-9)
    # labels-only of a uniform sample is exact: no p-value, the union bound
    assert (tc["labels_only"]["method"], tc["labels_only"]["p_value"]) == ("union bound", None)
    # t.d: 8 labels a side, under 30: exact intervals, union bound, no p-value
    assert (td["rectified"]["method"], td["rectified"]["p_value"]) == ("union bound", None)
    assert td["rectified"]["estimate"] == pytest.approx(0.5, abs=1e-12)
    # pooled over t.c and t.d, weights by the runs of both: 100/120 and 20/120; λ = 0
    p = r["pooled"]
    assert p["cells"] == 2 and p["cell"] == ["all"]
    assert [(p[s]["runs_judged"], p[s]["runs_covered"], p[s]["labels"], p[s]["judge_only"])
            for s in "ab"] == [(60, 60, 48, 1.0), (60, 60, 48, 1.0)]
    w = (100 / 120, 20 / 120)
    parts = {}
    for side, (kc, kd) in (("a", (20, 6)), ("b", (10, 2))):
        (mc, sc, dc), (md, sd, dd) = _mean_se_df(kc, 40), _mean_se_df(kd, 8)
        v = (w[0] ** 2 * sc**2, w[1] ** 2 * sd**2)
        parts[side] = (w[0] * mc + w[1] * md, math.sqrt(sum(v)),
                       sum(v) ** 2 / (v[0] ** 2 / dc + v[1] ** 2 / dd))
        got = p[side]["rectified"]
        assert got["estimate"] == pytest.approx(parts[side][0], abs=1e-12)
        assert got["se"] == pytest.approx(parts[side][1], abs=1e-12)
        assert got["df"] == pytest.approx(parts[side][2], abs=1e-9)
        assert got["method"] == "stratified ppi++" and got["lam"] == 0.0
    (ea, sa2, da), (eb, sb2, db2) = parts["a"], parts["b"]
    se = math.hypot(sa2, sb2)
    df = se**4 / (sa2**4 / da + sb2**4 / db2)
    assert p["rectified"]["estimate"] == pytest.approx(ea - eb, abs=1e-12)
    assert p["rectified"]["p_value"] == pytest.approx(2 * t.sf((ea - eb) / se, df), abs=1e-9)
    assert r["unmatched"] == [] and r["uncovered"] == []
    # through the CLI: --json is the report; the text names the difference and the p-value
    url = db.cli_url
    assert main(["compare", "--judge", V, A, B, "--db", url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(r))
    assert main(["compare", "--judge", V, A, B, "--db", url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"compare {A} (A) with {B} (B), judged by {V} (success), per task: "
                      "differences A − B")
    i = out.index("cell t.c")
    assert out[i + 3] == (f"  rectified A − B       +0.250 [{0.25 - half:+.3f}, "
                          f"{0.25 + half:+.3f}]  p = {d['p_value']:.3g}  (clt)")
    assert "pooled over the 2 cells both have (each weighted by its runs of both policies)" in out
    # errors: an unknown policy, the same twice, --by policy
    assert main(["compare", "--judge", V, A, "lab/nope@1", "--db", url]) == 2
    assert (f"policy 'lab/nope@1': no run of it judged by {V} (policies: {A}, {B})"
            in capsys.readouterr().err)
    assert main(["compare", "--judge", V, A, A, "--db", url]) == 2
    assert "POLICY_A and POLICY_B are both" in capsys.readouterr().err
    assert main(["compare", "--judge", V, A, B, "--by", "policy", "--db", url]) == 2
    assert "'policy' is not a cell key here" in capsys.readouterr().err
