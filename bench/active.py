"""Active learning on physics rollouts: do the review queue's picks teach more per label?

``python -m bench.active --bundles DIR [--judge tiny-vision-streams] [--out bench-out/active]
[--labels 25,50,100,200] [--seeds 0,1,2] [--strategies committee,uncertainty,random]
[--initial 10] [--batch 5] [--l2 1.0] [--bootstrap 1000] [--png FILE]``

``DIR`` holds bundles with a ``truth.json`` each (``rcjudge sim``, docs/sim.md). Learning
curves of success accuracy and ECE on a fixed test part against the number of labels, one
per strategy of the queue (``judge.learn.select``) and seed.

What is trained per point. ``rcjudge train`` fine-tunes every weight of the three models
(about an hour on 2 cores for a thousand runs), so a curve of 36 trainings cannot use it.
What one label moves first is each model's answer head: the judge reads P(yes) from the
next-token logits of the answer tokens, a linear map of the model's final hidden state at
the answer position. So per point each of the three models' heads is refitted, from
scratch, as an L2-regularised logistic regression (``--l2`` on standardised inputs, Newton's
method) of the success label on that model's frozen final hidden state of the success
question (the input of its output layer; computed once per run and cached under
``--out``), and the three heads vote as the judge votes (``judge.ensemble.vote``: the
majority of hard votes, the confidence from their mean P(yes), an identity ensemble map).
Nothing else moves: the towers, the attempt and class questions stay as they are.

The loop, per strategy and seed: the test part is fixed (the seed groups that ``rcjudge
train``'s default split, split seed 0, puts in ``test``: ``judge.learn.train.assign_part``);
the rest is the pool. ``--initial`` pool runs drawn with the seed start every strategy of
that seed; then, until the largest ``--labels``, the heads are fitted, every unlabelled pool
run becomes a queue candidate with the three heads' P(success), and ``judge.learn.select
.rank`` picks the next ``--batch`` (the same code ``rcjudge review next`` ranks with; the
random strategy is seeded by the seed). Accuracy and ECE on the test part are recorded
after every batch; at each ``--labels`` point with a percentile bootstrap interval over the
test runs. The summary line says how many labels committee needs to reach random's
accuracy at the largest point (mean over seeds), and what share of labels that saves.

A probe closes the report: the ceiling (every pool run labelled: the vote and each head
alone, per task) and where each strategy's labels went (success share, runs per task).

Writes ``curves.json`` and (matplotlib) a PNG; prints the markdown table of
docs/judge-quality.md. The feature cache (per bundle) makes a second run take seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

STRATEGIES = ("committee", "uncertainty", "random")


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- features: each model's final hidden state on the success question -------------------

def hidden_features(bundles: list[Path], judge: str) -> dict[str, np.ndarray]:
    """Per run: truth, seed group, task, and each model's final hidden state (the input of its
    output layer) and raw P(success) on the success question, as the judge asks it."""
    import torch

    from judge.ensemble.judge import prepare
    from judge.ensemble.prompts import yes_no_requests
    from judge.ensemble.version import load_judge_version
    from judge.learn.train import seed_group
    from models.registry import create_backend

    version = load_judge_version(judge)
    prepared, truth = [], []
    t0 = time.perf_counter()
    for b in bundles:
        p = prepare(str(b), version, run_id=b.name)
        t = json.loads((b / "truth.json").read_text())
        a = p.attribution
        prepared.append((b.name, yes_no_requests(p.frames, p.instruction, version, p.sensors,
                                                 p.motion)[1]))
        truth.append((bool(t["success"]), seed_group(a.task.id, a.seed, b.name), a.task.id))
    say(f"active: prepared {len(bundles)} runs in {time.perf_counter() - t0:.0f} s")
    hidden, p_raw = [], []
    for entry in version.models:
        backend = create_backend(entry.spec())
        backend.load()
        seen: list = []
        hook = backend.model.get_output_embeddings().register_forward_hook(
            lambda _m, inp, _out, seen=seen: seen.append(inp[0][0, -1].detach().double().numpy()))
        t1 = time.perf_counter()
        hs, ps = [], []
        try:
            for _, req in prepared:
                seen.clear()
                with torch.inference_mode():
                    logits = backend.choice_logits(req).double()
                ps.append(float(torch.softmax(logits, 0)[0]))
                hs.append(seen[-1])
        finally:
            hook.remove()
            backend.close()
        say(f"active: {entry.name}: hidden states of {len(hs)} runs in "
            f"{time.perf_counter() - t1:.0f} s")
        hidden.append(np.stack(hs))
        p_raw.append(ps)
    return {"run_id": np.array([r for r, _ in prepared]),
            "success": np.array([s for s, _, _ in truth]),
            "group": np.array([g for _, g, _ in truth]),
            "task": np.array([t for _, _, t in truth]),
            "hidden": np.stack(hidden, axis=1),  # (n, 3, d)
            "p_raw": np.array(p_raw).T}  # (n, 3)


def load_features(bundles_dir: Path, judge: str, out: Path) -> dict[str, np.ndarray]:
    """:func:`hidden_features` of every bundle under ``bundles_dir``, in run-id order, cached
    in ``out`` per run (by bundle path): only bundles not cached yet are computed."""
    bundles = sorted(p.parent for p in bundles_dir.glob("*/truth.json"))
    if not bundles:
        raise SystemExit(f"--bundles {bundles_dir}: no bundle with a truth.json "
                         "(make them with `rcjudge sim`, docs/sim.md)")
    cache = out / f"features-{judge}.npz"
    have: dict[str, np.ndarray] = dict(np.load(cache, allow_pickle=False)) if cache.exists() else {}
    where = {str(p): i for i, p in enumerate(have.get("path", []))}
    missing = [b for b in bundles if str(b.resolve()) not in where]
    if missing:
        new = hidden_features(missing, judge)
        new["path"] = np.array([str(b.resolve()) for b in missing])
        have = new if not have else {k: np.concatenate([have[k], new[k]]) for k in new}
        out.mkdir(parents=True, exist_ok=True)
        np.savez(cache, **have)
        where = {p: i for i, p in enumerate(have["path"])}
    rows = np.array([where[str(b.resolve())] for b in bundles])
    return {k: v[rows] for k, v in have.items()}


# --- the heads and the loop ----------------------------------------------------------------

def fit_head(x: np.ndarray, y: np.ndarray, l2: float, iters: int = 50) -> np.ndarray:
    """L2-regularised logistic regression (bias all but unpenalised), fitted by the damped
    Newton of ``rcjudge calibrate`` (:func:`judge.learn.calibrate.newton_logistic`): (d + 1,)."""
    from judge.learn.calibrate import newton_logistic

    design = np.hstack([x, np.ones((len(x), 1))])
    pen = np.full(design.shape[1], l2)
    pen[-1] = 1e-6
    zero = np.zeros(design.shape[1])
    return newton_logistic(design, np.asarray(y, float), zero, zero, pen, iters)


def head_p(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.tanh(0.5 * (x @ w[:-1] + w[-1])))


def committee_p(xs: np.ndarray, labelled: np.ndarray, y: np.ndarray, l2: float) -> np.ndarray:
    """Each model's head fitted on the labelled runs, its P(success) on every run: (n, 3)."""
    return np.stack([head_p(xs[:, i], fit_head(xs[labelled, i], y[labelled], l2))
                     for i in range(xs.shape[1])], axis=1)


