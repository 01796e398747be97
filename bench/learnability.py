"""Can one model learn the success question from what it is shown? A probe, not a trainer.

``python -m bench.learnability --db URL --judge VERSION [--model 1] [--last 12] [--n 60]
[--epochs 10] [--lr 3e-3] [--train-tasks T,… --test-tasks T,…]`` takes the first N labelled
runs VERSION judged, shows the model only the **last** ``--last`` question images of each
(the judge's images are time steps × cameras, so ``--last 1`` is the top camera at the end,
``--last 3`` every camera at the end) and no text lines, trains it on the success question
alone with per-example AdamW steps (70 % of the runs), and prints the loss and the train /
held-out accuracy after each epoch beside the base rate. It answers "is the evidence
reachable by this model at all": a model that cannot even fit its training runs is not
seeing the evidence (docs/judge-quality.md).

With ``--train-tasks`` the runs are those tasks' (70 % train, 30 % held out) and
``--test-tasks``' runs are scored too, none of them trained on: does what the model learnt
to see on one task carry to another with the same notion of success? The last epoch's
accuracy per true outcome (success, each failure class) closes the report.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--judge", default="tiny")
    ap.add_argument("--model", type=int, default=1, help="index of the model in the version")
    ap.add_argument("--last", type=int, default=12, help="question images kept, from the end")
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--train-tasks", default="", help="task ids (attribution) to train on")
    ap.add_argument("--test-tasks", default="", help="task ids only scored (with --train-tasks)")
    args = ap.parse_args(argv)
    train_tasks = [t for t in args.train_tasks.split(",") if t]
    test_tasks = [t for t in args.test_tasks.split(",") if t]
    if test_tasks and not train_tasks:
        ap.error("--test-tasks needs --train-tasks")

    import torch

    from judge.ensemble.judge import prepare
    from judge.ensemble.prompts import yes_no_requests
    from judge.ensemble.version import load_judge_version
    from judge.learn.train import labelled_runs
    from judge.ledgers.store import Ledger
    from models.registry import create_backend

    version = load_judge_version(args.judge)
    with Ledger.open(args.db) as ledger:
        pairs = labelled_runs(ledger, version.name)
    task = {run.run_id: run.attribution.task.id for run, _ in pairs}
    if train_tasks:
        known = sorted(set(task.values()))
        for t in train_tasks + test_tasks:
            if t not in known:
                ap.error(f"task {t!r}: no labelled run of it; tasks: {', '.join(known)}")
    chosen = [(r, lb) for r, lb in pairs if not train_tasks or task[r.run_id] in train_tasks]
    others = [(r, lb) for r, lb in pairs if task[r.run_id] in test_tasks]

    def asked(rows: list) -> list:
        out = []
        for run, label in rows:
            p = prepare(run.bundle_uri, version, run_id=run.run_id)
            success = yes_no_requests(p.frames[-args.last:], p.instruction, version)[1]
            outcome = "success" if label.success else (label.failure_class or "failure")
            out.append((success, 0 if label.success else 1, task[run.run_id], outcome))
        return out

    data = asked(chosen[: args.n])
    cut = int(0.7 * len(data))
    train, test = [d[:2] for d in data[:cut]], [d[:2] for d in data[cut:]]
    tested = asked(others)
    scored = {"held out": data[cut:]} | {t: [d for d in tested if d[2] == t] for t in test_tasks}
    backend = create_backend(version.models[args.model].spec())
    backend.load()
    torch.manual_seed(0)
    opt = torch.optim.AdamW(backend.model.parameters(), lr=args.lr)

    def accuracy(rows: list) -> float:
        with torch.inference_mode():
            return float(np.mean([int(torch.argmax(backend.choice_logits(r))) == t
                                  for r, t in rows]))

    print(f"{version.models[args.model].name}: {len(train)} train / {len(test)} held-out runs,"
          f" last {args.last} image(s); 'no success' share: train "
          f"{np.mean([t for _, t in train]):.3f}, held out {np.mean([t for _, t in test]):.3f}")
    t0 = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        backend.model.train()
        losses = []
        for i in np.random.default_rng(epoch).permutation(len(train)):
            req, target = train[i]
            loss = torch.nn.functional.cross_entropy(backend.choice_logits(req)[None],
                                                     torch.tensor([target]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        backend.model.eval()
        per_task = "".join(f"  {t} acc {accuracy([d[:2] for d in scored[t]]):.3f}"
                           for t in test_tasks)
        print(f"epoch {epoch:>2}  loss {np.mean(losses):.3f}  train acc {accuracy(train):.3f}  "
              f"held-out acc {accuracy(test):.3f}{per_task}  {time.perf_counter() - t0:.0f} s",
              flush=True)
    for name, rows in scored.items():
        by: dict[str, list] = {}
        for d in rows:
            by.setdefault(d[3], []).append(d[:2])
        print(f"{name} ({len(rows)}), right per true outcome: " + ", ".join(
            f"{o} {round(accuracy(r) * len(r))}/{len(r)}" for o, r in sorted(by.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
