"""Finite-sample confidence bounds for a mean by betting (Waudby-Smith & Ramdas, JRSS-B 2024):
the probe behind docs/rates.md's choice for cells under 30 labels.

``bench.rates --probe-small-n`` asks whether a finite-sample interval can use the judge when
a cell has few labels: it bounds the rectifier Y − λf (and the judged runs' mean) by
betting and compares the width with the labels' own (betting and Clopper–Pearson). It
cannot, measurably, so ``judge.learn.rates`` gives such cells the labels' exact interval;
this module stays a bench tool. The idea of betting: to test "the mean is m", bet on each
observation in turn; a gambler who multiplies a stake by ``1 + β_t (x_t − m)`` at every step
is playing a fair (or worse) game when the mean is m, so by Ville's inequality the wealth
ever reaches 1/α with probability at most α. Every m at which it does is rejected; the rest
is the confidence set. Nothing rests on the observations being near normal: only on each
one's conditional mean being m and on the support bound ``lo_t`` it cannot go below, known
before it is seen (so the bet can keep the wealth non-negative).

Bets are the predictable plug-in of the paper for a fixed sample size:
``β_t = sqrt(2 ln(1/α) / (n σ̂²_{t−1}))``, with the running mean and variance of what came
before (started at ``prior_mean`` and ``prior_var``), capped at ``cap / (m − lo_t)``. The
wealth falls as m rises (each factor does), so the rejected set is every m below a
threshold, found by bisection; the bound returned is the largest m bisection saw
rejected, so it errs on the safe side by at most ``(hi − lo) / 2**iters``.

Every function takes arrays with any leading (batch) axes and the observations on the last
axis, so a Monte-Carlo test bounds thousands of samples in one call.
"""

from __future__ import annotations

import math

import numpy as np

CAP = 0.75  # the bet's cap: wealth never falls below 1 − CAP of itself in one step
ITERS = 40


def plug_in_bets(x: np.ndarray, alpha: float, prior_mean: float,
                 prior_var: float) -> np.ndarray:
    """The uncapped bet before each observation: (..., n), from the ones before it only."""
    n = x.shape[-1]
    t = np.arange(1, n + 1)
    mu = (prior_mean + np.cumsum(x, axis=-1)) / (t + 1)  # μ̂_t, x_t included
    var = (prior_var + np.cumsum((x - mu) ** 2, axis=-1)) / (t + 1)  # σ̂²_t
    before = np.concatenate([np.full(x.shape[:-1] + (1,), prior_var), var[..., :-1]], axis=-1)
    return np.sqrt(2.0 * math.log(1.0 / alpha) / (n * before))


def _rejects(x: np.ndarray, lo: np.ndarray, bets: np.ndarray, m: np.ndarray,
             threshold: float) -> np.ndarray:
    """Whether the wealth betting that the mean exceeds ``m`` (…,) ever reaches e^threshold."""
    gap = m[..., None] - lo  # (..., n) > 0 where the cap binds
    capped = np.where(gap > 0, np.minimum(bets, CAP / np.where(gap > 0, gap, 1.0)), bets)
    wealth = np.cumsum(np.log1p(capped * (x - m[..., None])), axis=-1)
    return wealth.max(axis=-1) >= threshold


def lower_bound(x: np.ndarray, lo: np.ndarray, alpha: float, domain: tuple[float, float],
                prior_mean: float = 0.5, prior_var: float = 0.25) -> np.ndarray:
    """A lower confidence bound at level 1 − ``alpha`` for the mean of ``x`` (…, n).

    ``lo`` (broadcast to ``x``) bounds each observation from below and must be known before
    it is seen; ``domain`` is where the mean lies. Returns (…,): the bound, ``domain[0]``
    where nothing in it is rejected.
    """
    x = np.asarray(x, float)
    lo = np.broadcast_to(np.asarray(lo, float), x.shape)
    bets = plug_in_bets(x, alpha, prior_mean, prior_var)
    threshold = math.log(1.0 / alpha)
    shape = x.shape[:-1]
    low = np.full(shape, float(domain[0]))
    high = np.full(shape, float(domain[1]))
    if x.shape[-1] == 0:
        return low
    rejected_low = _rejects(x, lo, bets, low, threshold)
    rejected_high = _rejects(x, lo, bets, high, threshold)
    for _ in range(ITERS):
        mid = 0.5 * (low + high)
        r = _rejects(x, lo, bets, mid, threshold)
        low = np.where(r, mid, low)
        high = np.where(r, high, mid)
    out = np.where(rejected_low, low, float(domain[0]))
    return np.where(rejected_high, float(domain[1]), out)


def upper_bound(x: np.ndarray, hi: np.ndarray, alpha: float, domain: tuple[float, float],
                prior_mean: float = 0.5, prior_var: float = 0.25) -> np.ndarray:
    """An upper confidence bound at level 1 − ``alpha``: :func:`lower_bound` of −x, with
    ``hi`` (known before each observation) bounding it from above."""
    return -lower_bound(-np.asarray(x, float), -np.asarray(hi, float), alpha,
                        (-domain[1], -domain[0]), -prior_mean, prior_var)


def predictable_lambda(y: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray) -> np.ndarray:
    """PPI++'s λ before each label, from the labels before it only (…, n); 0 until two."""
    from judge.learn.ppi import ratio

    n, m = y.shape[-1], f_unl.shape[-1]
    k = np.arange(n)
    pad = np.zeros(y.shape[:-1] + (1,))
    s_y = np.concatenate([pad, np.cumsum(y, -1)[..., :-1]], -1)
    s_f = np.concatenate([pad, np.cumsum(f_lab, -1)[..., :-1]], -1)
    s_yf = np.concatenate([pad, np.cumsum(y * f_lab, -1)[..., :-1]], -1)
    kk = np.maximum(k, 1)
    cov = np.where(k >= 2, s_yf / kk - (s_y / kk) * (s_f / kk), 0.0)
    den = (1 + n / m) * f_unl.var(-1, ddof=1)[..., None]
    return ratio(cov, np.broadcast_to(den, cov.shape))


def rectified_bounds(y: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray, alpha: float,
                     f_share: float = 0.2, lam: float | None = None,
                     mean_f: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A finite-sample interval for θ = λ_t·E f + E[Y − λ_t f]: E f gets a betting interval
    [a, b] at ``f_share``·α from the unlabelled runs (or is ``mean_f``, known: an oracle),
    each label's Y − λ_t f + λ_t a (b for the upper bound) a betting bound at the rest, the
    union bound joining them. λ_t: predictable (or the fixed ``lam``: an oracle)."""
    if mean_f is None:
        a_f = alpha * f_share
        fa = lower_bound(f_unl, 0.0, a_f / 2, (0.0, 1.0))[..., None]
        fb = upper_bound(f_unl, 1.0, a_f / 2, (0.0, 1.0))[..., None]
    else:
        a_f, fa, fb = 0.0, mean_f, mean_f
    a_r = alpha - a_f
    lam_t = (predictable_lambda(y, f_lab, f_unl) if lam is None
             else np.full_like(y, float(lam)))
    lo = lower_bound(y - lam_t * f_lab + lam_t * fa, lam_t * (fa - 1), a_r / 2, (0.0, 1.0))
    hi = upper_bound(y - lam_t * f_lab + lam_t * fb, 1 + lam_t * fb, a_r / 2, (0.0, 1.0))
    return lo, hi
