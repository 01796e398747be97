"""Monte-Carlo coverage of the rates' 95 % intervals (judge.learn.rates), the table of
docs/rates.md: ``pytest -s tests/unit/test_rates_coverage.py`` prints it.

Every setting draws 2,000 cells of N runs of a policy whose true rate is 0.4 (each run a
success with probability 0.4, independently: the rate a lab publishes is this probability,
of which a cell's runs are a sample), a judge's P for each run, and labels: a uniform draw
of round(fraction·N) runs, or an active one (each run drawn independently with π ∝
√(P(1 − P)) mixed with an even share, never below half the uniform rate: the review
queue's own draw, ``judge.learn.draw.inclusion_probabilities``, through
``bench.rates.inclusion_probabilities``).
It then checks, over the trials that got an interval, that the labels-only and the
rectified 95 % intervals cover 0.4 in at least 93.5 % of trials, and that the rectified
interval is on average at most 5 % wider than labels-only (power tuning falls back to the
labels, never far below them).

Monte-Carlo error: with 2,000 trials, a coverage of 0.95 is read with a standard error
of √(0.95·0.05/2000) = 0.0049, so 0.935 is three standard errors below the nominal level;
settings where fewer than 500 trials get an interval are printed, not asserted (their
error is over 0.01). The draws are seeded per setting, so the run is the same every time.

The judges, by P given the truth Y (success rate θ = 0.4, k a sharpness):
* coin — P uniform on [0, 1], whatever Y (knows nothing, and is not calibrated either);
* medium, good — calibrated: P ~ Beta(θk + Y, (1 − θ)k + 1 − Y), so P(Y = 1 | P) = P;
  k = 1 (Var(Y − P) = Var(Y)/2) and k = 0.1 (Var(Y − P) = Var(Y)/11);
* perfect — P = Y;
* biased — the good judge, but half the successes get a failure's P (it misses them);
* uncalibrated — the medium judge's P cubed (ranks right, says success far too rarely).
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.rates import inclusion_probabilities, judge_p
from judge.learn.rates import MIN_ACTIVE, MIN_CLT, active_readings, uniform_readings

pytestmark = pytest.mark.slow  # about a minute on 2 shared cores

THETA = 0.4
TRIALS = 2000
JUDGES = ("coin", "medium", "good", "perfect", "biased", "uncalibrated")
UNIFORM = ((20, 0.20), (100, 0.10), (400, 0.05), (400, 0.20), (2000, 0.02), (2000, 0.20))
ACTIVE = ((100, 0.20), (400, 0.15), (400, 0.20), (2000, 0.02), (2000, 0.05))


def simulate(name: str, n_runs: int, fraction: float, design: str, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    y = (rng.random((TRIALS, n_runs)) < THETA).astype(float)  # (T, N)
    p = judge_p(name, y, rng, THETA)
    if design == "uniform":
        n = round(fraction * n_runs)
        got = [uniform_readings(y[:, :n], p[:, :n], p[:, n:], tune=t) for t in (False, True)]
    else:
        pi = inclusion_probabilities(p, fraction * n_runs)
        lab = rng.random(p.shape) < pi
        got = [active_readings(p, lab, y, pi, tune=t) for t in (False, True)]
    row = {"judge": name, "design": design, "runs": n_runs, "fraction": fraction}
    both = ~np.isnan(got[0].low) & ~np.isnan(got[1].low)
    for key, r in zip(("labels", "rectified"), got, strict=True):
        has = ~np.isnan(r.low)
        row[f"{key}_has"] = int(has.sum())
        row[f"{key}_cov"] = (float(((r.low <= THETA) & (THETA <= r.high))[has].mean())
                             if has.any() else None)
        row[f"{key}_width"] = float((r.high - r.low)[both].mean()) if both.any() else None
    return row


@pytest.fixture(scope="module")
def table() -> list[dict]:
    settings = [(j, n, f, "uniform") for j in JUDGES for n, f in UNIFORM] + [
        (j, n, f, "active") for j in JUDGES for n, f in ACTIVE]
    return [simulate(j, n, f, d, seed) for seed, (j, n, f, d) in enumerate(settings)]


def _show(table: list[dict]) -> None:
    fmt = lambda v: "–" if v is None else f"{v:.3f}"  # noqa: E731
    print("\n| judge | design | runs | labelled | trials with an interval | labels-only "
          "coverage | rectified coverage | mean width, labels-only | rectified |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in table:
        print(f"| {r['judge']} | {r['design']} | {r['runs']} | {r['fraction']:.0%} | "
              f"{r['rectified_has']} | {fmt(r['labels_cov'])} | {fmt(r['rectified_cov'])} | "
              f"{fmt(r['labels_width'])} | {fmt(r['rectified_width'])} |")


def test_the_95_intervals_cover_in_every_setting(table: list[dict]) -> None:
    _show(table)
    asserted = 0
    for r in table:
        for key in ("labels", "rectified"):
            if r[f"{key}_has"] >= 500:
                asserted += 1
                assert r[f"{key}_cov"] >= 0.935, r
    assert asserted >= 60


def test_the_rectified_interval_is_never_materially_wider(table: list[dict]) -> None:
    for r in table:
        if r["labels_width"] is not None:
            assert r["rectified_width"] <= 1.05 * r["labels_width"], r


def test_too_few_labels_give_no_interval(table: list[dict]) -> None:
    # 4 labels of 20 runs: below the 5 of any interval; about 20 and 40 active labels (of
    # 100 and 2,000 runs): under the 50 an active sample needs, bar the odd larger draw
    for r in table:
        if (r["design"], r["runs"]) == ("uniform", 20):
            assert r["labels_has"] == r["rectified_has"] == 0
        if (r["design"], r["runs"], r["fraction"]) in (("active", 100, 0.2),
                                                       ("active", 2000, 0.02)):
            assert r["rectified_has"] < 0.1 * TRIALS
    assert (MIN_CLT, MIN_ACTIVE) == (30, 50)