def ensemble_map(xs: np.ndarray, labelled: np.ndarray, y: np.ndarray, l2: float,
                 folds: int = 5):
    """The ensemble's success map (a Platt map on the heads' mean P, as ``rcjudge train``
    fits on its calibration part), fitted on out-of-fold means: each labelled run's mean
    comes from heads fitted without its fold. Identity with fewer than two runs a fold."""
    from judge.ensemble.version import Calibration, Platt, Vote
    from judge.learn.calibrate import fit_platt

    idx = np.flatnonzero(labelled)
    if len(idx) < 2 * folds:
        return Vote(calibration=Calibration(success=Platt()))
    oof = np.empty(len(idx))
    for k in range(folds):
        held = np.zeros(len(idx), bool)
        held[k::folds] = True
        fit = np.zeros(len(y), bool)
        fit[idx[~held]] = True
        oof[held] = committee_p(xs, fit, y, l2)[idx[held]].mean(1)
    return Vote(calibration=Calibration(success=fit_platt(oof, y[idx])))


def scores(p: np.ndarray, truth: np.ndarray, rule=None) -> tuple[np.ndarray, np.ndarray]:
    """The judge's vote (``rule``: its ensemble map) on three P(success) per run: (right?,
    confidence) per run."""
    from judge.ensemble.vote import ModelVote, vote

    results = [vote([ModelVote(str(i), 1.0, float(q)) for i, q in enumerate(row)], rule)
               for row in p]
    right = np.array([r.success == bool(t) for r, t in zip(results, truth, strict=True)])
    return right, np.array([r.success_confidence for r in results])


