"""Can one model learn the success question from what it is shown? A probe, not a trainer.

``python -m bench.learnability --db URL --judge VERSION [--model 1] [--last 12] [--n 60]
[--epochs 10] [--lr 3e-3]`` takes the first N labelled runs VERSION judged, shows the
model only the **last** ``--last`` question images of each (the judge's images are time
steps × cameras, so ``--last 1`` is the top camera at the end, ``--last 3`` every camera at
the end), trains it on the success question alone with per-example AdamW steps (70 % of
the runs), and prints the loss and the train / held-out accuracy after each epoch beside
the base rate. It answers "is the evidence reachable by this model at all": a model that
cannot even fit its training runs is not seeing the evidence (docs/judge-quality.md).
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
    args = ap.parse_args(argv)

    import torch

    from judge.ensemble.judge import prepare
    from judge.ensemble.prompts import yes_no_requests
    from judge.ensemble.version import load_judge_version
    from judge.learn.train import labelled_runs
    from judge.ledgers.store import Ledger
    from models.registry import create_backend

    version = load_judge_version(args.judge)
    with Ledger.open(args.db) as ledger:
        pairs = labelled_runs(ledger, version.name)[: args.n]
    data = []
    for run, label in pairs:
        p = prepare(run.bundle_uri, version, run_id=run.run_id)
        success = yes_no_requests(p.frames[-args.last:], p.instruction, version)[1]
        data.append((success, 0 if label.success else 1))
    cut = int(0.7 * len(data))
    train, test = data[:cut], data[cut:]
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
        print(f"epoch {epoch:>2}  loss {np.mean(losses):.3f}  train acc {accuracy(train):.3f}  "
              f"held-out acc {accuracy(test):.3f}  {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
