"""Student's t distribution, vectorised, without scipy (``judge.learn.rates``' quantiles and
p-values with a fractional number of degrees of freedom).

The CDF is the regularized incomplete beta function, ``P(|T| > t) = I_x(ν/2, 1/2)`` with
``x = ν / (ν + t²)``, evaluated by its continued fraction (modified Lentz; Numerical
Recipes §6.4); the quantile inverts it by safeguarded Newton steps.
``tests/unit/test_rates.py`` checks both against scipy (to 1e-8).
"""

from __future__ import annotations

import functools
import math

import numpy as np

_TINY = 1e-300


def _betacf(a: np.ndarray, b: np.ndarray, x: np.ndarray, iters: int = 300) -> np.ndarray:
    """The continued fraction of the incomplete beta function (valid for x < (a+1)/(a+b+2))."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = 1.0 - qab * x / qap
    d = np.where(np.abs(d) < _TINY, _TINY, d)
    d = 1.0 / d
    h = d.copy()
    for m in range(1, iters + 1):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = np.where(np.abs(d) < _TINY, _TINY, d)
            c = 1.0 + aa / c
            c = np.where(np.abs(c) < _TINY, _TINY, c)
            d = 1.0 / d
            h = h * d * c
        if np.all(np.abs(d * c - 1.0) < 1e-15):
            break
    return h


def _lgamma(v: np.ndarray) -> np.ndarray:
    return np.vectorize(math.lgamma, otypes=[float])(v)


def betainc(a: np.ndarray, b: np.ndarray, x: np.ndarray,
            log_beta: np.ndarray | None = None) -> np.ndarray:
    """The regularized incomplete beta function I_x(a, b), elementwise (``log_beta``: ln B(a,
    b), when the caller has it)."""
    a, b, x = np.broadcast_arrays(*(np.asarray(v, float) for v in (a, b, x)))
    if log_beta is None:
        log_beta = _lgamma(a) + _lgamma(b) - _lgamma(a + b)
    inner = (x > 0) & (x < 1)
    xs = np.where(inner, x, 0.5)
    front = np.exp(-log_beta + a * np.log(xs) + b * np.log1p(-xs))
    direct = xs < (a + 1) / (a + b + 2)
    out = np.where(direct, front * _betacf(a, b, xs) / a,
                   1.0 - front * _betacf(b, a, 1.0 - xs) / b)
    return np.where(x <= 0, 0.0, np.where(x >= 1, 1.0, out))


def two_sided_p(t: np.ndarray, df: np.ndarray, log_beta: np.ndarray | None = None) -> np.ndarray:
    """P(|T_df| ≥ |t|)."""
    t, df = np.broadcast_arrays(np.abs(np.asarray(t, float)), np.asarray(df, float))
    return betainc(df / 2, np.full_like(df, 0.5), df / (df + t * t), log_beta)


def _pdf(t: np.ndarray, df: np.ndarray, log_beta: np.ndarray) -> np.ndarray:
    """The density, with ln B(df/2, 1/2) = ln Γ(df/2) + ln √π − ln Γ((df+1)/2)."""
    return np.exp(-log_beta - 0.5 * np.log(df) - (df + 1) / 2 * np.log1p(t * t / df))


def _newton_quantile(q: float, df: np.ndarray) -> np.ndarray:
    """Newton's method on the two-sided tail from the normal quantile, kept inside a bracket
    that bisection tightens whenever a step would leave it."""
    from statistics import NormalDist

    df = np.asarray(df, float)
    lb = _lgamma(df / 2) + 0.5 * math.log(math.pi) - _lgamma((df + 1) / 2)
    tail = 2.0 * (1.0 - q)
    lo = np.zeros_like(df)
    hi = np.full_like(df, NormalDist().inv_cdf(q))
    while np.any(two_sided_p(hi, df, lb) > tail):
        hi = np.where(two_sided_p(hi, df, lb) > tail, hi * 2, hi)
    t = hi.copy()
    for _ in range(100):
        gap = two_sided_p(t, df, lb) - tail  # > 0: t too small
        lo, hi = np.where(gap > 0, t, lo), np.where(gap > 0, hi, t)
        step = t + gap / (2 * _pdf(t, df, lb))
        inside = (step > lo) & (step < hi)
        new = np.where(inside, step, 0.5 * (lo + hi))
        if np.all(np.abs(new - t) <= 1e-13 * np.maximum(1.0, t)):
            return new
        t = new
    return t


LARGE = 50.0  # from here on, the quantile is interpolated in 1/df (smooth there)


@functools.lru_cache(maxsize=8)
def _grid(q: float) -> tuple[np.ndarray, np.ndarray]:
    u = np.linspace(0.0, 1.0 / LARGE, 401)
    from statistics import NormalDist

    values = np.empty_like(u)
    values[0] = NormalDist().inv_cdf(q)
    values[1:] = _newton_quantile(q, 1.0 / u[1:])
    return u, values


def quantile(q: float, df: np.ndarray) -> np.ndarray:
    """The ``q`` quantile (q > 1/2) of t with ``df`` (…,) degrees of freedom, df ≥ 1
    (infinity: the normal one). Below ``LARGE`` solved directly; above, interpolated on a
    grid in 1/df solved once per q (error below 1e-8)."""
    df = np.asarray(df, float)
    out = np.empty_like(df)
    small = df < LARGE
    if small.any():
        out[small] = _newton_quantile(q, df[small])
    if (~small).any():
        u, values = _grid(float(q))
        out[~small] = np.interp(1.0 / df[~small], u, values)
    return out
