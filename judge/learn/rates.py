"""Success rates a lab can publish: the judge's runs rectified by the lab's own labels.

Where this sits: after judging and labelling. The ledger's judged runs, each with the
judge's calibrated P(success) and vote, and the labels a sampling round drew (with the
inclusion probability π of each) come in as :class:`RateRow` (the data side builds them:
which labels a version may use, which runs a round covered). Out come three readings per
cell of any grouping (docs/rates.md):

* **judge-only** ("uncorrected"): the share of runs the judge voted a success. No
  interval: its bias is unknown until runs are labelled.
* **labels-only**: the labelled runs alone (their mean, or the inverse-probability weighted
  mean for an active sample).
* **rectified**: prediction-powered (PPI++): the judge's P on every run, corrected by the
  labelled runs' errors, λ tuned from the data (``judge.learn.ppi``). A judge that knows
  nothing gets λ ≈ 0, the labels-only interval; never a wrong one.

Which interval: labels whose π are all equal are a uniform sample: the classic PPI++ form
(exactly ``ppi_py``'s). Unequal π: the inverse-probability-weighted form (active inference).
With 30 labels or more, 95 % intervals by the central limit theorem (a t quantile at the
effective degrees of freedom, ``judge.learn.ppi``). With fewer (from 5),
a uniform sample gets the labels' exact Clopper–Pearson interval, for labels-only and
rectified alike: a finite-sample bound cannot use the judge at that size (a handful of
labels cannot rule out its rare large errors; docs/rates.md has the measurement). The
labels-only reading of a uniform sample is that exact interval at any size. An active
sample needs 50 labels (its 1/π weights make the mean's law heavier-tailed: at 40 the
intervals covered 93.4 %) and gets none below (a finite-sample bound is vacuous with such
weights); the note says so. Pooled rates (:func:`pooled`) stratify over
cells, weighted by their runs; :func:`compare` gives the difference of two policies with
a p-value.

The functions ending in ``_readings`` work on arrays with a batch axis: the Monte-Carlo
tests and ``bench/rates.py`` call them on thousands of cells at once; the row functions call
them on one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np

from judge.errors import JudgeError
from judge.learn import ppi, student_t

ALPHA = 0.05
MIN_CLT = 30  # labels of a uniform sample from which the central limit theorem is trusted
MIN_ACTIVE = 50  # of an active sample: its 1/π weights make the mean's law heavier-tailed
MIN_LABELS = 5  # labels from which a finite-sample interval says something


class RatesError(JudgeError, ValueError):
    """A row given to the rates is malformed (names the run and the field)."""


@dataclass(frozen=True)
class RateRow:
    """One judged run of a cell.

    ``p``: the judge's calibrated P(success); ``vote``: its voted answer; ``y``: the label
    when usable for rectification, else None; ``pi``: the label's inclusion probability in
    its sampling frame, None exactly when ``y`` is None."""

    run_id: str
    cell: tuple[str, ...]
    p: float
    vote: bool
    y: bool | None
    pi: float | None

    def __post_init__(self) -> None:
        where = f"rate row {self.run_id!r}"
        if not isinstance(self.run_id, str) or not self.run_id:
            raise RatesError(f"rate row: run_id must be a non-empty string, got {self.run_id!r}")
        if not isinstance(self.cell, tuple) or not all(isinstance(c, str) for c in self.cell):
            raise RatesError(f"{where}: cell must be a tuple of strings, got {self.cell!r}")
        if not (isinstance(self.p, int | float) and 0.0 <= self.p <= 1.0):
            raise RatesError(f"{where}: p must be a probability in [0, 1], got {self.p!r}")
        if (self.y is None) != (self.pi is None):
            raise RatesError(f"{where}: y and pi go together (a label has an inclusion "
                             f"probability), got y={self.y!r}, pi={self.pi!r}")
        if self.pi is not None and not (isinstance(self.pi, int | float) and 0 < self.pi <= 1):
            raise RatesError(f"{where}: pi must be in (0, 1], got {self.pi!r}")


@dataclass(frozen=True)
class Rate:
    """One reading of a rate: ``estimate`` with its 95 % interval [``low``, ``high``] (all
    None where there is none: ``note`` says why), ``method`` (uncorrected, classical, ipw,
    ppi++, active-ppi++, clopper-pearson, none); for an interval by the CLT its ``se`` and
    ``df`` (the t quantile's degrees of freedom); ``lam`` the power tuning of a rectified
    reading (the mean of the cross-fitted λs)."""

    reading: str
    estimate: float | None
    low: float | None
    high: float | None
    n_runs: int
    n_labels: int
    method: str
    note: str = ""
    se: float | None = None
    lam: float | None = None
    level: float = 1 - ALPHA
    df: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class CellRates:
    """The three readings of one cell; ``design`` uniform, active or none (no labels)."""

    cell: tuple[str, ...]
    n_runs: int
    n_labels: int
    design: str
    judge_only: Rate
    labels_only: Rate
    rectified: Rate

    def to_dict(self) -> dict:
        return {"cell": list(self.cell), "n_runs": self.n_runs, "n_labels": self.n_labels,
                "design": self.design, "judge_only": self.judge_only.to_dict(),
                "labels_only": self.labels_only.to_dict(),
                "rectified": self.rectified.to_dict()}


class Readings(NamedTuple):
    """Batch readings, (T,) each: NaN where there is no interval (``low``, ``high``) or no
    CLT standard error (``se``, ``df``)."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    se: np.ndarray
    lam: np.ndarray
    df: np.ndarray


def t_value(alpha: float, df: np.ndarray) -> np.ndarray:
    """The two-sided t quantile at ``df`` effective degrees of freedom (at least 1)."""
    return student_t.quantile(1 - alpha / 2, np.maximum(np.asarray(df, float), 1.0))


def _clt(fit: ppi.Fit, alpha: float) -> Readings:
    half = t_value(alpha, fit.df) * fit.se
    return Readings(fit.estimate, np.clip(fit.estimate - half, 0, 1),
                    np.clip(fit.estimate + half, 0, 1), fit.se, fit.lam, fit.df)


def _none(shape: tuple[int, ...]) -> Readings:
    nan = np.full(shape, np.nan)
    return Readings(nan, nan, nan, nan, nan, nan)


def clopper_pearson(k: np.ndarray, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The exact binomial interval for k successes of n (…,): the low end solves
    P(X ≥ k | q) = I_q(k, n − k + 1) = α/2, the high end P(X ≤ k | q) = 1 − I_q(k + 1, n − k)
    = α/2 (0 and 1 at the ends), by bisection on the incomplete beta function."""
    k = np.asarray(k, int)
    ks, where = np.unique(k, return_inverse=True)

    def solve(a: np.ndarray, b: np.ndarray, target: float) -> np.ndarray:
        lo, hi = np.zeros(len(a)), np.ones(len(a))
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            up = student_t.betainc(a, b, mid) < target  # I_q rises with q
            lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
        return 0.5 * (lo + hi)

    low, high = np.zeros(len(ks)), np.ones(len(ks))
    pos, below = ks > 0, ks < n
    if pos.any():
        low[pos] = solve(ks[pos].astype(float), n - ks[pos] + 1.0, alpha / 2)
    if below.any():
        high[below] = solve(ks[below] + 1.0, (n - ks[below]).astype(float), 1 - alpha / 2)
    return low[where].reshape(k.shape), high[where].reshape(k.shape)


def exact_readings(y: np.ndarray, alpha: float) -> Readings:
    """The labels' mean with its Clopper–Pearson interval: labels-only of a uniform sample,
    and its rectified reading under ``MIN_CLT`` labels (docs/rates.md says why)."""
    y = np.asarray(y, float)
    k = np.rint(y.sum(-1)).astype(int)
    lo, hi = clopper_pearson(k, y.shape[-1], alpha)
    nan = np.full(k.shape, np.nan)
    return Readings(y.mean(-1), lo, hi, nan, nan, nan)


def uniform_readings(y: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray,
                     alpha: float = ALPHA, tune: bool = True) -> Readings:
    """Readings of a uniform sample, n labels a batch entry: (…, n) labelled, (…, M) not.
    ``tune`` False: labels-only, the labels' exact (Clopper–Pearson) interval at any n;
    rectified: PPI++ by the CLT from ``MIN_CLT`` labels, the labels' exact one below."""
    n = np.shape(y)[-1]
    if n < MIN_LABELS:
        return _none(np.shape(y)[:-1])
    if n >= MIN_CLT and tune:
        return _clt(ppi.classic_crossfit(y, f_lab, f_unl, tune), alpha)
    return exact_readings(y, alpha)


def active_readings(f: np.ndarray, labelled: np.ndarray, y: np.ndarray, pi: np.ndarray,
                    alpha: float = ALPHA, tune: bool = True) -> Readings:
    """Readings of an active sample over every run, (…, N) each (see :func:`ppi.ipw`); no
    interval where an entry has fewer than ``MIN_ACTIVE`` labels."""
    r = _clt(ppi.ipw(f, labelled, y, pi, lam=None if tune else 0.0), alpha)
    ok = np.asarray(labelled).sum(-1) >= MIN_ACTIVE
    return Readings(*(np.where(ok, v, np.nan) for v in r))


def split(rows: Sequence[RateRow]) -> tuple[np.ndarray, ...]:
    """Arrays of one cell's rows, labelled first, each part in run-id order (a
    reproducible order): p, vote, labelled, y, pi."""
    rows = sorted(rows, key=lambda r: (r.y is None, r.run_id))
    p = np.array([r.p for r in rows], float)
    vote = np.array([r.vote for r in rows], bool)
    lab = np.array([r.y is not None for r in rows], bool)
    y = np.array([bool(r.y) for r in rows], float)
    pi = np.array([r.pi if r.pi is not None else 1.0 for r in rows], float)
    return p, vote, lab, y, pi


def design_of(lab: np.ndarray, pi: np.ndarray) -> str:
    """uniform (every label's π the same), active, or none (no labels)."""
    if not lab.any():
        return "none"
    q = pi[lab]
    return "uniform" if np.allclose(q, q[0], rtol=1e-9, atol=0.0) else "active"


def _method(design: str, n: int, tune: bool) -> str:
    if design == "active":
        return ("active-ppi++" if tune else "ipw") if n >= MIN_ACTIVE else "none"
    if n >= MIN_CLT and tune:
        return "ppi++"
    return "clopper-pearson" if n >= MIN_LABELS else "none"


def _why_none(design: str, n: int) -> str:
    if n == 0:
        return "no usable labels in this cell"
    if design == "active" and n < MIN_ACTIVE:
        return (f"{n} labels from an unequal-probability (active) sample: too few for an "
                f"interval (its interval rests on the CLT: at least {MIN_ACTIVE})")
    return f"{n} labels: too few for any interval (at least {MIN_LABELS})"


# --- one cell ------------------------------------------------------------------------------

def _reading(name: str, design: str, arrays: tuple[np.ndarray, ...], alpha: float,
             tune: bool) -> Rate:
    p, _, lab, y, pi = arrays
    n, n_runs = int(lab.sum()), len(p)
    method = _method(design, n, tune)
    if method == "none":
        return Rate(name, None, None, None, n_runs, n, "none", _why_none(design, n),
                    level=1 - alpha)
    if design == "uniform":
        r = uniform_readings(y[lab][None], p[lab][None], p[~lab][None], alpha, tune)
    else:
        r = active_readings(p[None], lab[None], y[None], pi[None], alpha, tune)
    note = ""
    if method == "clopper-pearson" and tune:
        note = (f"{n} labels (under {MIN_CLT}): the labels' exact interval; the judge cannot "
                "narrow a finite-sample interval this small (docs/rates.md)")
    if tune and n == n_runs:
        note = "every run is labelled: the labels' own mean"
    se = None if np.isnan(r.se[0]) else float(r.se[0])
    return Rate(name, float(r.estimate[0]), float(r.low[0]), float(r.high[0]), n_runs, n,
                method, note, se, None if not tune or np.isnan(r.lam[0]) else float(r.lam[0]),
                1 - alpha, None if se is None else float(r.df[0]))


def _binomial_two_sided(k: int, n: int) -> float:
    """Exact two-sided p of k or fewer (or as many more) of n at one half: min(1, 2·tail)."""
    tail = sum(math.comb(n, i) for i in range(min(k, n - k) + 1)) / 2**n
    return min(1.0, 2.0 * tail)


def disagreement(design: str, arrays: tuple[np.ndarray, ...], alpha: float = ALPHA) -> str:
    """A note when the judge's votes and the labels disagree beyond chance on the labelled
    runs ("" otherwise): E[vote] ≠ E[Y] tested by the exact McNemar test on a uniform
    sample, by the inverse-probability-weighted mean of vote − Y (CLT) on an active one."""
    p, vote, lab, y, pi = arrays
    if design == "uniform":
        v, t = vote[lab], y[lab].astype(bool)
        says_yes, says_no = int((v & ~t).sum()), int((~v & t).sum())
        pv = _binomial_two_sided(min(says_yes, says_no), says_yes + says_no)
        if pv < alpha:
            return (f"the judge's votes and the labels disagree beyond chance: on the labelled "
                    f"runs the votes say success where the label says failure {says_yes} "
                    f"times, and failure where it says success {says_no} times "
                    f"(exact McNemar p = {pv:.2g})")
    elif design == "active" and lab.sum() >= MIN_ACTIVE:
        d = np.where(lab, vote.astype(float) - y, 0.0)
        fit = ppi.ipw(np.zeros_like(p), lab, d, pi, lam=0.0)
        if fit.se > 0:
            pv = float(student_t.two_sided_p(fit.estimate / fit.se, fit.df))
            if pv < alpha:
                return (f"the judge's votes and the labels disagree beyond chance: the votes' "
                        f"rate is off the labels' by {float(fit.estimate):+.3f} (weighted, "
                        f"p = {pv:.2g})")
    return ""


def _judge_only(arrays: tuple[np.ndarray, ...], design: str, alpha: float) -> Rate:
    p, vote, lab, _, _ = arrays
    note = "uncorrected: the judge's votes counted as the truth"
    extra = disagreement(design, arrays, alpha)
    return Rate("judge-only", float(vote.mean()), None, None, len(p), int(lab.sum()),
                "uncorrected", f"{note}; {extra}" if extra else note, level=1 - alpha)


def cell_rates(rows: Sequence[RateRow], alpha: float = ALPHA) -> CellRates:
    """The three readings of one cell's rows (every row of the same ``cell``)."""
    if not rows:
        raise RatesError("cell_rates: no rows")
    cells = {r.cell for r in rows}
    if len(cells) > 1:
        raise RatesError(f"cell_rates: rows of {len(cells)} cells given, one expected")
    arrays = split(rows)
    design = design_of(arrays[2], arrays[4])
    return CellRates(rows[0].cell, len(rows), int(arrays[2].sum()), design,
                     _judge_only(arrays, design, alpha),
                     _reading("labels-only", design, arrays, alpha, tune=False),
                     _reading("rectified", design, arrays, alpha, tune=True))


def by_cell(rows: Iterable[RateRow]) -> dict[tuple[str, ...], list[RateRow]]:
    """Rows grouped by cell, cells in sorted order; a run id twice is refused."""
    groups: dict[tuple[str, ...], list[RateRow]] = {}
    seen: set[str] = set()
    for r in rows:
        if r.run_id in seen:
            raise RatesError(f"rate row {r.run_id!r}: the run is given twice")
        seen.add(r.run_id)
        groups.setdefault(r.cell, []).append(r)
    return dict(sorted(groups.items()))


def rates(rows: Iterable[RateRow], alpha: float = ALPHA) -> list[CellRates]:
    """:func:`cell_rates` of every cell, in sorted cell order."""
    return [cell_rates(g, alpha) for g in by_cell(rows).values()]


# --- pooled over cells ---------------------------------------------------------------------

def _pooled_reading(name: str, parts: list[tuple[tuple[str, ...], str, tuple]],
                    weights: np.ndarray, alpha: float, tune: bool) -> Rate:
    """Σ_c w_c·θ̂_c with one λ tuned over every cell (each cell's variance is a quadratic in
    λ: the pooled one's least-variance λ, clipped to [0, 1]) and se² = Σ_c w_c²·se_c²."""
    n_runs = sum(len(a[0]) for _, _, a in parts)
    counts = [int(a[2].sum()) for _, _, a in parts]
    n = sum(counts)
    short = [c for (c, _, _), k in zip(parts, counts, strict=True) if k < 2]
    if short:
        named = ", ".join("/".join(c) for c in short[:5]) + (" …" if len(short) > 5 else "")
        return Rate(name, None, None, None, n_runs, n, "none",
                    f"{len(short)} cell(s) with fewer than 2 labels, so no pooled interval: "
                    f"{named}", level=1 - alpha)
    if n < MIN_CLT:
        return Rate(name, None, None, None, n_runs, n, "none",
                    f"{n} labels over the cells: too few for a pooled interval (at least "
                    f"{MIN_CLT})", level=1 - alpha)

    def fit(design: str, arrays: tuple, lam: float | None) -> ppi.Fit:
        p, _, lab, y, pi = arrays
        if design == "uniform":
            return ppi.classic(y[lab], p[lab], p[~lab], lam=lam, ddof=1)
        return ppi.ipw(p, lab, y, pi, lam=lam)

    lam = 0.0
    if tune:
        first = [fit(d, a, None) for _, d, a in parts]
        w2 = weights**2
        tunable = np.array([(~a[2]).any() for _, _, a in parts])  # a cell all labelled: λ = 0
        b = float(np.sum(w2 * tunable * np.array([float(f.b) for f in first])))
        c = float(np.sum(w2 * tunable * np.array([float(f.c) for f in first])))
        lam = float(ppi.ratio(b, c))
    fits = [fit(d, a, lam) for _, d, a in parts]
    est = float(np.sum(weights * np.array([float(f.estimate) for f in fits])))
    v = weights**2 * np.array([float(f.se) ** 2 for f in fits])
    dfs = np.array([float(f.df) for f in fits])
    se = float(np.sqrt(v.sum()))
    den = float(np.sum(v**2 / dfs))
    df = float(v.sum() ** 2 / den) if den > 0 else float(dfs.sum())
    half = float(t_value(alpha, df)) * se
    designs = sorted({d for _, d, _ in parts})
    note = (f"stratified over {len(parts)} cell(s) ({', '.join(designs)}), weighted by their "
            f"runs; the CLT over {n} labels")
    return Rate(name, est, max(0.0, est - half), min(1.0, est + half), n_runs, n,
                "stratified " + ("ppi++" if tune else "classical"), note, se,
                lam if tune else None, 1 - alpha, df)


def pooled(rows: Iterable[RateRow], alpha: float = ALPHA,
           weights: dict[tuple[str, ...], float] | None = None,
           cell: tuple[str, ...] = ("all",)) -> CellRates:
    """The three readings pooled over every cell of ``rows``, stratified: each cell weighted
    by its share of the runs (or by ``weights``, normalised over the cells present)."""
    groups = by_cell(rows)
    if not groups:
        raise RatesError("pooled: no rows")
    parts = []
    for c, g in groups.items():
        arrays = split(g)
        parts.append((c, design_of(arrays[2], arrays[4]), arrays))
    raw = np.array([len(g) if weights is None else weights[c] for c, g in groups.items()],
                   float)
    w = raw / raw.sum()
    judge = float(np.sum(w * np.array([a[1].mean() for _, _, a in parts])))
    n_runs = sum(len(g) for g in groups.values())
    n = sum(int(a[2].sum()) for _, _, a in parts)
    designs = {d for _, d, _ in parts} - {"none"}
    design = designs.pop() if len(designs) == 1 else ("mixed" if designs else "none")
    return CellRates(cell, n_runs, n, design,
                     Rate("judge-only", judge, None, None, n_runs, n, "uncorrected",
                          "uncorrected: the judge's votes counted as the truth",
                          level=1 - alpha),
                     _pooled_reading("labels-only", parts, w, alpha, tune=False),
                     _pooled_reading("rectified", parts, w, alpha, tune=True))


# --- two policies --------------------------------------------------------------------------

@dataclass(frozen=True)
class Difference:
    """A − B of one reading: ``estimate`` with its interval and two-sided ``p_value`` (None
    where the interval is not by the CLT: ``note`` says why)."""

    reading: str
    estimate: float | None
    low: float | None
    high: float | None
    p_value: float | None
    method: str
    note: str = ""
    level: float = 1 - ALPHA
    df: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class CellComparison:
    """One cell of both policies: their readings and the differences of two of them."""

    cell: tuple[str, ...]
    a: CellRates
    b: CellRates
    labels_only: Difference
    rectified: Difference

    def to_dict(self) -> dict:
        return {"cell": list(self.cell), "a": self.a.to_dict(), "b": self.b.to_dict(),
                "labels_only": self.labels_only.to_dict(),
                "rectified": self.rectified.to_dict()}


@dataclass(frozen=True)
class Comparison:
    """Policy A against B per cell both have, pooled over those cells with common weights
    (their runs of both policies), and the cells only one of them has."""

    cells: tuple[CellComparison, ...]
    pooled: CellComparison | None
    unmatched: tuple[tuple[str, ...], ...]

    def to_dict(self) -> dict:
        return {"cells": [c.to_dict() for c in self.cells],
                "pooled": None if self.pooled is None else self.pooled.to_dict(),
                "unmatched": [list(c) for c in self.unmatched]}


def _difference(ra: Rate, rb: Rate, alpha: float, again=None) -> Difference:
    """A − B; by the CLT when both readings have a standard error, else each side's interval
    at 1 − α/2 (``again(side, α)`` recomputes one) combined by the union bound."""
    name = ra.reading
    if ra.se is not None and rb.se is not None:
        d = ra.estimate - rb.estimate
        se = math.hypot(ra.se, rb.se)
        den = ra.se**4 / ra.df + rb.se**4 / rb.df
        df = se**4 / den if den > 0 else ra.df + rb.df
        half = float(t_value(alpha, df)) * se
        pv = float(student_t.two_sided_p(d / se, df)) if se > 0 else None
        return Difference(name, d, max(-1.0, d - half), min(1.0, d + half), pv,
                          "clt", "" if pv is not None else "no spread: no p-value",
                          1 - alpha, df)
    if again is None or ra.estimate is None or rb.estimate is None:
        why = ra.note if ra.estimate is None else rb.note
        return Difference(name, None, None, None, None, "none", why, 1 - alpha)
    ha, hb = again("a", alpha / 2), again("b", alpha / 2)
    if ha.low is None or hb.low is None:
        why = ha.note if ha.low is None else hb.note
        return Difference(name, None, None, None, None, "none", why, 1 - alpha)
    return Difference(name, ra.estimate - rb.estimate, ha.low - hb.high, ha.high - hb.low,
                      None, "union bound",
                      "a side's interval is exact, not by the CLT: each side's at "
                      f"{100 * (1 - alpha / 2):g} %, combined; no p-value", 1 - alpha)


def compare(rows_a: Iterable[RateRow], rows_b: Iterable[RateRow],
            alpha: float = ALPHA) -> Comparison:
    """Policy A's rates against B's (the rows of each), per cell and pooled."""
    ga, gb = by_cell(rows_a), by_cell(rows_b)
    both = [c for c in ga if c in gb]
    out = []
    for c in both:
        ra, rb = cell_rates(ga[c], alpha), cell_rates(gb[c], alpha)
        diffs = []
        for attr, tune in (("labels_only", False), ("rectified", True)):
            name = getattr(ra, attr).reading

            def again(side: str, a: float, c=c, tune=tune, name=name) -> Rate:
                arrays = split((ga if side == "a" else gb)[c])
                return _reading(name, design_of(arrays[2], arrays[4]), arrays, a, tune)
            diffs.append(_difference(getattr(ra, attr), getattr(rb, attr), alpha, again))
        out.append(CellComparison(c, ra, rb, *diffs))
    pooled_cmp = None
    if both:
        w = {c: float(len(ga[c]) + len(gb[c])) for c in both}
        pa = pooled([r for c in both for r in ga[c]], alpha, w)
        pb = pooled([r for c in both for r in gb[c]], alpha, w)
        pooled_cmp = CellComparison(("all",), pa, pb,
                                    _difference(pa.labels_only, pb.labels_only, alpha),
                                    _difference(pa.rectified, pb.rectified, alpha))
    unmatched = tuple(sorted(set(ga) ^ set(gb)))
    return Comparison(tuple(out), pooled_cmp, unmatched)
