"""Prediction-powered estimates of a mean: the formulas behind ``judge.learn.rates``.

A judged run has the judge's calibrated P(success) ``f``; a labelled run has the truth ``Y``
too. Two forms, both with PPI++'s power tuning λ (Angelopoulos, Duchi & Zrnic 2023):

* **classic** — a uniform random sample: ``n`` labelled runs and ``M`` other runs of the
  same policy::

      θ̂ = λ·mean_M(f) + mean_n(Y − λf)
      se² = λ²·Var_M(f)/M + Var_n(Y − λf)/n
      λ̂ = clip(Cov_n(Y, f) / ((1 + n/M)·Var_{n+M}(f)), 0, 1)

  :func:`classic` is exactly ``ppi_py`` 0.2.3's ``ppi_mean_pointestimate`` /
  ``ppi_mean_ci`` (variances divided by n, Var(f) by n + M − 1; checked to 1e-9 in the
  tests). :func:`classic_crossfit` is what the rates use: each label's λ is tuned on the
  other labels (leave-one-out; Var(f) from the unlabelled runs), so no label's own error
  tunes how much of it is kept. Tuned on all of them, λ̂ follows the labels' own mean and
  pulls the estimate towards it: at 40 labels a bias of −0.005 to −0.009 and 92–93 %
  coverage (docs/rates.md); cross-fitted, the estimate is unbiased and covers.

* **ipw** — an active sample (Zrnic & Candès 2024): each of the cell's N runs was drawn
  independently with its own known probability π (ξ = 1 if drawn), so a labelled run
  stands for 1/π runs::

      z = κ·(1 − ξ/π) + λ·f·(1 − ξ/π) + ξ·Y/π        θ̂ = mean_N(z)    se² = Var_N(z)/N

  λf is the prediction; κ a constant one. Both terms have mean zero whatever κ and λ are, so
  they are tuned to the least variance, κ and λ (clipped to [0, 1]) for each run on the
  other runs (leave-one-out, exact in O(N)). Without κ a Poisson draw's random number of
  labels is in the variance and a judge that knows nothing would widen the labels' own
  interval (the Horvitz–Thompson estimator's flaw); with it, λ = 0 is the ratio estimate of
  the labels. With π = n/N for every run, θ̂ = mean_n(Y) + λ·(mean_N(f) − mean_n(f)): the
  classic estimate with λ scaled by M/N, and the same se to within 1 % (measured).

Every fit also gives ``df``: the effective number of observations behind its se, for a t
quantile — ``(Σd²)² / Σd⁴`` over the terms d whose spread makes the se (n for equal
terms, fewer when a few carry the variance: a judge's rare errors, a heavy 1/π), combined
over the two parts of the classic form by Welch–Satterthwaite. Arrays: any leading (batch)
axes, runs on the last; results are (…,) arrays.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Fit(NamedTuple):
    """Per batch entry: ``estimate``, ``se``, the (mean) λ used and ``df``; ``b`` and ``c``
    are the variance's coefficients in λ (``var(λ) = a − 2bλ + cλ²``), for tuning one λ over
    many cells."""

    estimate: np.ndarray
    se: np.ndarray
    lam: np.ndarray
    df: np.ndarray
    b: np.ndarray
    c: np.ndarray


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den clipped to [0, 1]; 0 where den is 0 (a constant P says nothing)."""
    num, den = np.broadcast_arrays(np.asarray(num, float), np.asarray(den, float))
    safe = np.where(den > 0, den, 1.0)
    return np.where(den > 0, np.clip(num / safe, 0.0, 1.0), 0.0)


def effective_count(d: np.ndarray) -> np.ndarray:
    """(Σd²)² / Σd⁴ of the centred terms (…, k): k for equal spread; k if all are equal."""
    d = d - d.mean(-1, keepdims=True)
    s2, s4 = (d**2).sum(-1), (d**4).sum(-1)
    return np.where(s4 > 0, s2**2 / np.where(s4 > 0, s4, 1.0), float(d.shape[-1]))


def _welch(v1: np.ndarray, df1: np.ndarray, v2: np.ndarray, df2: np.ndarray) -> np.ndarray:
    den = v1**2 / df1 + v2**2 / df2
    return np.where(den > 0, (v1 + v2) ** 2 / np.where(den > 0, den, 1.0), df1 + df2)


def classic(y: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray,
            lam: np.ndarray | float | None = None, ddof: int = 0) -> Fit:
    """The classic PPI++ estimate from labelled ``y``, ``f_lab`` (…, n) and unlabelled
    ``f_unl`` (…, M), as ``ppi_py`` computes it. ``lam`` None: tuned on all labels; a value
    (or (…,) array): used. ``ddof`` 1: unbiased variances. With M = 0, λ = 0."""
    y, f_lab, f_unl = (np.asarray(a, float) for a in (y, f_lab, f_unl))
    n, m = y.shape[-1], f_unl.shape[-1]
    cov = ((y - y.mean(-1, keepdims=True)) * (f_lab - f_lab.mean(-1, keepdims=True))).mean(-1)
    var_f = np.concatenate([f_lab, f_unl], axis=-1).var(-1, ddof=1) if n + m > 1 else 0 * cov
    b = cov / n
    c = var_f * ((1.0 / m if m else 0.0) + 1.0 / n)
    if m == 0:
        lam_arr = np.zeros(y.shape[:-1])
    elif lam is None:
        lam_arr = ratio(b, c)
    else:
        lam_arr = np.broadcast_to(np.asarray(lam, float), y.shape[:-1])
    resid = y - lam_arr[..., None] * f_lab
    imputed = lam_arr * f_unl.mean(-1) if m else 0.0
    v_imp = lam_arr**2 * f_unl.var(-1, ddof=ddof) / m if m else 0.0 * lam_arr
    v_rect = resid.var(-1, ddof=ddof) / n if n > ddof else np.full(y.shape[:-1], np.nan)
    df = _welch(v_rect, effective_count(resid), v_imp,
                effective_count(f_unl) if m else np.ones_like(v_rect))
    return Fit(imputed + resid.mean(-1), np.sqrt(v_imp + v_rect), lam_arr, df, b, c)


