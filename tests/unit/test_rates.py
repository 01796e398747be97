"""Rates rectified by labels (judge.learn.rates, judge.learn.ppi, judge.learn.student_t):
values worked by hand, ppi_py's numbers to 1e-9, the readings a cell gets, pooling and
comparing, and bad rows refused."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judge.learn import ppi, student_t
from judge.learn.rates import (
    MIN_CLT,
    RateRow,
    RatesError,
    cell_rates,
    clopper_pearson,
    compare,
    pooled,
    rates,
)

# A small example, by hand. Labelled: Y = 1, 0, 1, 1 with P = .9, .2, .6, .7 (Ȳ = .75,
# P̄ = .6); unlabelled P = .8, .1, .5, .4, .7, .3 (mean 2.8/6 = 7/15).
# Cov_n(Y, P) = [(.25)(.3) + (−.75)(−.4) + (.25)(0) + (.25)(.1)] / 4 = .4/4 = .1.
# Var of all ten P with n − 1 = 9: their mean is .52, squared deviations sum to .636,
# so .636/9. λ̂ = .1 / ((1 + 4/6)·.636/9) = .9·3/(5·.636) = 2.7/3.18 = 45/53.
# θ̂ = λ̂·7/15 + .75 − λ̂·.6 = .75 − (2/15)(45/53) = .75 − 6/53 = 135/212.
Y4 = np.array([1.0, 0.0, 1.0, 1.0])
F4 = np.array([0.9, 0.2, 0.6, 0.7])
U6 = np.array([0.8, 0.1, 0.5, 0.4, 0.7, 0.3])


def test_the_small_example_worked_by_hand() -> None:
    fit = ppi.classic(Y4, F4, U6)
    assert float(fit.lam) == pytest.approx(45 / 53, abs=1e-12)
    assert float(fit.estimate) == pytest.approx(135 / 212, abs=1e-12)
    # se² = λ²·Var_6(P)/6 + Var_4(Y − λP)/4, both variances divided by their count
    lam = 45 / 53
    resid = Y4 - lam * F4
    se2 = lam**2 * U6.var() / 6 + resid.var() / 4
    assert float(fit.se) == pytest.approx(math.sqrt(se2), abs=1e-12)
    # λ = 0 is the labels' mean; a P that never moves says nothing (λ = 0, not 0/0)
    assert float(ppi.classic(Y4, F4, U6, lam=0.0).estimate) == 0.75
    assert float(ppi.classic(Y4, np.full(4, 0.5), np.full(6, 0.5)).lam) == 0.0


def test_cross_fitted_lambda_is_each_labels_leave_one_out_value() -> None:
    # each label's λ from the other three, Var(P) from the six unlabelled runs (ddof 1):
    # without the one failure (label 1: Y = 0, P = .2) the rest have Y = 1, 1, 1: Cov = 0
    fit = ppi.classic_crossfit(Y4, F4, U6)
    lam = []
    for i in range(4):
        rest = np.delete(np.arange(4), i)
        cov = np.mean((Y4[rest] - Y4[rest].mean()) * (F4[rest] - F4[rest].mean()))
        lam.append(min(1.0, max(0.0, cov / ((1 + 4 / 6) * U6.var(ddof=1)))))
    lam = np.array(lam)
    assert lam[1] == 0.0 and (lam[[0, 2, 3]] > 0).all()
    est = np.mean(Y4 - lam * F4) + lam.mean() * U6.mean()
    assert float(fit.estimate) == pytest.approx(est, abs=1e-12)
    assert float(fit.lam) == pytest.approx(lam.mean(), abs=1e-12)
    se2 = np.var(Y4 - lam * F4, ddof=1) / 4 + lam.mean() ** 2 * U6.var(ddof=1) / 6
    assert float(fit.se) == pytest.approx(math.sqrt(se2), abs=1e-12)


def test_ipw_with_every_run_labelled_for_sure_is_the_labels_mean() -> None:
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    fit = ppi.ipw(np.array([0.9, 0.1, 0.8, 0.4, 0.3]), np.ones(5, bool), y, np.ones(5))
    assert float(fit.estimate) == pytest.approx(0.6, abs=1e-12)
    assert float(fit.se) == pytest.approx(y.std(ddof=1) / math.sqrt(5), abs=1e-12)


def test_ipw_with_uniform_pi_is_close_to_the_classic_form() -> None:
    rng = np.random.default_rng(7)
    y = (rng.random(600) < 0.4).astype(float)
    p = np.where(y == 1, rng.beta(1.4, 0.6, 600), rng.beta(0.4, 1.6, 600))  # calibrated
    lab = np.zeros(600, bool)
    lab[:60] = True
    c = ppi.classic(y[:60], p[:60], p[60:])
    a = ppi.ipw(p, lab, y, np.full(600, 0.1))
    assert abs(float(a.estimate) - float(c.estimate)) < 0.2 * float(c.se)
    assert float(a.se) == pytest.approx(float(c.se), rel=0.05)


def test_clopper_pearson_at_the_ends_by_hand() -> None:
    # 0 of n: P(X = 0 | q) = (1 − q)^n = α/2 → q = 1 − (α/2)^(1/n); n of n mirrors it
    for n in (5, 12, 29):
        lo, hi = clopper_pearson(np.array([0, n]), n, 0.05)
        assert hi[0] == pytest.approx(1 - 0.025 ** (1 / n), abs=1e-12)
        assert lo[1] == pytest.approx(0.025 ** (1 / n), abs=1e-12)
        assert lo[0] == 0.0 and hi[1] == 1.0
    # 1 of 2: P(X ≥ 1 | q) = 1 − (1 − q)² = .025 → q = 1 − √.975; the upper mirrors it
    lo, hi = clopper_pearson(np.array([1]), 2, 0.05)
    assert lo[0] == pytest.approx(1 - math.sqrt(0.975), abs=1e-12)
    assert hi[0] == pytest.approx(math.sqrt(0.975), abs=1e-12)


def test_student_t_by_hand_and_against_scipy() -> None:
    # one degree of freedom is Cauchy: P(|T| ≥ t) = 1 − 2·atan(t)/π, quantile tan(π(q − ½))
    assert float(student_t.two_sided_p(np.array(1.0), np.array(1.0))) == pytest.approx(
        0.5, abs=1e-12)
    assert float(student_t.quantile(0.975, np.array([1.0]))[0]) == pytest.approx(
        math.tan(math.pi * 0.475), abs=1e-8)
    # two: P(|T| ≥ t) = 1 − t/√(2 + t²)
    assert float(student_t.two_sided_p(np.array(3.0), np.array(2.0))) == pytest.approx(
        1 - 3 / math.sqrt(11), abs=1e-12)
    stats = pytest.importorskip("scipy.stats", reason="scipy is the oracle (pip install scipy)")
    df = np.array([1.0, 1.7, 3.0, 9.5, 29.0, 49.9, 50.0, 120.0, 1e4, 1e7])
    for q in (0.975, 0.9875):
        assert np.abs(student_t.quantile(q, df) - stats.t.ppf(q, df)).max() < 1e-8
    t = np.array([0.2, 1.0, 2.5, 7.0])
    for d in (1.0, 4.2, 30.0, 800.0):
        want = 2 * stats.t.sf(t, d)
        assert np.abs(student_t.two_sided_p(t, np.full(4, d)) - want).max() < 1e-9


# --- ppi_py, the reference implementation -------------------------------------------------

@pytest.fixture(scope="module")
def ppi_py():
    return pytest.importorskip(
        "ppi_py", reason="the reference implementation: pip install ppi-python==0.2.3 "
        "(in the dev extra)")


def _arrays(seed: int, n: int, m: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n + m) < 0.37).astype(float)
    p = np.clip(0.55 * y + 0.45 * rng.random(n + m), 0, 1)
    return y[:n], p[:n], p[n:]


@pytest.mark.parametrize(("seed", "n", "m"), [(0, 32, 64), (1, 40, 360), (2, 300, 1700),
                                              (3, 4, 6)])
def test_classic_is_ppi_py_to_1e_9(ppi_py, seed: int, n: int, m: int) -> None:
    """ppi_py's alpha is the error level (0.05 → 95 %; its default 0.1 is a 90 % interval);
    its λ̂ is clipped to [0, 1] (``clip=True``) and computed the same way for the point
    estimate and the interval."""
    y, f, u = _arrays(seed, n, m) if n > 4 else (Y4, F4, U6)
    fit = ppi.classic(y, f, u)
    z = 1.959963984540054
    assert float(fit.estimate) == pytest.approx(
        float(ppi_py.ppi_mean_pointestimate(y, f, u)[0]), abs=1e-9)
    lo, hi = ppi_py.ppi_mean_ci(y, f, u, alpha=0.05)
    assert float(fit.estimate - z * fit.se) == pytest.approx(float(lo[0]), abs=1e-9)
    assert float(fit.estimate + z * fit.se) == pytest.approx(float(hi[0]), abs=1e-9)
    for lam in (0.0, 0.3, 1.0):
        fixed = ppi.classic(y, f, u, lam=lam)
        lo, hi = ppi_py.ppi_mean_ci(y, f, u, alpha=0.05, lam=lam)
        assert float(fixed.estimate - z * fixed.se) == pytest.approx(float(lo[0]), abs=1e-9)
        assert float(fixed.estimate + z * fixed.se) == pytest.approx(float(hi[0]), abs=1e-9)
    lo, hi = ppi_py.classical_mean_ci(y, alpha=0.05)
    labels = ppi.classic(y, f, u, lam=0.0)
    assert float(labels.estimate - z * labels.se) == pytest.approx(float(lo), abs=1e-9)
    assert float(labels.estimate + z * labels.se) == pytest.approx(float(hi), abs=1e-9)


# --- rows in, readings out -------------------------------------------------------------------

def _rows(y: np.ndarray, p: np.ndarray, labelled: np.ndarray, pi: np.ndarray | float,
          cell: tuple[str, ...] = ("pol", "task"), prefix: str = "r") -> list[RateRow]:
    pi = np.broadcast_to(np.asarray(pi, float), y.shape)
    return [RateRow(f"{prefix}{i:05d}", cell, float(p[i]), bool(p[i] > 0.5),
                    bool(y[i]) if labelled[i] else None, float(pi[i]) if labelled[i] else None)
            for i in range(len(y))]


def _cell(seed: int, n_runs: int, n_labels: int, theta: float = 0.4, active: bool = False,
          cell: tuple[str, ...] = ("pol", "task"), prefix: str = "r") -> list[RateRow]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n_runs) < theta).astype(float)
    p = np.where(y == 1, rng.beta(2.0, 0.5, n_runs), rng.beta(0.5, 2.0, n_runs))
    lab = np.zeros(n_runs, bool)
    lab[:n_labels] = True
    pi = np.where(np.arange(n_runs) % 2 == 0, 0.1, 0.3) if active else n_labels / n_runs
    return _rows(y, p, lab, pi, cell, prefix)


def test_a_cell_without_labels_has_only_the_judges_reading() -> None:
    c = cell_rates(_cell(0, 50, 0))
    assert c.design == "none" and c.n_labels == 0
    assert c.judge_only.method == "uncorrected" and c.judge_only.low is None
    assert c.judge_only.estimate == pytest.approx(np.mean([r.vote for r in _cell(0, 50, 0)]))
    for r in (c.labels_only, c.rectified):
        assert (r.estimate, r.low, r.high, r.method) == (None, None, None, "none")
        assert r.note == "no usable labels in this cell"


def test_four_labels_are_too_few_for_any_interval() -> None:
    c = cell_rates(_cell(1, 50, 4))
    assert c.rectified.estimate is None
    assert c.rectified.note == "4 labels: too few for any interval (at least 5)"


def test_under_30_uniform_labels_both_readings_are_the_labels_exact_interval() -> None:
    rows = _cell(2, 200, 12)
    c = cell_rates(rows)
    k = sum(r.y for r in rows if r.y is not None)
    lo, hi = clopper_pearson(np.array([k]), 12, 0.05)
    for r in (c.labels_only, c.rectified):
        assert r.method == "clopper-pearson" and r.se is None
        assert (r.estimate, r.low, r.high) == (k / 12, float(lo[0]), float(hi[0]))
    assert c.rectified.note == ("12 labels (under 30): the labels' exact interval; the judge "
                                "cannot narrow a finite-sample interval this small "
                                "(docs/rates.md)")
    assert c.labels_only.note == ""


def test_30_uniform_labels_get_ppi_plus_plus_by_the_clt() -> None:
    c = cell_rates(_cell(3, 400, MIN_CLT))
    assert c.design == "uniform"
    assert (c.labels_only.method, c.rectified.method) == ("clopper-pearson", "ppi++")
    assert c.rectified.high - c.rectified.low < c.labels_only.high - c.labels_only.low
    assert 0 < c.rectified.lam <= 1 and c.rectified.df > 1


def test_an_active_sample_under_50_labels_gets_no_interval_and_says_why() -> None:
    c = cell_rates(_cell(4, 400, 40, active=True))
    assert c.design == "active" and c.rectified.estimate is None
    assert c.rectified.note == ("40 labels from an unequal-probability (active) sample: too "
                                "few for an interval (its interval rests on the CLT: at least 50)")
    c = cell_rates(_cell(4, 400, 60, active=True))
    assert (c.labels_only.method, c.rectified.method) == ("ipw", "active-ppi++")


def test_labels_that_all_agree_get_an_exact_interval_not_a_zero_width_one() -> None:
    rows = [RateRow(f"r{i}", ("c",), 0.9, True, True if i < 40 else None,
                    0.1 if i < 40 else None) for i in range(400)]
    r = cell_rates(rows).labels_only
    assert r.method == "clopper-pearson" and r.estimate == 1.0
    assert r.low == pytest.approx(0.025 ** (1 / 40), abs=1e-12) and r.high == 1.0


def test_every_run_labelled_is_the_labels_mean() -> None:
    c = cell_rates(_cell(5, 60, 60))
    assert c.rectified.estimate == c.labels_only.estimate
    assert c.rectified.note == "every run is labelled: the labels' own mean"


def test_the_judge_and_the_labels_disagreeing_beyond_chance_is_noted() -> None:
    # the judge says success on every run; 14 of 40 labels are successes: 26 discordant
    # pairs all one way, exact McNemar p = 2 / 2**26
    rows = [RateRow(f"r{i:03d}", ("c",), 0.9, True, (i < 14) if i < 40 else None,
                    0.4 if i < 40 else None) for i in range(100)]
    note = cell_rates(rows).judge_only.note
    assert note.endswith("failure where it says success 0 times (exact McNemar p = 3e-08)")
    assert "votes say success where the label says failure 26 times" in note


def test_pooled_weights_cells_by_their_runs() -> None:
    # labels-only, both cells uniform: Σ w·Ȳ with w = 300/400, 100/400
    a = _cell(6, 300, 60, cell=("a",), prefix="a")
    b = _cell(7, 100, 40, theta=0.8, cell=("b",), prefix="b")
    mean = lambda rows: np.mean([r.y for r in rows if r.y is not None])  # noqa: E731
    p = pooled(a + b)
    assert p.labels_only.estimate == pytest.approx(0.75 * mean(a) + 0.25 * mean(b), abs=1e-12)
    assert p.labels_only.method == "stratified classical"
    assert p.rectified.low < p.rectified.estimate < p.rectified.high
    assert p.judge_only.estimate == pytest.approx(np.mean([r.vote for r in a + b]), abs=1e-12)
    few = pooled(a + _cell(8, 50, 1, cell=("c",), prefix="c"))
    assert few.rectified.note == "1 cell(s) with fewer than 2 labels, so no pooled interval: c"


def test_compare_two_policies_per_cell_and_pooled() -> None:
    a = _cell(9, 400, 80, theta=0.3, cell=("t1",), prefix="a") + _cell(
        10, 400, 12, theta=0.3, cell=("t2",), prefix="b")
    b = _cell(11, 400, 80, theta=0.7, cell=("t1",), prefix="c") + _cell(
        12, 400, 12, theta=0.7, cell=("t2",), prefix="d") + _cell(
        13, 50, 10, cell=("t3",), prefix="e")
    cmp = compare(a, b)
    assert cmp.unmatched == (("t3",),)
    t1, t2 = cmp.cells
    assert t1.rectified.method == "clt" and t1.rectified.p_value < 1e-6
    assert t1.rectified.estimate == pytest.approx(
        t1.a.rectified.estimate - t1.b.rectified.estimate, abs=1e-12)
    assert t2.rectified.method == "union bound" and t2.rectified.p_value is None
    assert t1.labels_only.method == "union bound"  # exact intervals: no standard error
    assert t2.rectified.low < t2.rectified.estimate < t2.rectified.high
    assert cmp.pooled.rectified.p_value < 1e-3  # the 12-label cell carries its few df
    assert cmp.to_dict()["pooled"]["rectified"]["method"] == "clt"


def test_rates_groups_by_cell_and_refuses_a_run_twice() -> None:
    rows = _cell(14, 40, 10, cell=("b",), prefix="x") + _cell(15, 40, 10, cell=("a",))
    assert [c.cell for c in rates(rows)] == [("a",), ("b",)]
    with pytest.raises(RatesError, match="rate row 'x00000': the run is given twice"):
        rates(rows + rows[:1])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"p": 1.2}, r"rate row 'r1': p must be a probability in \[0, 1\], got 1.2"),
    ({"y": True, "pi": None}, "rate row 'r1': y and pi go together"),
    ({"y": None, "pi": 0.5}, "rate row 'r1': y and pi go together"),
    ({"y": True, "pi": 0.0}, r"rate row 'r1': pi must be in \(0, 1\], got 0.0"),
    ({"cell": ["a"]}, "rate row 'r1': cell must be a tuple of strings, got"),
    ({"run_id": ""}, "rate row: run_id must be a non-empty string"),
])
def test_a_bad_row_is_refused_naming_the_field(kwargs: dict, message: str) -> None:
    base = {"run_id": "r1", "cell": ("a",), "p": 0.5, "vote": True, "y": None, "pi": None}
    with pytest.raises(RatesError, match=message):
        RateRow(**{**base, **kwargs})


def test_the_benchs_active_draw_is_the_review_queues_by_hand() -> None:
    from bench.rates import inclusion_probabilities
    from judge.learn.draw import inclusion_probabilities as queue_pi

    # the queue's draw at floor .5: w = √(P(1 − P)) = .5, .5, .3, 0 (mean .325),
    # u = .5·w/.325 + .5 (mean 1), π = (n/N)·u = .25 + .25·w/.325 for n = 2 of N = 4
    pi = inclusion_probabilities(np.array([[0.5, 0.5, 0.1, 0.0]] * 2), 2.0)
    want = [0.25 + 0.25 * w / 0.325 for w in (0.5, 0.5, 0.3, 0.0)]
    assert pi.shape == (2, 4) and pi[1] == pytest.approx(want, abs=1e-12)
    assert list(pi[0]) == queue_pi([0.5, 0.5, 0.1, 0.0], 2.0, 0.5)  # the same function
    # a π over 1 is capped and the rest of the budget spread: w = .5, 0, 0, 0 gives
    # u = 2.5, .5, .5, .5 and π 1.25 for the first: it is drawn surely, the other three
    # share 1 label in proportion to u: 1/3 each
    assert inclusion_probabilities(np.array([0.5, 0.0, 0.0, 0.0]), 2.0) == pytest.approx(
        [1.0, 1 / 3, 1 / 3, 1 / 3], abs=1e-12)
    # a judge sure of every run: no P to spread the draw by, so uniform
    assert inclusion_probabilities(np.array([0.0, 1.0, 1.0, 0.0]), 1.0) == pytest.approx(
        [0.25] * 4, abs=1e-12)
    # never above 1: a budget of every run draws every run
    assert inclusion_probabilities(np.array([0.5, 0.2, 0.9]), 3.0) == pytest.approx([1.0] * 3)