def candidates(ids: np.ndarray, p: np.ndarray, task: np.ndarray) -> list:
    """Queue candidates of the success question: the heads' P(success), attempt certain."""
    from judge.ensemble.vote import ModelVote, vote
    from judge.learn.select import Candidate

    out = []
    for rid, row, t in zip(ids, p, task, strict=True):
        r = vote([ModelVote(str(i), 1.0, float(q)) for i, q in enumerate(row)])
        out.append(Candidate(str(rid), str(t), "-", "-", (1.0, 1.0, 1.0),
                             tuple(float(q) for q in row), (None, None, None), 1.0,
                             r.success_confidence))
    return out


def curve(feats: dict, test: np.ndarray, strategy: str, seed: int, points: list[int],
          initial: int, batch: int, l2: float, resamples: int) -> dict:
    """One learning curve: accuracy and ECE on ``test`` after every batch of labels."""
    from judge.learn.metrics import bootstrap_interval, ece
    from judge.learn.select import rank

    xs, y, ids = feats["x"], feats["success"].astype(float), feats["run_id"]
    pool = np.flatnonzero(~test)
    rng = np.random.default_rng(seed)
    labelled = np.zeros(len(y), bool)
    labelled[rng.choice(pool, initial, replace=False)] = True
    index = {str(r): i for i, r in enumerate(ids)}
    steps, at = [], {}
    while True:
        p = committee_p(xs, labelled, y, l2)
        right, conf_raw = scores(p[test], y[test])
        _, conf = scores(p[test], y[test], ensemble_map(xs, labelled, y, l2))
        n = int(labelled.sum())
        steps.append({"labels": n, "accuracy": float(right.mean()),
                      "ece": float(ece(conf, right)), "ece_raw": float(ece(conf_raw, right))})
        if n in points:
            ci = bootstrap_interval(lambda idx, r=right: float(r[idx].mean()), len(right),
                                    resamples, seed=seed)
            at[n] = {**steps[-1], "accuracy_ci": None if ci is None else list(ci),
                     "positives": int(y[labelled].sum())}
        if n >= max(points):
            break
        left = np.flatnonzero(~labelled & ~test)
        want = min(batch, min(pt for pt in points if pt > n) - n, len(left))
        if want == 0:
            break
        picks = rank(candidates(ids[left], p[left], feats["task"][left]), strategy, want,
                     seed=seed)
        labelled[[index[pk.run_id] for pk in picks]] = True
    return {"strategy": strategy, "seed": seed, "steps": steps,
            "points": {str(k): v for k, v in sorted(at.items())},
            "labelled": [str(r) for r in ids[labelled]]}


def probe(feats: dict, test: np.ndarray, l2: float, curves: list[dict]) -> dict:
    """Why the curves look as they do: the ceiling (every pool run labelled: each head alone
    and their vote, per task) and what each strategy's final labels are (successes, tasks)."""
    xs, y, task = feats["x"], feats["success"].astype(float), feats["task"]
    p = committee_p(xs, ~test, y, l2)
    right, _ = scores(p[test], y[test])
    per_task = {str(t): {"n": int((task[test] == t).sum()),
                         "accuracy": float(right[task[test] == t].mean())}
                for t in sorted(set(task[test]))}
    index = {str(r): i for i, r in enumerate(feats["run_id"])}
    picked = {}
    for strategy in sorted({c["strategy"] for c in curves}):
        rows = [index[r] for c in curves if c["strategy"] == strategy for r in c["labelled"]]
        runs = len(rows) / len([c for c in curves if c["strategy"] == strategy])
        picked[strategy] = {"success_share": float(y[rows].mean()), "per_task": {
            str(t): round(float((task[rows] == t).sum()) / len(rows) * runs, 1)
            for t in sorted(set(task))}}
    return {"ceiling": {"labels": int((~test).sum()), "accuracy": float(right.mean()),
                        "per_model": [float(((p[test, i] > 0.5) == y[test]).mean())
                                      for i in range(p.shape[1])],
                        "per_task": per_task},
            "pool_success_share": float(y[~test].mean()), "picked": picked}


def labels_to_reach(steps: list[dict], target: float, held: bool = False) -> int | None:
    """The fewest labels at which ``steps``' accuracy reaches ``target`` (None: never);
    ``held``: from which it stays there at every later step."""
    for k, s in enumerate(steps):
        if s["accuracy"] >= target - 1e-12 and (
                not held or all(t["accuracy"] >= target - 1e-12 for t in steps[k:])):
            return s["labels"]
    return None


