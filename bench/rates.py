"""Labels needed for a rate: labels-only against rectified (uniform and active) on physics.

``python -m bench.rates --cell DIR --train DIR [--judge tiny-vision-streams] [--out
bench-out/rates] [--trials 400] [--half-width 0.05] [--png docs/rates-labels.png]``

``--cell`` and ``--train`` hold bundles with a ``truth.json`` each (``rcjudge sim``,
docs/sim.md), from different sim seeds, so no version below saw a cell run. Two versions
of the judge give each cell run its calibrated P(success) and vote:

* **untrained**: ``--judge`` as built (random weights), its three models' P(success)
  voted as the judge votes;
* **trained**: each model's answer head refitted on the ``--train`` runs (all labelled),
  and the ensemble's Platt map fitted on their out-of-fold P: what a label moves first
  (``bench.active`` explains the heads; ``rcjudge train`` of the whole models takes an hour
  a version here); **trained, no map**: the same heads' mean P as it comes;
* **synthetic** (``--synthetic``): calibrated judges drawn to a given quality, not measured
  ones, at the cell's rate: what a better version would save.

Then, for a cell of the 400-odd cell runs themselves and a cell of 2,000 runs **resampled
with replacement from those runs' (P, truth) pairs** (there are not 2,000 rollouts), the
fewest labels at which the mean 95 % half-width of ``judge.learn.rates``' reading is at
most ``--half-width``, for labels-only (uniform draw), rectified with a uniform draw and
rectified with an active draw (the review queue's draw, π ∝ √(P(1 − P)) mixed with an even
share, never below half the uniform rate: :func:`inclusion_probabilities`). Each count is
found by bisection, each step averaging ``--trials`` draws. A probe follows: the variances
the saving comes from, and the judged runs' own floor (the imputed mean's variance stays
whatever the labels).

Writes ``rates.json`` under ``--out``, the PNG (mean half-width against labels), and
prints the markdown tables of docs/rates.md. The features are cached as in
``bench.active``, so a second run takes a minute.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from judge.learn import rates

METHODS = ("labels-only", "rectified, uniform", "rectified, active")


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def inclusion_probabilities(p: np.ndarray, budget: float, floor: float | None = None
                            ) -> np.ndarray:
    """π per run (…, N) for an active draw of ``budget`` expected labels: the review queue's
    own draw (:func:`judge.learn.draw.inclusion_probabilities`: ∝ √(p(1 − p)) mixed with a
    ``floor`` share spread evenly, so π ≥ floor · budget / N; default
    :data:`judge.learn.draw.DEFAULT_FLOOR`), applied to each row of a batch."""
    from judge.learn.draw import DEFAULT_FLOOR
    from judge.learn.draw import inclusion_probabilities as queue_pi

    p = np.asarray(p, float)
    rows = p.reshape(-1, p.shape[-1])
    share = DEFAULT_FLOOR if floor is None else floor
    return np.array([queue_pi(row.tolist(), budget, share) for row in rows]).reshape(p.shape)


def judge_p(name: str, y: np.ndarray, rng: np.random.Generator, theta: float) -> np.ndarray:
    """A drawn judge's P for truths ``y`` of rate ``theta`` (the Monte-Carlo tests' judges,
    tests/unit/test_rates_coverage.py says what each is): coin, medium, good, perfect,
    biased, uncalibrated."""
    if name == "coin":
        return rng.random(y.shape)
    if name == "perfect":
        return y.copy()
    k = 0.1 if name in ("good", "biased") else 1.0
    a, b = theta * k, (1 - theta) * k
    p = np.where(y == 1, rng.beta(a + 1, b, y.shape), rng.beta(a, b + 1, y.shape))
    if name == "biased":
        missed = (y == 1) & (rng.random(y.shape) < 0.5)
        p = np.where(missed, rng.beta(a, b + 1, y.shape), p)
    return p**3 if name == "uncalibrated" else p


def coverage_probe(trials: int = 10000, theta: float = 0.4) -> list[dict]:
    """Why the rates' CLT intervals are built as they are, on drawn judges: coverage of 0.4
    at 40 uniform labels of 2,000 runs by ppi_py's form (λ tuned on the labels themselves,
    the normal quantile) against the rates' (λ left out per label, t at the effective df);
    and of the active form at about 40 and 60 expected labels (the minimum it needs)."""
    from judge.learn import ppi

    rows = []
    for name in ("coin", "good", "perfect", "biased", "uncalibrated"):
        hit = {"ppi_py form, 40": [], "rates, 40": [], "active, ~40": [], "active, ~60": []}
        for chunk in range(trials // 1000):
            rng = np.random.default_rng([7, chunk, len(name)])
            y = (rng.random((1000, 2000)) < theta).astype(float)
            p = judge_p(name, y, rng, theta)
            fit = ppi.classic(y[:, :40], p[:, :40], p[:, 40:])
            hit["ppi_py form, 40"].append(np.abs(fit.estimate - theta) <= 1.959964 * fit.se)
            r = rates.uniform_readings(y[:, :40], p[:, :40], p[:, 40:])
            hit["rates, 40"].append((r.low <= theta) & (theta <= r.high))
            for key, budget in (("active, ~40", 40.0), ("active, ~60", 60.0)):
                pi = inclusion_probabilities(p, budget)
                lab = rng.random(p.shape) < pi
                r = rates._clt(ppi.ipw(p, lab, y, pi), rates.ALPHA)  # no minimum applied
                ok = lab.sum(-1) >= (30 if budget == 40 else rates.MIN_ACTIVE)
                hit[key].append(((r.low <= theta) & (theta <= r.high))[ok])
        rows.append({"judge": name, **{k: float(np.concatenate(v).mean())
                                       for k, v in hit.items()}})
    return rows


# --- the two versions ------------------------------------------------------------------------

def versions(cell: dict, train: dict, l2: float) -> dict[str, dict[str, np.ndarray]]:
    """P(success), vote and truth of every cell run, per version: the untrained one, the
    trained one (heads and the ensemble's Platt map), and the trained heads' mean P without
    the map (the map, fitted on out-of-fold P of 240 runs, can hurt: docs/rates.md)."""
    from bench.active import committee_p, ensemble_map
    from judge.ensemble.version import Vote
    from judge.ensemble.vote import ModelVote, ensemble_p, vote

    def read(p3: np.ndarray, rule: Vote) -> tuple[np.ndarray, np.ndarray]:
        ps, votes = [], []
        for row in p3:
            mv = [ModelVote(str(i), 1.0, float(q)) for i, q in enumerate(row)]
            ps.append(ensemble_p(mv, rule)[1])
            votes.append(vote(mv, rule).success)
        return np.array(ps), np.array(votes)

    y = cell["success"].astype(float)
    out = {}
    p, v = read(cell["p_raw"], Vote())
    out["untrained"] = {"p": p, "vote": v, "y": y}
    xs = np.concatenate([train["x"], cell["x"]])
    ys = np.concatenate([train["success"], cell["success"]]).astype(float)
    fit = np.zeros(len(ys), bool)
    fit[: len(train["x"])] = True
    heads = committee_p(xs, fit, ys, l2)[~fit]
    p, v = read(heads, ensemble_map(xs, fit, ys, l2))
    out["trained"] = {"p": p, "vote": v, "y": y}
    p, v = read(heads, Vote())
    out["trained, no map"] = {"p": p, "vote": v, "y": y}
    return out


def synthetic(theta: float, k: float, n: int, seed: int) -> dict[str, np.ndarray]:
    """``n`` (P, truth) pairs of a calibrated judge, not a measurement of one: Y ~ Bernoulli(θ),
    P | Y ~ Beta(θk + Y, (1 − θ)k + 1 − Y), so P(Y = 1 | P) = P and Var(Y − P) = Var(Y)·k/(k+1)
    (the Monte-Carlo tests' judges): what a judge of that quality would save."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < theta).astype(float)
    p = np.where(y == 1, rng.beta(theta * k + 1, (1 - theta) * k, n),
                 rng.beta(theta * k, (1 - theta) * k + 1, n))
    return {"p": p, "vote": p > 0.5, "y": y}


# --- labels needed ---------------------------------------------------------------------------

def half_width(p: np.ndarray, y: np.ndarray, n: int, method: str, n_runs: int, trials: int,
               seed: int) -> dict:
    """Mean half-width (and coverage of the pairs' rate) of ``method`` with ``n`` labels in
    cells of ``n_runs``: the pairs themselves when ``n_runs`` is their number, else
    resampled with replacement per trial."""
    rng = np.random.default_rng(seed)
    if n_runs == len(p):
        idx = np.argsort(rng.random((trials, n_runs)), axis=1)  # a random order per trial
    else:
        idx = rng.integers(0, len(p), (trials, n_runs))
    f, t = p[idx], y[idx]
    if method == "rectified, active":
        pi = inclusion_probabilities(f, float(n))
        lab = rng.random(f.shape) < pi
        r = rates.active_readings(f, lab, t, pi)
    else:  # a uniform draw: the first n of a random order (or of an iid resample)
        r = rates.uniform_readings(t[:, :n], f[:, :n], f[:, n:],
                                   tune=method != "labels-only")
    has = ~np.isnan(r.low)
    theta = float(y.mean())
    half = np.where(has, (r.high - r.low) / 2, 0.5)  # no interval: as wide as it gets
    return {"n": n, "half_width": float(half.mean()), "with_interval": float(has.mean()),
            "coverage": float(((r.low <= theta) & (theta <= r.high))[has].mean())
            if has.any() else None}


def labels_needed(p: np.ndarray, y: np.ndarray, method: str, n_runs: int, target: float,
                  trials: int, seed: int) -> dict:
    """The fewest labels (bisection over 5…n_runs − 1, common random numbers) whose mean
    half-width is at most ``target``; None when even n_runs − 1 is not enough."""
    cache: dict[int, dict] = {}

    def at(n: int) -> dict:
        if n not in cache:
            cache[n] = half_width(p, y, n, method, n_runs, trials, seed)
        return cache[n]

    lo, hi = rates.MIN_LABELS, n_runs - 1
    if at(hi)["half_width"] > target:
        return {"labels": None, "curve": sorted(cache.values(), key=lambda r: r["n"])}
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if at(mid)["half_width"] <= target:
            hi = mid
        else:
            lo = mid
    return {"labels": hi, "at": at(hi), "curve": sorted(cache.values(), key=lambda r: r["n"])}


def curve(p: np.ndarray, y: np.ndarray, method: str, n_runs: int, trials: int, seed: int,
          points: list[int]) -> list[dict]:
    return [half_width(p, y, n, method, n_runs, trials, seed) for n in points if n < n_runs]


# --- the probes ----------------------------------------------------------------------------

def where_from(p: np.ndarray, y: np.ndarray, vote: np.ndarray, n_runs: int,
               target: float) -> dict:
    """The variances a saving comes from, and what the CLT predicts from them: labels-only
    needs z²·Var(Y)/h² labels; rectified (uniform, λ at its best for N → ∞) needs n with
    z²·(λ²·Var(f)/(N − n) + Var(Y − λf)/n) = h², and no n at all where the judged runs' own
    term z·λ·sd(f)/√N is already h."""
    z = 1.959963984540054
    var_y, var_f = float(y.var()), float(p.var())
    cov = float(np.mean((y - y.mean()) * (p - p.mean())))
    lam = min(1.0, max(0.0, cov / var_f)) if var_f > 1e-9 else 0.0  # a P that never moves
    var_r = float((y - lam * p).var())
    floor = z * lam * np.sqrt(var_f / n_runs)
    need = None
    for n in range(2, n_runs):
        if z * np.sqrt(lam**2 * var_f / (n_runs - n) + var_r / n) <= target:
            need = n
            break
    bins = np.minimum((p * 10).astype(int), 9)
    ece = sum(abs(float(y[bins == b].mean() - p[bins == b].mean())) * (bins == b).mean()
              for b in range(10) if (bins == b).any())
    return {"rate": float(y.mean()), "judge_only": float(vote.mean()), "ece": float(ece),
            "accuracy": float((vote == y.astype(bool)).mean()),
            "brier": float(np.mean((p - y) ** 2)), "var_y": var_y, "var_f": var_f,
            "lambda": lam, "var_rectifier": var_r, "variance_ratio": var_y / var_r,
            "judged_runs_floor": float(floor),
            "predicted_labels_only": int(np.ceil(z**2 * var_y / target**2)),
            "predicted_rectified": need}


def small_n_probe(p: np.ndarray, y: np.ndarray, n: int, trials: int, seed: int) -> dict:
    """Mean widths at ``n`` labels in a cell of the pairs: Clopper–Pearson and betting on
    the labels alone, against betting on the rectifier with λ and E f known (an oracle) and
    with λ predictable and E f bounded from the judged runs (what could be used)."""
    from bench.rates_betting import lower_bound, rectified_bounds, upper_bound

    rng = np.random.default_rng(seed)
    idx = np.argsort(rng.random((trials, len(p))), axis=1)
    f, t = p[idx], y[idx]
    yl, fl, fu = t[:, :n], f[:, :n], f[:, n:]
    cp = rates.exact_readings(yl, 0.05)
    bet = (lower_bound(yl, 0.0, 0.025, (0.0, 1.0)), upper_bound(yl, 1.0, 0.025, (0.0, 1.0)))
    oracle = rectified_bounds(yl, fl, fu, 0.05, lam=1.0, mean_f=float(p.mean()))
    usable = rectified_bounds(yl, fl, fu, 0.05)
    width = {"clopper-pearson (labels)": cp.high - cp.low, "betting (labels)": bet[1] - bet[0],
             "betting (rectifier, λ = 1 and E f known)": oracle[1] - oracle[0],
             "betting (rectifier, predictable λ, E f bounded)": usable[1] - usable[0]}
    return {"n": n, "cell": len(p), "mean_width": {k: float(v.mean()) for k, v in width.items()}}


# --- report --------------------------------------------------------------------------------

def tables(result: dict) -> str:
    lines = ["| version | cell (runs) | labels-only | rectified, uniform | rectified, active "
             "| labels-only ÷ rectified (uniform, active) |", "|---|---|---|---|---|---|"]
    for v, per in result["needed"].items():
        for cell, m in per.items():
            got = [m[k]["labels"] for k in METHODS]
            show = ["> " + cell if g is None else str(g) for g in got]
            ratio = ["–" if got[0] is None or g is None else f"{got[0] / g:.1f}×"
                     for g in got[1:]]
            lines.append(f"| {v} | {cell} | {' | '.join(show)} | {', '.join(ratio)} |")
    lines += ["", "| version | rate | judge-only | vote accuracy | Brier | ECE of P | Var(Y) | "
              "λ | Var(Y − λf) | Var ratio | judged runs' floor at 400 / 2000 | predicted "
              "labels-only / rectified at 2000 |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for v, pr in result["probe"].items():
        a, b = pr["400"], pr["2000"]
        lines.append(f"| {v} | {a['rate']:.3f} | {a['judge_only']:.3f} | {a['accuracy']:.3f} | "
                     f"{a['brier']:.3f} | {a['ece']:.3f} | {a['var_y']:.3f} | "
                     f"{a['lambda']:.2f} | "
                     f"{a['var_rectifier']:.3f} | {a['variance_ratio']:.2f} | "
                     f"{a['judged_runs_floor']:.3f} / {b['judged_runs_floor']:.3f} | "
                     f"{b['predicted_labels_only']} / {b['predicted_rectified']} |")
    small = result.get("small_n")
    if small:
        lines += ["", f"Mean 95 % width at {small['n']} labels in a cell of {small['cell']} "
                  "(trained version): " + "; ".join(f"{k} {v:.3f}"
                                                    for k, v in small["mean_width"].items())]
    return "\n".join(lines)


def plot(result: dict, path: Path) -> bool:
    try:
        import matplotlib
    except ImportError:
        say("rates: matplotlib not installed: no PNG")
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = list(next(iter(result["curves"].values())))
    fig, axes = plt.subplots(1, len(cells), figsize=(5 * len(cells), 4), dpi=80, sharey=True)
    styles = {"labels-only": "-", "rectified, uniform": "--", "rectified, active": ":"}
    colours = dict(zip(result["curves"], ("grey", "C0", "C1", "C2", "C3"), strict=False))
    for ax, cell in zip(np.atleast_1d(axes), cells, strict=True):
        labels_done = False
        for v, per in result["curves"].items():
            for method, pts in per[cell].items():
                if method == "labels-only" and labels_done:
                    continue  # the labels' interval does not depend on the judge
                if v == "untrained" and method != "labels-only":
                    continue  # its P does not move: the labels' own width
                labels_done |= method == "labels-only"
                ax.plot([q["n"] for q in pts], [q["half_width"] for q in pts],
                        styles[method], color="k" if method == "labels-only" else colours[v],
                        label="labels-only" if method == "labels-only" else f"{method} ({v})")
        ax.axhline(result["target"], color="grey", lw=0.8)
        ax.set_title(f"a cell of {cell} judged runs")
        ax.set_xlabel("labels")
        ax.set_xscale("log")
    np.atleast_1d(axes)[0].set_ylabel("mean 95 % half-width")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return True


def run(args: argparse.Namespace) -> dict:
    from bench.active import load_features

    t0 = time.perf_counter()
    out = Path(args.out)
    cell = load_features(Path(args.cell), args.judge, out)
    train = load_features(Path(args.train), args.judge, out)
    for feats in (cell, train):  # standardised hidden states, as bench.active fits them
        feats["x"] = feats["hidden"]
    both = np.concatenate([cell["x"], train["x"]])
    mu, sd = both.mean(0), both.std(0) + 1e-9
    cell["x"], train["x"] = (cell["x"] - mu) / sd, (train["x"] - mu) / sd
    vs = versions(cell, train, args.l2)
    rate = float(cell["success"].mean())
    for k in args.synthetic:  # marked as such in every table
        vs[f"synthetic, k = {k:g}"] = synthetic(rate, k, len(cell["x"]), 0)
    say(f"rates: {len(cell['x'])} cell runs, {len(train['x'])} training runs; versions in "
        f"{time.perf_counter() - t0:.0f} s")
    sizes = {str(len(cell["x"])): len(cell["x"]), "2000": 2000}
    points = [10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 400, 600, 900, 1300, 1999]
    result: dict = {"target": args.half_width, "trials": args.trials, "needed": {},
                    "curves": {}, "probe": {}}
    for v, d in vs.items():
        result["needed"][v], result["curves"][v] = {}, {}
        result["probe"][v] = {"400": where_from(d["p"], d["y"], d["vote"], sizes[next(iter(
            sizes))], args.half_width), "2000": where_from(d["p"], d["y"], d["vote"], 2000,
                                                           args.half_width)}
        for name, size in sizes.items():
            result["needed"][v][name] = {m: labels_needed(d["p"], d["y"], m, size,
                                                          args.half_width, args.trials, 0)
                                         for m in METHODS}
            result["curves"][v][name] = {m: curve(d["p"], d["y"], m, size, args.trials, 1,
                                                  points) for m in METHODS}
            say(f"rates: {v}, cell {name}: " + ", ".join(
                f"{m} {result['needed'][v][name][m]['labels']}" for m in METHODS))
    d = vs["trained"]
    result["small_n"] = small_n_probe(d["p"], d["y"], 20, args.trials, 2)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    out.mkdir(parents=True, exist_ok=True)
    (out / "rates.json").write_text(json.dumps(result, indent=1))
    if args.png:
        result["png"] = str(args.png) if plot(result, Path(args.png)) else None
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.rates", description=__doc__.split("\n")[0])
    ap.add_argument("--cell", help="bundles no version trained on")
    ap.add_argument("--train", help="bundles the trained version's heads fit")
    ap.add_argument("--probe-coverage", action="store_true",
                    help="only the coverage probe on drawn judges (no bundles needed)")
    ap.add_argument("--judge", default="tiny-vision-streams")
    ap.add_argument("--out", default="bench-out/rates", help="feature cache and rates.json")
    ap.add_argument("--trials", type=int, default=400, help="label draws per point")
    ap.add_argument("--half-width", type=float, default=0.05)
    ap.add_argument("--l2", type=float, default=1.0, help="the heads' L2 strength")
    ap.add_argument("--png", default=None)
    ap.add_argument("--synthetic", type=lambda v: [float(x) for x in v.split(",") if x],
                    default=[0.2, 0.1], help="k of calibrated synthetic judges to add "
                    "(Var(Y)/Var(Y − P) = (k + 1)/k); empty: none")
    args = ap.parse_args(argv)
    if args.probe_coverage:
        rows = coverage_probe()
        keys = list(rows[0])[1:]
        print("| judge | " + " | ".join(keys) + " |")
        print("|" + "---|" * (len(keys) + 1))
        for r in rows:
            print(f"| {r['judge']} | " + " | ".join(f"{r[k]:.3f}" for k in keys) + " |")
        return 0
    if not args.cell or not args.train:
        ap.error("--cell and --train are required (or --probe-coverage)")
    result = run(args)
    print(tables(result))
    say(f"rates: {result['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