def classic_crossfit(y: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray,
                     tune: bool = True) -> Fit:
    """The classic form with each label's λ tuned on the other labels (``tune`` False:
    λ = 0, the labels' mean): θ̂ = mean_n(Y − λ_i f) + mean_n(λ_i)·mean_M(f), unbiased
    because λ_i never sees label i; unbiased variances (n ≥ 3)."""
    y, f_lab, f_unl = (np.asarray(a, float) for a in (y, f_lab, f_unl))
    n, m = y.shape[-1], f_unl.shape[-1]
    if tune and m > 1:
        k = n - 1
        s_y, s_f = y.sum(-1, keepdims=True), f_lab.sum(-1, keepdims=True)
        s_yf = (y * f_lab).sum(-1, keepdims=True)
        cov = (s_yf - y * f_lab) / k - ((s_y - y) / k) * ((s_f - f_lab) / k)
        var_u = f_unl.var(-1, ddof=1, keepdims=True)
        lam = ratio(cov, (1 + n / m) * var_u)  # (…, n)
    else:
        lam = np.zeros_like(y)
    resid = y - lam * f_lab
    lam_bar = lam.mean(-1)
    v_rect = resid.var(-1, ddof=1) / n
    if m > 1:
        imputed, v_imp = lam_bar * f_unl.mean(-1), lam_bar**2 * f_unl.var(-1, ddof=1) / m
        df_imp = effective_count(f_unl)
    else:  # λ is 0 here (nothing to tune it on)
        imputed, v_imp, df_imp = 0.0, 0.0 * lam_bar, np.ones_like(lam_bar)
    df = _welch(v_rect, effective_count(resid), v_imp, df_imp)
    zero = np.zeros_like(lam_bar)
    return Fit(resid.mean(-1) + imputed, np.sqrt(v_rect + v_imp), lam_bar, df, zero, zero)


def _loo_cov(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Each run's covariance of u and v over the other runs (…, N), divided by N − 1."""
    k = u.shape[-1] - 1
    s_u, s_v = u.sum(-1, keepdims=True), v.sum(-1, keepdims=True)
    s_uv = (u * v).sum(-1, keepdims=True)
    return (s_uv - u * v) / k - ((s_u - u) / k) * ((s_v - v) / k)


def ipw(f: np.ndarray, labelled: np.ndarray, y: np.ndarray, pi: np.ndarray,
        lam: np.ndarray | float | None = None) -> Fit:
    """The active-sample estimate over every run of the cell, (…, N) each: ``f`` the P,
    ``labelled`` whether the run was drawn and labelled, ``y`` its label and ``pi`` its
    inclusion probability (both read only where labelled). ``lam`` None: tuned per run on
    the others; a value (or (…,) array): used. κ is tuned per run on the others too."""
    f = np.asarray(f, float)
    xi = np.asarray(labelled, bool)
    w = np.where(xi, 1.0 / np.where(xi, np.asarray(pi, float), 1.0), 0.0)  # ξ/π
    n_runs = f.shape[-1]
    a = w * np.where(xi, np.asarray(y, float), 0.0)
    g = 1.0 - w  # the constant's control, mean zero
    h = f * g  # the prediction's control, mean zero
    # each run's κ and λ from the other runs (leave-one-out), with the constant's part taken
    # out of λ's; where one run carries most of the constant's spread (a nearly full draw)
    # the others cannot tune κ, and that run's κ comes from every run
    v_g, c_ag, c_hg = _loo_cov(g, g), _loo_cov(a, g), _loo_cov(h, g)
    safe = np.where(v_g > 0, v_g, 1.0)
    if lam is None:
        c_ah = _loo_cov(a, h) - np.where(v_g > 0, c_ag * c_hg / safe, 0.0)
        v_h = _loo_cov(h, h) - np.where(v_g > 0, c_hg**2 / safe, 0.0)
        lam_i = ratio(-c_ah, v_h)
    else:
        lam_i = np.broadcast_to(np.asarray(lam, float)[..., None], f.shape)
    var_g = g.var(-1, keepdims=True)
    full = np.where(var_g > 0, -(_cov(a, g)[..., None] + lam_i * _cov(h, g)[..., None])
                    / np.where(var_g > 0, var_g, 1.0), 0.0)
    kappa = np.where(v_g >= 0.5 * var_g * n_runs / (n_runs - 1),
                     -(c_ag + lam_i * c_hg) / safe, full)
    z = a + lam_i * h + kappa * g
    # the full-sample coefficients, for tuning one λ over many cells
    b = -_partial(a, h, g) / n_runs
    c = _partial(h, h, g) / n_runs
    return Fit(z.mean(-1), z.std(-1, ddof=1) / np.sqrt(n_runs), lam_i.mean(-1),
               effective_count(z), b, c)


def _cov(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return ((u - u.mean(-1, keepdims=True)) * (v - v.mean(-1, keepdims=True))).mean(-1)


def _partial(u: np.ndarray, v: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Cov(u, v) with g's linear part taken out of both."""
    var_g = g.var(-1)
    safe = np.where(var_g > 0, var_g, 1.0)
    return _cov(u, v) - np.where(var_g > 0, _cov(u, g) * _cov(v, g) / safe, 0.0)