def mean_steps(curves: list[dict]) -> list[dict]:
    """The seeds' mean accuracy at each label count all of them recorded."""
    counts = sorted(set.intersection(*({s["labels"] for s in c["steps"]} for c in curves)))
    return [{"labels": n, "accuracy": float(np.mean([next(s["accuracy"] for s in c["steps"]
                                                          if s["labels"] == n)
                                                     for c in curves]))} for n in counts]


# --- report ---------------------------------------------------------------------------------

def table(result: dict) -> str:
    """Markdown: one row per label count, strategy and seed, then the seeds' mean."""
    lines = ["| labels | strategy | seed | success accuracy [95 % CI] | ECE | ECE, no ensemble "
             "map | successes labelled |", "|---|---|---|---|---|---|---|"]
    for n in result["points"]:
        for strategy in result["strategies"]:
            cs = [c for c in result["curves"] if c["strategy"] == strategy]
            for c in cs:
                pt = c["points"][str(n)]
                ci = pt["accuracy_ci"]
                lines.append(f"| {n} | {strategy} | {c['seed']} | {pt['accuracy']:.3f} "
                             f"[{ci[0]:.3f}, {ci[1]:.3f}] | {pt['ece']:.3f} | "
                             f"{pt['ece_raw']:.3f} | {pt['positives']} |")
            acc = [c["points"][str(n)]["accuracy"] for c in cs]
            e = [c["points"][str(n)]["ece"] for c in cs]
            raw = [c["points"][str(n)]["ece_raw"] for c in cs]
            lines.append(f"| {n} | **{strategy}** | mean | **{np.mean(acc):.3f}** "
                         f"(seeds {min(acc):.3f}–{max(acc):.3f}) | {np.mean(e):.3f} | "
                         f"{np.mean(raw):.3f} | |")
    return "\n".join(lines)


def plot(result: dict, path: Path) -> bool:
    """Accuracy and ECE against labels, mean over seeds with the seeds' range shaded."""
    try:
        import matplotlib
    except ImportError:
        say("active: matplotlib not installed: no PNG")
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), dpi=80)
    for strategy in result["strategies"]:
        cs = [c for c in result["curves"] if c["strategy"] == strategy]
        counts = [s["labels"] for s in mean_steps(cs)]
        for ax, key in zip(axes, ("accuracy", "ece"), strict=True):
            v = np.array([[next(s[key] for s in c["steps"] if s["labels"] == n)
                           for n in counts] for c in cs])
            line, = ax.plot(counts, v.mean(0), label=strategy)
            ax.fill_between(counts, v.min(0), v.max(0), color=line.get_color(), alpha=0.15)
    axes[0].axhline(result["majority_rate"], color="grey", ls=":", label="majority class")
    ceiling = result["probe"]["ceiling"]
    axes[0].axhline(ceiling["accuracy"], color="black", ls="--", lw=0.8,
                    label=f"all {ceiling['labels']} pool runs labelled")
    axes[0].set(xlabel="labels", ylabel="success accuracy (test part)", xscale="log")
    axes[1].set(xlabel="labels", ylabel="success ECE (test part)", xscale="log")
    for ax in axes:
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ticks = [result["initial"], *result["points"]]
        ax.set_xticks(ticks, [str(n) for n in ticks])
        ax.grid(alpha=0.3)
    axes[0].legend(loc="lower right", fontsize=8)
    fig.suptitle(f"{result['runs']['pool']} pool / {result['runs']['test']} test runs, "
                 f"{len(result['seeds'])} seeds (mean, seeds' range shaded)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return True


def run(args: argparse.Namespace) -> dict:
    from judge.learn.train import TrainConfig, assign_part

    t0 = time.perf_counter()
    out = Path(args.out)
    feats = load_features(Path(args.bundles), args.judge, out)
    h = feats["hidden"]
    feats["x"] = (h - h.mean(0)) / (h.std(0) + 1e-9)  # standardised per model and dimension
    cfg = TrainConfig()
    test = np.array([assign_part(str(g), 0, cfg) == "test" for g in feats["group"]])
    points = sorted(args.labels)
    if (~test).sum() < max(points):
        raise SystemExit(f"--labels {max(points)}: the pool holds {(~test).sum()} runs")
    curves = []
    for seed in args.seeds:
        for strategy in args.strategies:
            c = curve(feats, test, strategy, seed, points, args.initial, args.batch, args.l2,
                      args.bootstrap)
            say(f"active: {strategy} seed {seed}: " + ", ".join(
                f"{n} {c['points'][str(n)]['accuracy']:.3f}" for n in points))
            curves.append(c)
    y = feats["success"]
    result = {"judge": args.judge, "bundles": str(args.bundles), "points": points,
              "seeds": args.seeds, "strategies": args.strategies, "initial": args.initial,
              "batch": args.batch, "l2": args.l2,
              "runs": {"pool": int((~test).sum()), "test": int(test.sum())},
              "test_success_rate": float(y[test].mean()),
              "majority_rate": float(max(y[test].mean(), 1 - y[test].mean())),
              "curves": curves}
    if "random" in args.strategies:
        target = float(np.mean([c["points"][str(points[-1])]["accuracy"]
                                for c in curves if c["strategy"] == "random"]))
        result["random_final_accuracy"] = target
        result["labels_to_reach_random_final"] = {}
        for strategy in args.strategies:
            mean = mean_steps([c for c in curves if c["strategy"] == strategy])
            result["labels_to_reach_random_final"][strategy] = {
                "first": labels_to_reach(mean, target),
                "held": labels_to_reach(mean, target, held=True)}
    result["mean_accuracy_over_steps"] = {
        s: float(np.mean([x["accuracy"] for x in mean_steps(
            [c for c in curves if c["strategy"] == s])])) for s in args.strategies}
    result["probe"] = probe(feats, test, args.l2, curves)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    out.mkdir(parents=True, exist_ok=True)
    (out / "curves.json").write_text(json.dumps(result, indent=1) + "\n")
    if args.png:
        result["png"] = str(args.png) if plot(result, Path(args.png)) else None
    return result


def summary(result: dict) -> str:
    lines = [f"{result['runs']['pool']} pool runs, {result['runs']['test']} test runs "
             f"(success share {result['test_success_rate']:.3f}, majority class "
             f"{result['majority_rate']:.3f}); {result['seconds']} s"]
    lines.append(f"mean accuracy over every step from {result['initial']} to "
                 f"{result['points'][-1]} labels (the area under the curve, per step): "
                 + ", ".join(f"{k} {v:.3f}" for k, v in result["mean_accuracy_over_steps"].items()))
    c = result["probe"]["ceiling"]
    lines.append(f"ceiling, all {c['labels']} pool runs labelled: {c['accuracy']:.3f} (heads "
                 "alone " + " / ".join(f"{a:.3f}" for a in c["per_model"]) + "); per task "
                 + ", ".join(f"{t} {v['accuracy']:.3f} ({v['n']})"
                             for t, v in c["per_task"].items()))
    lines.append(f"final labels, mean per seed (pool success share "
                 f"{result['probe']['pool_success_share']:.3f}):")
    for strategy, v in result["probe"]["picked"].items():
        lines.append(f"  {strategy}: success share {v['success_share']:.3f}; " + ", ".join(
            f"{t} {k:g}" for t, k in v["per_task"].items()))
    if "random_final_accuracy" in result:
        final = result["points"][-1]
        lines.append(f"random's mean accuracy at {final} labels: "
                     f"{result['random_final_accuracy']:.3f}; the seeds' mean curve of each "
                     "strategy reaches it first / for good at:")
        for strategy, need in result["labels_to_reach_random_final"].items():
            said = [("never" if n is None else f"{n} labels ({1 - n / final:.0%} fewer)")
                    for n in (need["first"], need["held"])]
            lines.append(f"  {strategy}: {said[0]} / {said[1]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundles", required=True, help="bundles with truth.json (rcjudge sim)")
    ap.add_argument("--judge", default="tiny-vision-streams")
    ap.add_argument("--out", default="bench-out/active", help="feature cache and curves.json")
    ap.add_argument("--labels", type=lambda s: [int(x) for x in s.split(",")],
                    default=[25, 50, 100, 200])
    ap.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[0, 1, 2])
    ap.add_argument("--strategies", type=lambda s: s.split(","), default=list(STRATEGIES))
    ap.add_argument("--initial", type=int, default=10, help="random labels every curve starts "
                    "from")
    ap.add_argument("--batch", type=int, default=5, help="labels picked between refits")
    ap.add_argument("--l2", type=float, default=1.0, help="L2 strength of the heads")
    ap.add_argument("--bootstrap", type=int, default=1000, help="resamples of the intervals")
    ap.add_argument("--png", help="write the learning curves here (needs matplotlib)")
    args = ap.parse_args(argv)
    unknown = [s for s in args.strategies if s not in ("committee", "uncertainty", "random",
                                                       "coverage")]
    if unknown:
        ap.error(f"--strategies: unknown {', '.join(unknown)}")
    if args.initial < 2 or args.initial > min(args.labels):
        ap.error(f"--initial {args.initial}: between 2 and the smallest --labels")
    result = run(args)
    print(table(result))
    print(summary(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
